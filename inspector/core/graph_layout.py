"""Where the boxes of a graph level go: a layered (Sugiyama) layout by Graphviz `dot`.

Chosen by measurement against igraph's and grandalf's Sugiyama layouts
(docs/ARCHITECTURE.md, "Graph picture"; tests/benchmarks/bench_graph.py --compare).
`dot` is run as a child process on a DOT text we write (numbered node names,
sizes in inches, no text from the file), and its `-Tplain` answer is read back:
positions and each edge's spline control points. Flow is top to bottom: an edge
leaves its source's bottom side and enters its target's top side.

Sizes are estimated from the text a box shows (a fixed character width), so the
CLI and the window lay out the same picture without a font.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field

from inspector.core.errors import InspectorError
from inspector.core.graph_model import INPUT, MODULE, NODE, OUTPUT, SUBGRAPH, Box, Level

CHAR_W = 7.0  # px per character of a label (the window's 9 pt sans, about)
LINE_H = 15.0
PAD_X, PAD_Y = 10.0, 5.0
MIN_W = 48.0
DPI = 72.0  # dot's points per inch
RANK_SEP = 0.45  # inches between layers
NODE_SEP = 0.25  # inches between boxes of a layer
# a dot run that takes longer than this is killed: a level that big is not drawn whole
DOT_TIMEOUT_S = 120.0


class LayoutError(InspectorError):
    """dot is missing or failed on a level."""


@dataclass
class LayoutInput:
    """What the layout engine sees of a level: boxes with sizes, edges between them."""

    ids: list[str]
    sizes: list[tuple[float, float]]  # (w, h) px
    edges: list[tuple[int, int]]  # (source index, target index), no duplicates, no loops
    # box id -> the weights (parameter/buffer inputs) folded into it
    weights: dict[str, list[str]] = field(default_factory=dict)

    def key(self) -> tuple:
        """The content a layout depends on: equal keys, equal layouts."""
        return (tuple(self.ids), tuple(self.sizes), tuple(self.edges))


@dataclass
class Placed:
    id: str
    x: float  # top-left, px, y downwards
    y: float
    w: float
    h: float


@dataclass
class Route:
    src: str
    dst: str
    points: list[tuple[float, float]]  # cubic Bezier control points: p0, (c1, c2, p)...
    back: bool = False  # drawn against the flow: it closes a cycle between collapsed groups


@dataclass
class LevelLayout:
    width: float
    height: float
    boxes: dict[str, Placed]
    routes: list[Route]
    seconds: float = 0.0  # the engine's time


def box_size(box: Box) -> tuple[float, float]:
    """A box's size from its text: the label, then the detail line under it."""
    lines = [box.label] + ([box.detail] if box.detail else [])
    width = max(len(t) for t in lines) * CHAR_W + 2 * PAD_X
    if box.kind in (INPUT, OUTPUT):
        return max(MIN_W, width), LINE_H * len(lines) + 2 * PAD_Y
    extra = 4.0 if box.kind in (MODULE, SUBGRAPH) else 0.0
    return max(MIN_W, width), LINE_H * len(lines) + 2 * PAD_Y + extra


def layout_input(level: Level, sizes: dict[str, tuple[float, float]] | None = None
                 ) -> LayoutInput:
    """The level's boxes and edges as the engine sees them: weights folded into their
    readers (noted in `weights`), an expanded child at the size given in `sizes`."""
    sizes = sizes or {}
    ids: list[str] = []
    dims: list[tuple[float, float]] = []
    index: dict[str, int] = {}
    for box in level.boxes.values():
        if box.weight:
            continue
        index[box.id] = len(ids)
        ids.append(box.id)
        dims.append(sizes.get(box.id) or box_size(box))
    edges: list[tuple[int, int]] = []
    weights: dict[str, list[str]] = {}
    for e in level.edges:
        src, dst = index.get(e.src), index.get(e.dst)
        if src is None:
            if level.boxes[e.src].weight and dst is not None:
                weights.setdefault(e.dst, []).extend(e.values)
            continue
        if dst is not None and src != dst:
            edges.append((src, dst))
    return LayoutInput(ids, dims, edges, weights)


# --- the engine: dot ------------------------------------------------------------------

def dot_available() -> bool:
    return shutil.which("dot") is not None


def dot_text(inp: LayoutInput) -> str:
    """The DOT program for a level: numbered nodes (no text from the file), fixed sizes."""
    out = ["digraph G {", f"graph [rankdir=TB, ranksep={RANK_SEP}, nodesep={NODE_SEP}, "
           "splines=spline];", "node [shape=box, fixedsize=true, label=\"\"];",
           "edge [tailport=s, headport=n, arrowhead=none];"]
    for i, (w, h) in enumerate(inp.sizes):
        out.append(f"n{i} [width={w / DPI:.4f}, height={h / DPI:.4f}];")
    for s, t in inp.edges:
        out.append(f"n{s} -> n{t};")
    out.append("}")
    return "\n".join(out)


def layout_with_dot(inp: LayoutInput) -> LevelLayout:
    """Lay a level out with `dot -Tplain`."""
    import time

    if not inp.ids:
        return LevelLayout(0.0, 0.0, {}, [])
    exe = shutil.which("dot")
    if exe is None:
        raise LayoutError("cannot lay out the graph (Graphviz's `dot` is not installed: "
                          "install the graphviz package)")
    start = time.perf_counter()
    try:
        proc = subprocess.run([exe, "-Tplain"], input=dot_text(inp).encode(),
                              capture_output=True, timeout=DOT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise LayoutError(f"cannot lay out the graph (dot took over {DOT_TIMEOUT_S:.0f} s "
                          f"on {len(inp.ids):,} boxes: pick a module with --module)") from None
    if proc.returncode != 0:
        raise LayoutError("cannot lay out the graph (dot failed: "
                          f"{proc.stderr.decode(errors='replace').strip()[:200]})")
    layout = parse_plain(proc.stdout.decode(), inp)
    layout.seconds = time.perf_counter() - start
    return layout


def parse_plain(text: str, inp: LayoutInput) -> LevelLayout:
    """dot's `-Tplain` (inches, y upwards, centres) -> px, y downwards, top-left corners."""
    boxes: dict[str, Placed] = {}
    routes: list[Route] = []
    height = width = 0.0
    centre_y: dict[int, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "graph":
            width, height = float(parts[2]) * DPI, float(parts[3]) * DPI
        elif parts[0] == "node":
            i = int(parts[1][1:])
            w, h = inp.sizes[i]
            cx, cy = float(parts[2]) * DPI, height - float(parts[3]) * DPI
            centre_y[i] = cy
            boxes[inp.ids[i]] = Placed(inp.ids[i], cx - w / 2, cy - h / 2, w, h)
        elif parts[0] == "edge":
            s, t, n = int(parts[1][1:]), int(parts[2][1:]), int(parts[3])
            pts = [(float(parts[4 + 2 * k]) * DPI, height - float(parts[5 + 2 * k]) * DPI)
                   for k in range(n)]
            routes.append(Route(inp.ids[s], inp.ids[t], pts))
    for r in routes:
        a, b = boxes[r.src], boxes[r.dst]
        r.back = b.y < a.y + a.h
        # dot rounds to a hundredth of an inch: put the ends back on the sides they
        # leave and enter (the ports are those sides' middles)
        (x0, _), (x1, _) = r.points[0], r.points[-1]
        r.points[0] = (x0, a.y + a.h)
        r.points[-1] = (x1, b.y)
    return LevelLayout(width, height, boxes, routes)


def bezier_from_polyline(pts: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A polyline as cubic Bezier control points (each segment a straight curve)."""
    out = pts[:1]
    for a, b in zip(pts, pts[1:]):
        out += [a, b, b]
    return out


def polyline(points: list[tuple[float, float]], steps: int = 8) -> list[tuple[float, float]]:
    """A route's cubic Bezier control points sampled as a polyline (for hit tests and
    measures)."""
    out = points[:1]
    for k in range(0, len(points) - 3, 3):
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = points[k:k + 4]
        for i in range(1, steps + 1):
            t = i / steps
            u = 1 - t
            a, b, c, d = u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t
            out.append((a * x0 + b * x1 + c * x2 + d * x3, a * y0 + b * y1 + c * y2 + d * y3))
    return out


def layout_level(inp: LayoutInput) -> LevelLayout:
    return layout_with_dot(inp)


__all__ = ["LayoutInput", "LevelLayout", "Placed", "Route", "box_size", "layout_input",
           "layout_level", "NODE"]
