"""A numerics result -> what the window shows: gutter heat and marks, the chart's
series, the answers, the rows of the module and node tables.

Qt-free (the Numerics panel draws these; tests check them without a window).

The chart and the heat speak of one number per node: its error against its
tolerance, `max_abs / (atol + rtol * |r|)` at the worst element (1.0 is the
tolerance: above it the node fails), drawn on a log scale; nodes with no error
sit on the chart's floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from inspector.core.annotations import ERROR, WARNING, AnnotationLayer, Heat, Mark

NUMERICS_SOURCE = "numerics"
FLOOR = 1e-9  # where an exact node sits on the log chart


@dataclass(frozen=True)
class NodePoint:
    index: int  # position among the program's compared nodes (program order)
    name: str
    line: int | None
    module: str
    y: float  # error / tolerance, at least FLOOR
    passes: bool
    nan: bool
    text: str  # a tooltip: the node's figures


@dataclass(frozen=True)
class Answer:
    label: str  # "First over tolerance", "First NaN", ...
    node: str | None
    text: str


def tolerance_ratio(node: dict[str, Any]) -> float:
    """The node's error against its tolerance (the job's `tol_ratio`), or what can be
    said from max_abs and atol alone when the job did not measure it."""
    ratio = node.get("tol_ratio")
    if isinstance(ratio, (int, float)):
        return float(ratio)
    max_abs = node.get("max_abs") or 0.0
    atol = node.get("atol") or 0.0
    if not node.get("passes", True) and max_abs == 0:
        return math.inf
    return max_abs / atol if atol > 0 else (0.0 if max_abs == 0 else math.inf)


def figures(node: dict[str, Any]) -> str:
    def num(x: Any) -> str:
        return "-" if x is None else f"{x:.3g}"

    parts = [f"max abs {num(node.get('max_abs'))}", f"max rel {num(node.get('max_rel'))}",
             f"mean abs {num(node.get('mean_abs'))}", f"cosine {num(node.get('cosine'))}",
             f"rtol {num(node.get('rtol'))} atol {num(node.get('atol'))}",
             "passes" if node.get("passes") else "OVER TOLERANCE"]
    if node.get("nan"):
        parts.append("NaN")
    if node.get("inf"):
        parts.append("Inf")
    notes = node.get("notes") or []
    return ", ".join(parts) + (f" ({'; '.join(notes)})" if notes else "")


def points(program: dict[str, Any]) -> list[NodePoint]:
    out = []
    for i, n in enumerate(program.get("nodes") or []):
        ratio = tolerance_ratio(n)
        y = ratio if math.isfinite(ratio) else 1e12
        out.append(NodePoint(i, n["node"], n.get("line"), n.get("module") or "",
                             max(y, FLOOR), bool(n.get("passes")), bool(n.get("nan")),
                             f"{n['node']} (line {n.get('line') or '?'}): {figures(n)}"))
    return out


def answers(program: dict[str, Any]) -> list[Answer]:
    nodes = {n["node"]: n for n in program.get("nodes") or []}

    def where(name: str | None) -> str:
        n = nodes.get(name or "")
        if n is None:
            return name or "none"
        return f"{name} (line {n.get('line') or '?'}, {n.get('module') or 'root'})"

    out = []
    first = program.get("first_over_tolerance")
    out.append(Answer("First over tolerance", first, where(first)))
    for what in ("nan", "inf"):
        info = program.get(f"first_{what}")
        if isinstance(info, str):  # the CLI's --json spelling
            info = program.get(f"first_{what}_info") or {"node": info}
        if info:
            made = (f"from graph input {info.get('made_by')}" if info.get("from_input")
                    else "made by this node")
            runs = " and ".join(info.get("runs") or [])
            out.append(Answer(f"First {what.upper()}", info.get("node"),
                              f"{where(info.get('node'))} in the {runs or '?'} run ({made})"))
        else:
            out.append(Answer(f"First {what.upper()}", None, "none"))
    path = program.get("most_amplifying")
    mod = next((m for m in program.get("modules") or [] if m.get("path") == path), None)
    if mod is not None:
        amp = ("makes error from exact inputs" if mod.get("makes_error")
               else f"error x{mod.get('amplification'):.3g} from its inputs to its outputs")
        out.append(Answer("Most amplifying module", mod.get("worst"), f"{path}: {amp}"))
    return out


def numerics_layers(result: dict[str, Any]) -> dict[str, AnnotationLayer]:
    """program -> its "numerics" layer: error heat per node and module, marks on the
    first node over tolerance and the first NaN/Inf."""
    out: dict[str, AnnotationLayer] = {}
    for p in result.get("programs") or []:
        name = str(p.get("name"))
        heat = {}
        marks = {}
        for n in p.get("nodes") or []:
            ratio = tolerance_ratio(n)
            value = math.log10(max(ratio, FLOOR)) - math.log10(FLOOR) if math.isfinite(ratio) \
                else 30.0
            err = n.get("max_abs") or 0.0
            heat[n["node"]] = Heat(value, f"{err:.1e}" if err else "", figures(n))
            if not n.get("passes"):
                marks[n["node"]] = Mark(WARNING, "over tolerance: " + figures(n))
        first = p.get("first_over_tolerance")
        if first:
            marks[first] = Mark(ERROR, "first node over tolerance")
        for what in ("nan", "inf"):
            info = p.get(f"first_{what}")
            node = info.get("node") if isinstance(info, dict) else info
            if node:
                marks[node] = Mark(ERROR, f"first {what.upper()} of the comparison")
        modules = {m["path"]: Heat(float(m.get("max_abs") or 0.0),
                                   f"{m.get('max_abs') or 0:.1e}",
                                   f"{m.get('failing', 0)} of {m.get('nodes', 0)} nodes over "
                                   "tolerance")
                   for m in p.get("modules") or [] if isinstance(m.get("path"), str)}
        out[name] = AnnotationLayer(NUMERICS_SOURCE, marks=marks, heat=heat, modules=modules,
                                    title="error")
    return out


def module_rows(program: dict[str, Any]) -> list[dict[str, Any]]:
    """The module rollup, worst first (failing nodes, then largest error)."""
    rows = [m for m in program.get("modules") or [] if m.get("path")]
    return sorted(rows, key=lambda m: (-(m.get("failing") or 0), -(m.get("max_abs") or 0.0)))
