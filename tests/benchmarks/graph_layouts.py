"""The layered-layout candidates for the graph picture, side by side (issue 31):
Graphviz `dot` (as the product runs it: a child process on DOT text, `-Tplain`),
igraph's `layout_sugiyama` and grandalf's `SugiyamaLayout`, on the same inputs
(core/graph_layout.layout_input of real levels): time, edge crossings, size.

    python tests/benchmarks/graph_layouts.py [--toy T.pt2] [--skip-slow] [--png-dir DIR]

Inputs: the toy decoder's top level and its `decoder.transformer` level, one GPT-2
block flat (every node of `h.0` a box), and a 10,000-node flat program (the toy
decoder's nodes repeated, bench_lean.build_program). Crossings are counted the
same way for all: each edge, extended to its boxes' centres, sampled at every
layer's centre line along its route (curves sampled), inversions between
consecutive layers.
--png-dir draws each candidate's picture (boxes and routes, PySide6) to look at.
"""

from __future__ import annotations

import argparse
import bisect
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from inspector.core.graph_layout import (  # noqa: E402
    LayoutInput, LevelLayout, Placed, Route, bezier_from_polyline, layout_input,
    layout_with_dot, polyline)

SLOW_LIMIT_S = 300.0


# --- candidates -----------------------------------------------------------------------

def layout_igraph(inp: LayoutInput) -> LevelLayout:
    """igraph's Sugiyama: points on a grid (unit gaps); x scaled by the widest box of
    the level, y by the tallest (it knows no box sizes)."""
    import igraph

    start = time.perf_counter()
    g = igraph.Graph(n=len(inp.ids), edges=inp.edges, directed=True)
    layout = g.layout_sugiyama(maxiter=100)
    coords = layout.coords
    max_w = max(w for w, _ in inp.sizes) + 18
    max_h = max(h for _, h in inp.sizes) + 32
    boxes = {}
    for i, (x, y) in enumerate(coords[:len(inp.ids)]):
        w, h = inp.sizes[i]
        boxes[inp.ids[i]] = Placed(inp.ids[i], x * max_w - w / 2, y * max_h - h / 2, w, h)
    out: list[Route] = []
    ctrl = getattr(layout, "edge_routing", None) or []
    for k, (s, t) in enumerate(inp.edges):
        a, b = boxes[inp.ids[s]], boxes[inp.ids[t]]
        pts = [(a.x + a.w / 2, a.y + a.h)]
        if ctrl and k < len(ctrl):
            pts += [(x * max_w, y * max_h) for x, y in ctrl[k]]
        pts.append((b.x + b.w / 2, b.y))
        out.append(Route(inp.ids[s], inp.ids[t], bezier_from_polyline(pts)))
    seconds = time.perf_counter() - start
    return _framed(boxes, out, seconds)


def layout_grandalf(inp: LayoutInput) -> LevelLayout:
    """grandalf's Sugiyama (pure Python), with the boxes' sizes; routes through its
    dummy vertices."""
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout
    from grandalf.routing import route_with_lines

    class View:
        def __init__(self, w: float, h: float) -> None:
            self.w, self.h, self.xy = w, h, (0.0, 0.0)

    start = time.perf_counter()
    vs = [Vertex(i) for i in range(len(inp.ids))]
    for v, (w, h) in zip(vs, inp.sizes):
        v.view = View(w, h)
    es = [Edge(vs[s], vs[t]) for s, t in inp.edges]
    for e in es:
        e.view = type("EV", (), {"setpath": lambda self, p: setattr(self, "pts", p)})()
    g = Graph(vs, es)
    boxes: dict[str, Placed] = {}
    out: list[Route] = []
    for comp in g.C:
        sug = SugiyamaLayout(comp)
        sug.xspace, sug.yspace = 18, 32
        sug.route_edge = route_with_lines
        roots = [v for v in comp.sV if len(v.e_in()) == 0]
        sug.init_all(roots=roots or None)
        sug.draw(3)
    # components are laid out on their own at the origin: place them side by side
    offset = 0.0
    for comp in g.C:
        xs = [v.view.xy[0] - v.view.w / 2 for v in comp.sV]
        xe = [v.view.xy[0] + v.view.w / 2 for v in comp.sV]
        shift = offset - min(xs)
        for v in comp.sV:
            w, h = v.view.w, v.view.h
            boxes[inp.ids[v.data]] = Placed(inp.ids[v.data], v.view.xy[0] - w / 2 + shift,
                                            v.view.xy[1] - h / 2, w, h)
        for e in comp.sE:
            pts = [(x + shift, y) for x, y in getattr(e.view, "pts", [])]
            pts = bezier_from_polyline(pts)
            out.append(Route(inp.ids[e.v[0].data], inp.ids[e.v[1].data], pts))
        offset += max(xe) - min(xs) + 18
    seconds = time.perf_counter() - start
    return _framed(boxes, out, seconds)


def _framed(boxes: dict[str, Placed], routes: list[Route], seconds: float) -> LevelLayout:
    """Shift to the origin, measure the frame."""
    x0 = min(b.x for b in boxes.values())
    y0 = min(b.y for b in boxes.values())
    for b in boxes.values():
        b.x -= x0
        b.y -= y0
    for r in routes:
        r.points = [(x - x0, y - y0) for x, y in r.points]
        r.back = boxes[r.dst].y < boxes[r.src].y + boxes[r.src].h
    w = max(b.x + b.w for b in boxes.values())
    h = max(b.y + b.h for b in boxes.values())
    return LevelLayout(w, h, boxes, routes, seconds)


CANDIDATES = {"dot": layout_with_dot, "igraph": layout_igraph, "grandalf": layout_grandalf}


# --- measures -------------------------------------------------------------------------

def crossings(layout: LevelLayout) -> int:
    """Edge crossings between consecutive layers (the boxes' distinct centre heights)."""
    ys = sorted({round(b.y + b.h / 2, 1) for b in layout.boxes.values()})
    samples: list[dict[int, float]] = [dict() for _ in ys]
    for k, r in enumerate(layout.routes):
        # from the source's centre to the target's: every edge spans the layers' centre
        # lines it crosses, whichever side of a box an engine ends it on
        a, b = layout.boxes[r.src], layout.boxes[r.dst]
        pts = ([(a.x + a.w / 2, a.y + a.h / 2)] + polyline(r.points)
               + [(b.x + b.w / 2, b.y + b.h / 2)])
        if len(pts) < 2:
            continue
        lo, hi = min(p[1] for p in pts), max(p[1] for p in pts)
        for j in range(bisect.bisect_left(ys, lo), bisect.bisect_right(ys, hi)):
            x = _x_at(pts, ys[j])
            if x is not None:
                samples[j][k] = x
    total = 0
    for j in range(len(ys) - 1):
        a, b = samples[j], samples[j + 1]
        both = [(a[k], b[k]) for k in a.keys() & b.keys()]
        both.sort()
        total += _inversions([x for _, x in both])
    return total


def _x_at(pts: list[tuple[float, float]], y: float) -> float | None:
    for (x1, y1), (x2, y2) in zip(pts, pts[1:]):
        if min(y1, y2) <= y <= max(y1, y2):
            return x1 if y1 == y2 else x1 + (x2 - x1) * (y - y1) / (y2 - y1)
    return None


def _inversions(xs: list[float]) -> int:
    if len(xs) < 2:
        return 0
    mid = len(xs) // 2
    left, right = xs[:mid], xs[mid:]
    count = _inversions(left) + _inversions(right)
    left.sort()
    right.sort()
    i = 0
    for x in right:
        i = bisect.bisect_right(left, x)
        count += len(left) - i
    return count


def overlaps(layout: LevelLayout) -> int:
    bs = sorted(layout.boxes.values(), key=lambda b: b.x)
    n = 0
    for i, a in enumerate(bs):
        for b in bs[i + 1:]:
            if b.x >= a.x + a.w:
                break
            if b.y < a.y + a.h and a.y < b.y + b.h:
                n += 1
    return n


# --- inputs ---------------------------------------------------------------------------

def inputs(toy: Path, tmp: Path) -> dict[str, LayoutInput]:
    from bench_lean import build_program

    from inspector.core.archive import open_archive
    from inspector.core.graph_model import GraphModel

    out = {}
    with open_archive(toy) as ar:
        model = GraphModel(ar.program("decoder"))
        out["toy top level"] = layout_input(model.level(""))
        out["toy decoder.transformer"] = layout_input(model.level("decoder.transformer"))
        out["GPT-2 block, flat"] = layout_input(model.level("decoder.transformer.h.0", flat=True))
    big = tmp / "10k.pt2"
    build_program(toy, big, 10_000)
    with open_archive(big) as ar:
        out["10k nodes, flat"] = layout_input(GraphModel(ar.program("decoder")).level("", flat=True))
    return out


def draw(layout: LevelLayout, path: Path, title: str) -> None:
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QPen

    scale = min(1.0, 1600 / max(layout.width, 1), 4000 / max(layout.height, 1))
    img = QImage(int(layout.width * scale) + 20, int(layout.height * scale) + 40,
                 QImage.Format_RGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    p.setRenderHint(QPainter.Antialiasing)
    p.drawText(10, 15, title)
    p.translate(10, 30)
    p.scale(scale, scale)
    p.setPen(QPen(QColor("#888"), 1))
    for r in layout.routes:
        path_ = QPainterPath(QPointF(*r.points[0]))
        pts = r.points
        for k in range(1, len(pts) - 2, 3):
            path_.cubicTo(QPointF(*pts[k]), QPointF(*pts[k + 1]), QPointF(*pts[k + 2]))
        p.drawPath(path_)
    p.setPen(QPen(QColor("#246"), 1))
    for b in layout.boxes.values():
        p.fillRect(QRectF(b.x, b.y, b.w, b.h), QColor("#dde8f4"))
        p.drawRect(QRectF(b.x, b.y, b.w, b.h))
    p.end()
    img.save(str(path))
    del Qt


def _cpu() -> float:
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toy", type=Path)
    ap.add_argument("--skip-slow", action="store_true", help="no grandalf on the 10k program")
    ap.add_argument("--only", help="only the inputs whose label holds this text")
    ap.add_argument("--png-dir", type=Path)
    args = ap.parse_args()
    toy = args.toy or ROOT / "resources" / "demo" / "toy-tiny.pt2"
    with tempfile.TemporaryDirectory() as tmp:
        cases = inputs(toy, Path(tmp))
    if args.png_dir:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtGui import QGuiApplication
        app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841
        args.png_dir.mkdir(parents=True, exist_ok=True)
    print(f"{'input':26} {'boxes':>6} {'edges':>6} | {'engine':9} {'CPU s':>8} "
          f"{'crossings':>9} {'overlaps':>8} {'back':>5} {'size (px)':>14}")
    for label, inp in cases.items():
        if args.only and args.only not in label:
            continue
        for name, engine in CANDIDATES.items():
            if args.skip_slow and name == "grandalf" and len(inp.ids) > 2000:
                print(f"{label:26} {len(inp.ids):6} {len(inp.edges):6} | {name:9} skipped")
                continue
            best = None
            for _ in range(1 if len(inp.ids) > 2000 else 3):
                c0 = _cpu()
                lay = engine(inp)
                lay.seconds = _cpu() - c0  # CPU, dot's child included: load inflates wall
                best = lay if best is None or lay.seconds < best.seconds else best
            assert best is not None
            back = sum(r.back for r in best.routes)
            print(f"{label:26} {len(inp.ids):6} {len(inp.edges):6} | {name:9} "
                  f"{best.seconds:8.3f} {crossings(best):9} {overlaps(best):8} {back:5} "
                  f"{best.width:7.0f}x{best.height:<6.0f}", flush=True)
            if args.png_dir:
                draw(best, args.png_dir / f"{label.replace(' ', '_').replace(',', '')}-{name}.png",
                     f"{label} — {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
