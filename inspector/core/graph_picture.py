"""The whole picture of a graph level with some of its groups open: each open group
is drawn as a frame holding its own level's layout, so only open groups are laid out.

A level's layout depends on its boxes, their sizes and its edges only (an open
child's size is its frame's), and is cached under that content: opening a group
lays out the group and the levels holding it (their sizes changed); its siblings
come from the cache. The picture is flattened to absolute coordinates for the
window, the SVG and `--json`.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from inspector.core.graph_layout import LayoutInput, LevelLayout, layout_input, layout_level
from inspector.core.graph_model import MODULE, Box, GraphModel

FRAME_PAD = 12.0  # px around an open group's contents
TITLE_H = 22.0  # px of an open group's title bar
CACHE_LEVELS = 256


@dataclass
class PictureBox:
    id: str
    box: Box
    x: float
    y: float
    w: float
    h: float
    parent: str | None  # the open group holding it (its box id), None at the top
    open: bool = False  # an open group: a frame, its contents drawn inside
    weights: list[str] = field(default_factory=list)  # weights folded into it

    @property
    def kind(self) -> str:
        return self.box.kind


@dataclass
class PictureEdge:
    src: str
    dst: str
    points: list[tuple[float, float]]  # cubic Bezier control points, absolute px
    values: list[str]
    back: bool
    parent: str | None  # the open group whose level holds it


@dataclass
class Picture:
    graph: str
    scope: str
    width: float
    height: float
    boxes: list[PictureBox]
    edges: list[PictureEdge]
    laid_out: int = 0  # levels laid out for this picture (not from the cache)
    layout_seconds: float = 0.0  # the engine's time for those

    def box(self, box_id: str) -> PictureBox | None:
        return next((b for b in self.boxes if b.id == box_id), None)


class GraphPicture:
    """Pictures of one graph, its levels' layouts cached by content."""

    def __init__(self, model: GraphModel,
                 engine: Callable[[LayoutInput], LevelLayout] = layout_level) -> None:
        self.model = model
        self.engine = engine
        self._cache: OrderedDict[tuple, LevelLayout] = OrderedDict()

    def opened_to_depth(self, scope: str, depth: int) -> frozenset[str]:
        """The groups open when `depth` levels show (1: the scope's own level only)."""
        base = self.model.depth(scope)
        return frozenset(p for p, info in self.model.modules.items()
                         if base < info.depth < base + depth and self.model.inside_module(p, scope))

    def sole_children(self, scope: str = "") -> frozenset[str]:
        """Groups to open at first: down the chain of levels that hold one group only
        (the toy's root holds only `decoder`)."""
        out: list[str] = []
        while True:
            children = self.model.level(scope).children()
            if len(children) != 1:
                return frozenset(out)
            scope = children[0]
            out.append(scope)

    def picture(self, scope: str = "", opened: Iterable[str] = ()) -> Picture:
        opened = frozenset(opened)
        stats = [0, 0.0]
        tree = self._place(scope, opened, stats)
        boxes: list[PictureBox] = []
        edges: list[PictureEdge] = []
        self._flatten(tree, 0.0, 0.0, None, boxes, edges)
        lay = tree[1]
        return Picture(self.model.path, scope, lay.width, lay.height, boxes, edges,
                       stats[0], stats[1])

    # --- laying out, bottom up --------------------------------------------------------

    def _place(self, scope: str, opened: frozenset[str], stats: list) -> tuple:
        level = self.model.level(scope)
        sizes: dict[str, tuple[float, float]] = {}
        inner: dict[str, tuple] = {}
        for child in level.children():
            if child in opened:
                sub = self._place(child, opened, stats)
                inner[f"m:{child}"] = sub
                lay = sub[1]
                sizes[f"m:{child}"] = (max(lay.width + 2 * FRAME_PAD, 120.0),
                                       lay.height + TITLE_H + FRAME_PAD)
        inp = layout_input(level, sizes)
        key = (self.model.path, scope, inp.key())
        lay = self._cache.get(key)
        if lay is None:
            start = time.perf_counter()
            lay = self.engine(inp)
            stats[0] += 1
            stats[1] += time.perf_counter() - start
            self._cache[key] = lay
            if len(self._cache) > CACHE_LEVELS:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return level, lay, inp, inner

    def _flatten(self, tree: tuple, ox: float, oy: float, parent: str | None,
                 boxes: list[PictureBox], edges: list[PictureEdge]) -> None:
        level, lay, inp, inner = tree
        values = {(e.src, e.dst): e.values for e in level.edges}
        for box_id, placed in lay.boxes.items():
            box = level.boxes[box_id]
            is_open = box_id in inner
            boxes.append(PictureBox(box_id, box, placed.x + ox, placed.y + oy, placed.w,
                                    placed.h, parent, is_open, inp.weights.get(box_id, [])))
        for r in lay.routes:
            edges.append(PictureEdge(r.src, r.dst, [(x + ox, y + oy) for x, y in r.points],
                                     values.get((r.src, r.dst), []), r.back, parent))
        for box_id, sub in inner.items():
            placed = lay.boxes[box_id]
            sub_w = sub[1].width
            # the contents centred in the frame (a frame is at least 120 px wide)
            dx = (placed.w - sub_w) / 2
            self._flatten(sub, placed.x + ox + dx, placed.y + oy + TITLE_H, box_id, boxes, edges)


def is_group(box: Box) -> bool:
    return box.kind == MODULE
