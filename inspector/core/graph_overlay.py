"""What the window knows about nodes, put on the graph picture's boxes.

Every analysis publishes per-node annotation layers (core/annotations.py: the audit's
findings, a check's failing nodes, profile times, memory bytes, numeric error). The
listing shows them per line; the picture shows them per box: a node's box carries its
own node's marks and heat, a closed module's box carries its members' (the worst
mark, the module's heat: the layer's module rollup when it has one, else the sum of
its nodes' heat). Heat is shown relative to the hottest box on the picture, so a
collapsed level answers "where does the time (or memory) of this level go".

Line-keyed marks (the audit renders the listing and knows its lines) reach a box
through the listing line of the node's own statement. Qt-free: the Graph panel
computes this on the pool and only paints the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from inspector.core.annotations import AnnotationLayer, Heat, Mark, worse
from inspector.core.graph_model import GraphModel
from inspector.core.graph_picture import Picture
from inspector.core.program import Node

MAX_TIP_LINES = 6  # a module box names this many of its marked nodes, then a count


@dataclass(frozen=True)
class BoxOverlay:
    """What one box shows: `severity` (error | warning | info, or None) as its outline,
    `level` (0..1, None without heat) as its tint and bar, `text` beside its label."""

    severity: str | None = None
    level: float | None = None
    text: str = ""
    tooltip: str = ""


@dataclass
class Overlay:
    boxes: dict[str, BoxOverlay] = field(default_factory=dict)
    heat_source: str | None = None  # the layer whose heat is shown
    heat_title: str = ""  # what it means: "time", "bytes"

    def legend(self) -> str:
        """A few words for the panel's header: which heat is shown and how much is marked."""
        marked = sum(1 for b in self.boxes.values() if b.severity)
        parts = []
        if self.heat_source:
            parts.append(f"heat: {self.heat_title or self.heat_source} ({self.heat_source})")
        if marked:
            parts.append(f"{marked} box{'es' if marked != 1 else ''} marked")
        return " · ".join(parts)


def box_of(model: GraphModel, index: int, shown: dict[str, bool], scope: str = "") -> str | None:
    """The box of `shown` (box id -> is an open group) that draws node `index` on a
    picture of `scope`: its own box, or the outermost closed module holding it; None
    when the picture does not reach it (outside `scope`)."""
    if not model.inside(index, scope):
        return None
    for path in model.chains[index][model.depth(scope):]:
        open_ = shown.get(f"m:{path}")
        if open_ is None:
            return None  # the picture stops above this module
        if not open_:
            return f"m:{path}"
    box = f"n:{model.nodes[index].name}"
    return box if box in shown else None


def overlay(picture: Picture, model: GraphModel, layers: Iterable[AnnotationLayer],
            line_of: Callable[[Node], int | None] | None = None) -> Overlay:
    """The boxes of `picture` (a picture of `model`'s graph) with what `layers` say.
    `line_of` maps a node to its listing line, for layers' line-keyed marks."""
    layers = list(layers)
    out = Overlay()
    if not layers or model.path != picture.graph:
        return out
    shown = {b.id: b.open for b in picture.boxes}
    index_of = {node.name: i for i, node in enumerate(model.nodes)}

    def index(name: str) -> int | None:
        i = index_of.get(name)
        if i is None:  # a value with no node of its own (a getitem the listing prints)
            i = model.producer.get(name)
            if i is not None and i < 0:
                return None
        return i

    by_line: dict[int, int] = {}
    if line_of is not None and any(lay.line_marks for lay in layers):
        for i, node in enumerate(model.nodes):
            line = line_of(node)
            if line is not None:
                by_line.setdefault(line, i)

    marks: dict[str, Mark] = {}
    marked_nodes: dict[str, list[str]] = {}

    def mark(i: int, m: Mark) -> None:
        box = box_of(model, i, shown, picture.scope)
        if box is None:
            return
        marks[box] = worse(marks.get(box), m) if box.startswith("n:") else Mark(
            worse(marks.get(box), m).severity)
        if box.startswith("m:"):
            marked_nodes.setdefault(box, []).append(
                f"{model.nodes[i].name}: {m.severity}" + (f" — {m.tooltip.splitlines()[0]}"
                                                           if m.tooltip else ""))

    for layer in layers:
        for name, m in layer.marks.items():
            i = index(name)
            if i is not None:
                mark(i, m)
        for line, m in layer.line_marks.items():
            i = by_line.get(line)
            if i is not None:
                mark(i, m)

    heat: dict[str, float] = {}
    heat_text: dict[str, str] = {}
    heat_layer = next((lay for lay in reversed(layers) if lay.heat), None)
    if heat_layer is not None:
        out.heat_source, out.heat_title = heat_layer.source, heat_layer.title
        rolled: dict[str, Heat] = heat_layer.modules
        for name, h in heat_layer.heat.items():
            i = index(name)
            box = box_of(model, i, shown, picture.scope) if i is not None else None
            if box is None:
                continue
            if box.startswith("m:") and box[2:] in rolled:
                continue  # the layer's own rollup speaks for the module
            heat[box] = heat.get(box, 0.0) + abs(h.value)
            if box.startswith("n:"):
                heat_text[box] = h.text
        for box, is_open in shown.items():
            if box.startswith("m:") and not is_open and box[2:] in rolled:
                h = rolled[box[2:]]
                heat[box], heat_text[box] = abs(h.value), h.text
    top = max(heat.values(), default=0.0) or 1.0

    for box in marks.keys() | heat.keys():
        m = marks.get(box)
        tips = []
        if m is not None:
            names = marked_nodes.get(box)
            if names:
                more = len(names) - MAX_TIP_LINES
                tips.extend(names[:MAX_TIP_LINES])
                if more > 0:
                    tips.append(f"… and {more} more marked")
            elif m.tooltip:
                tips.append(m.tooltip)
        level = heat[box] / top if box in heat else None
        text = heat_text.get(box, "")
        if level is not None:
            title = out.heat_title or out.heat_source or "heat"
            tips.append(f"{title}: {text}" if text else f"{title}: {level:.0%} of the hottest box")
        out.boxes[box] = BoxOverlay(m.severity if m is not None else None, level, text,
                                    "\n".join(tips))
    return out


def lit_boxes(picture: Picture, model: GraphModel, nodes: Iterable[Node | None]) -> set[str]:
    """The boxes of `picture` that draw `nodes` (the listing's highlighted lines'
    nodes: search matches, a module's, a source line's, a diff's, failing ones);
    nodes of other graphs are passed over."""
    shown = {b.id: b.open for b in picture.boxes}
    index_of = {node.name: i for i, node in enumerate(model.nodes)}
    out: set[str] = set()
    for node in nodes:
        i = index_of.get(node.name) if node is not None else None
        if i is not None and model.nodes[i] is node:
            box = box_of(model, i, shown, picture.scope)
            if box is not None:
                out.add(box)
    return out
