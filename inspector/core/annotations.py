"""Per-node annotations that panels put on a program: gutter marks and heat.

Any analysis that has something to say about nodes (the audit's findings, a check's
failing nodes, profile times, diff changes) publishes one `AnnotationLayer` per program
under its own `source` name. The window shows all layers of the program on screen at
once: marks merge (the worst severity wins, tooltips are joined), and the newest layer
that has heat fills the heat column of the listing's gutter.

Layers are keyed by node name, which is what analyses know; `resolve` turns them into
listing lines. `line_marks` is for findings that already know their listing line
(the audit renders the same listing the window shows) or that belong to no node.

Qt-free (the window's Document keeps an AnnotationStore; unit tests use it directly).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inspector.core.listing import Listing
    from inspector.core.program import Program

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)  # worst first
_RANK = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Mark:
    """A dot in the gutter. `tooltip` is plain text (never interpreted as markup)."""

    severity: str = INFO  # error | warning | info (anything else shows as info)
    tooltip: str = ""


@dataclass(frozen=True)
class Heat:
    """A number for a node (a time, a count, a size). The gutter's heat column tints
    the line by `value` relative to the largest value of its layer and shows `text`
    (e.g. "1.25 ms"); `tooltip` is plain text."""

    value: float
    text: str = ""
    tooltip: str = ""


@dataclass
class AnnotationLayer:
    """What one source says about one program."""

    source: str  # who publishes it: "audit", "check", "profile", "diff", ...
    marks: dict[str, Mark] = field(default_factory=dict)  # node name -> mark
    heat: dict[str, Heat] = field(default_factory=dict)  # node name -> heat
    line_marks: dict[int, Mark] = field(default_factory=dict)  # listing line -> mark
    # module path (nn_module_stack) -> heat, inclusive of submodules: the module
    # tree's time column (a profile's module rollup)
    modules: dict[str, Heat] = field(default_factory=dict)
    title: str = ""  # what the heat column means ("time", "bytes"), shown in tooltips

    def is_empty(self) -> bool:
        return not (self.marks or self.heat or self.line_marks or self.modules)


@dataclass(frozen=True)
class LineHeat:
    """A heat value resolved to a listing line; `level` is 0..1 within its layer."""

    level: float
    text: str
    tooltip: str


@dataclass
class ResolvedAnnotations:
    """All layers of a program mapped onto its listing's lines."""

    marks: dict[int, Mark] = field(default_factory=dict)
    heat: dict[int, LineHeat] = field(default_factory=dict)
    heat_source: str | None = None  # the layer the heat column shows
    heat_title: str = ""


def worse(a: Mark | None, b: Mark) -> Mark:
    """Merge two marks of one line: the worse severity, both tooltips."""
    if a is None:
        return b
    sev = a.severity if _RANK.get(a.severity, 2) <= _RANK.get(b.severity, 2) else b.severity
    tips = "\n".join(t for t in (a.tooltip, b.tooltip) if t)
    return Mark(sev, tips)


class AnnotationStore:
    """program -> source -> layer, in the order sources were first published."""

    def __init__(self) -> None:
        self._layers: dict[str, dict[str, AnnotationLayer]] = {}

    def set(self, program: str, layer: AnnotationLayer) -> None:
        """Publish (or replace) `layer.source`'s layer for `program`. A layer set again
        moves to the end, so it becomes the one whose heat is shown."""
        layers = self._layers.setdefault(program, {})
        layers.pop(layer.source, None)
        layers[layer.source] = layer

    def clear(self, program: str | None = None, source: str | None = None) -> None:
        """Drop one source's layer (or all sources) of one program (or all programs)."""
        programs = [program] if program is not None else list(self._layers)
        for name in programs:
            if source is None:
                self._layers.pop(name, None)
            else:
                self._layers.get(name, {}).pop(source, None)

    def layers(self, program: str) -> list[AnnotationLayer]:
        return list(self._layers.get(program, {}).values())

    def layer(self, program: str, source: str) -> AnnotationLayer | None:
        return self._layers.get(program, {}).get(source)

    def module_heat(self, program: str) -> dict[str, Heat]:
        """Module path -> heat from the newest layer of `program` that has any."""
        layer = next((lay for lay in reversed(self.layers(program)) if lay.modules), None)
        return dict(layer.modules) if layer is not None else {}

    def module_heat_title(self, program: str) -> str:
        """What module_heat's numbers are ("Time", "Bytes"): the module tree's header."""
        layer = next((lay for lay in reversed(self.layers(program)) if lay.modules), None)
        title = layer.title if layer is not None else ""
        return title[:1].upper() + title[1:] if title else "Time"

    def programs(self) -> list[str]:
        return [p for p, layers in self._layers.items() if layers]

    def resolve(self, program: Program, listing: Listing) -> ResolvedAnnotations:
        return resolve(self.layers(program.name), program, listing)


def resolve(layers: Iterable[AnnotationLayer], program: Program,
            listing: Listing) -> ResolvedAnnotations:
    """Map node-keyed layers onto listing lines (a name used in several graphs of the
    program, e.g. in both branches of a cond, marks each of its lines)."""
    layers = list(layers)
    out = ResolvedAnnotations()
    wanted = set()
    for layer in layers:
        wanted.update(layer.marks)
        wanted.update(layer.heat)
    lines_of: dict[str, list[int]] = {}
    if wanted:
        for node in program.all_nodes():
            if node.name in wanted:
                line = listing.line_of(node)
                if line is not None:
                    lines_of.setdefault(node.name, []).append(line)
        # values with a line but no node of their own: the `getitem` lines the listing
        # prints after a multi-output node (torch's FX graph has them as nodes)
        for name in wanted - lines_of.keys():
            line = listing.definitions.get(("", name))
            if line is not None:
                lines_of[name] = [line]
    for layer in layers:
        for line, mark in layer.line_marks.items():
            out.marks[line] = worse(out.marks.get(line), mark)
        for name, mark in layer.marks.items():
            for line in lines_of.get(name, ()):
                out.marks[line] = worse(out.marks.get(line), mark)
    heat_layer = next((lay for lay in reversed(layers) if lay.heat), None)
    if heat_layer is not None:
        top = max((abs(h.value) for h in heat_layer.heat.values()), default=0.0) or 1.0
        for name, h in heat_layer.heat.items():
            for line in lines_of.get(name, ()):
                out.heat[line] = LineHeat(min(1.0, abs(h.value) / top), h.text, h.tooltip)
        out.heat_source, out.heat_title = heat_layer.source, heat_layer.title
    return out
