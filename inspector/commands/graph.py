"""`pt2-inspector graph FILE [--program NAME] [--graph SUB] [--module PATH] [--depth N]
(--svg OUT.svg | --png OUT.png | --json)`.

The dataflow picture of one module of a program, as the window's Graph view lays it
out (core/graph_model.py, graph_layout.py, graph_picture.py): the module's own nodes,
each child module one box, `--depth N` levels of modules open. Reads the zip and the
JSON only (never torch); lays out with Graphviz `dot`. The SVG or PNG is written
atomically; `--json` prints boxes (id, kind, x, y, w, h, ...) and edges (from, to,
points: cubic Bezier control points) for scripts and tests.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from inspector.commands.output import write_json
from inspector.core.errors import InspectorError

NAME = "graph"
HELP = "draw the dataflow of a program or one of its modules (SVG, PNG or JSON boxes and edges)"


class GraphCommandError(InspectorError):
    """A bad option or output path of `graph`."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("--program", metavar="NAME", help="the program (default: the first one)")
    parser.add_argument("--graph", metavar="SUB", default="",
                        help="a control-flow subgraph of the program (true_graph_0, true_graph_0.false_graph_0 "
                        "for one inside it, ...)")
    parser.add_argument("--module", metavar="PATH", default="",
                        help="the module to draw, e.g. decoder.transformer.h.0 (default: all)")
    parser.add_argument("--depth", metavar="N", type=int, default=1,
                        help="levels of modules shown open (1: children are boxes; default 1)")
    out = parser.add_mutually_exclusive_group(required=True)
    out.add_argument("--svg", metavar="OUT.svg", help="write the picture as SVG")
    out.add_argument("--png", metavar="OUT.png", help="write the picture as PNG")
    out.add_argument("--json", action="store_true", help="print boxes and edges as JSON")


def check_output(path: str, suffix: str, source: Path) -> Path:
    """Refuse what would surprise: a wrong suffix, a folder, a missing or read-only
    folder, the input archive itself."""
    out = Path(path)
    if out.suffix.lower() != suffix:
        raise GraphCommandError(f"output {str(out)!r} must end in {suffix}")
    if out.is_dir():
        raise GraphCommandError(f"output {str(out)!r} is a folder")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise GraphCommandError(f"cannot write {str(out)!r} (folder {str(parent)!r} does not exist)")
    if not os.access(parent, os.W_OK):
        raise GraphCommandError(f"cannot write {str(out)!r} (folder {str(parent)!r} is not writable)")
    same = out.exists() and source.exists()
    if same:
        with contextlib.suppress(OSError):
            same = os.path.samefile(out, source)
    if same:
        raise GraphCommandError(f"output {str(out)!r} is the input archive; choose another name")
    return out


def run(args: argparse.Namespace) -> int:
    from inspector.core.archive import open_archive
    from inspector.core.graph_model import GraphModel
    from inspector.core.graph_picture import GraphPicture
    from inspector.core.listing import render_listing

    if args.depth < 1:
        raise GraphCommandError(f"--depth {args.depth} is not a depth (1 or more)")
    source = Path(args.file)
    target = (check_output(args.svg, ".svg", source) if args.svg else
              check_output(args.png, ".png", source) if args.png else None)
    with open_archive(source) as archive:
        names = archive.program_names
        if not names:
            raise GraphCommandError(f"{source} holds no program to draw")
        name = args.program or names[0]
        program = archive.program(name)  # a clear error for an unknown name
    from inspector.core.graph_model import graph_paths

    graphs = list(graph_paths(program))
    if args.graph not in graphs:
        raise GraphCommandError(f"program {name!r} has no subgraph {args.graph!r} "
                                f"(it has: {', '.join(g for g in graphs if g) or 'none'})")
    listing = render_listing(program)
    model = GraphModel(program, args.graph, listing.printed_name)
    if args.module and args.module not in model.modules:
        near = sorted(p for p in model.modules if args.module in p)[:5]
        raise GraphCommandError(f"no module {args.module!r} in program {name!r}"
                                + (f" (did you mean {', '.join(near)}?)" if near else
                                   " (see the module tree: `pt2-inspector info`)"))
    painter = GraphPicture(model)
    pic = painter.picture(args.module, painter.opened_to_depth(args.module, args.depth))
    from inspector.core.graph_svg import picture_dict, picture_svg

    if args.json:
        doc = picture_dict(pic)
        doc["program"] = name
        write_json(doc)
        return 0
    title = f"{name} {args.module or '(top level)'}"
    svg = picture_svg(pic, title)
    data = svg.encode() if args.svg else svg_to_png(svg)
    from inspector.core.atomic import atomic_file

    assert target is not None
    try:
        with atomic_file(target) as (fp, writer):
            fp.write(data)
            writer.commit()
    except OSError as exc:
        raise GraphCommandError(f"cannot write {str(target)!r} ({exc.strerror or exc})") from None
    sys.stdout.write(f"wrote {target} ({len(pic.boxes)} boxes, {len(pic.edges)} edges, "
                     f"{len(data) / 1024:.0f} KB)\n")
    return 0


def svg_to_png(svg: str) -> bytes:
    """The SVG rendered by Qt's SVG renderer (offscreen: no display needed)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(["pt2-inspector"])  # noqa: F841
    renderer = QSvgRenderer(QByteArray(svg.encode()))
    size = renderer.defaultSize()
    scale = min(1.0, 16000 / max(size.width(), size.height(), 1))  # a PNG has limits
    image = QImage(max(1, int(size.width() * scale)), max(1, int(size.height() * scale)),
                   QImage.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.Antialiasing)
    renderer.render(painter)
    painter.end()
    buf = QBuffer()
    buf.open(QIODevice.WriteOnly)
    image.save(buf, "PNG")
    return bytes(buf.data())
