"""The `memory` command's report: a memory plan (core/memory_plan.py) joined to the
listing (lines, modules, source frames), as JSON and as text.

JSON (`--json`): `{"programs": [{"name", "dims", "nodes": [{"node", "line", "module",
"out_bytes", "live_bytes"}], "peak": {"bytes", "node"}, "weights_bytes"}]}`, and with
a budget `fits` and `largest` (symbol -> the largest value that fits, null where
none does) on each program. The text adds what a reader asks next: the peak's
source line, the top nodes, the modules, the peak at the ranges' top.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inspector.core.errors import InspectorError
from inspector.core.listing import Listing, render_listing
from inspector.core.memory_plan import MemoryModel, MemoryPlan, ModuleMemory, format_bytes
from inspector.core.node_index import NodeInfo, node_index
from inspector.core.program import Program
from inspector.core.shapes import program_shapes

TOP_NODES = 10
TOP_MODULES = 8


@dataclass
class ProgramMemory:
    program: Program
    model: MemoryModel
    plan: MemoryPlan
    index: dict[str, NodeInfo]
    sources: dict[str, list[str]]  # symbol -> input dims of exactly that size
    given: set[str]  # symbols the user set
    budget: int | None = None
    largest: dict[str, int | None] | None = None
    top_plan: MemoryPlan | None = None  # at the ranges' top

    @property
    def fits(self) -> bool | None:
        return None if self.budget is None else self.plan.peak_bytes <= self.budget

    def line(self, i: int) -> int | None:
        info = self.index.get(self.model.node_names[i])
        return info.line if info else None

    def module(self, i: int) -> str:
        info = self.index.get(self.model.node_names[i])
        return info.module if info else ""

    def source(self, i: int) -> str | None:
        info = self.index.get(self.model.node_names[i])
        if info is None or not info.frames:
            return None
        f = info.frames[-1]  # the innermost: the frame the listing's `# File:` names
        return f"{f.file}:{f.line}" + (f": {f.code.strip()}" if f.code else "")

    def to_json(self) -> dict[str, Any]:
        plan = self.plan
        nodes = [{"node": name, "line": self.line(i), "module": self.module(i),
                  "out_bytes": int(plan.out_bytes[i]), "live_bytes": int(plan.live_bytes[i])}
                 for i, name in enumerate(self.model.node_names)]
        doc: dict[str, Any] = {
            "name": self.program.name, "dims": dict(plan.dims), "nodes": nodes,
            "peak": {"bytes": plan.peak_bytes, "node": plan.peak_node()},
            "weights_bytes": plan.weights_bytes,
        }
        if self.budget is not None:
            doc["fits"] = self.fits
            doc["largest"] = dict(self.largest or {})
        return doc


def listed_names(program: Program, listing: Listing,
                 index: dict[str, NodeInfo]) -> list[str] | None:
    """Each top-graph node's name as the listing prints it (torch's FX name), where
    the file named a node not at all (schemas 7.3, 8.2: node.name is made up) or
    FX prints it under another; None where every name is the file's."""
    nodes = program.graph.nodes
    if all(n.name_in_file for n in nodes) and all(
            n.name in index for n in nodes if n.outputs):
        return None
    by_line = {info.line: name for name, info in index.items()}
    listing_lines = {}
    for n in nodes:
        line = listing.line_of(n)
        listing_lines[id(n)] = by_line.get(line + 1) if line is not None else None
    return [listing_lines[id(n)] or n.name for n in nodes]


def weight_records(archive: Any, program: Program) -> dict[str, str]:
    """Parameter/buffer/constant FQN -> its record in the archive (from the payload
    configs alone): tied weights name one record."""
    from inspector.core.weights import list_weights

    try:
        return {w.name: w.record for w in list_weights(archive, program.name, program)
                if w.record}
    except InspectorError:  # unreadable configs: every weight its own storage
        return {}


def model_for(program: Program, archive: Any = None) -> MemoryModel:
    """The program's memory model under the names the listing (and torch) give
    its nodes; with the archive, tied weights counted once."""
    listing = render_listing(program)
    return MemoryModel(program, listed_names(program, listing, node_index(program, listing)),
                       weight_records(archive, program) if archive is not None else None)


def program_memory(program: Program, dims: Mapping[str, int] | None = None,
                   budget: int | None = None, model: MemoryModel | None = None,
                   archive: Any = None) -> ProgramMemory:
    """Plan `program` at `dims` (the others traced); with a budget, search each
    dynamic dim's largest fitting value. Raises MemoryPlanError for a bad dim."""
    listing = render_listing(program)
    index = node_index(program, listing)
    model = model or MemoryModel(program, listed_names(program, listing, index),
                                 weight_records(archive, program) if archive is not None else None)
    plan = model.plan(dims)
    shapes = program_shapes(program)
    out = ProgramMemory(program, model, plan, index,
                        {n: s.sources for n, s in shapes.symbols.items()},
                        set(dims or {}), budget)
    top = model.top_dims()
    if top and any(plan.dims.get(k) != v for k, v in top.items()):
        out.top_plan = model.plan({**plan.dims, **top})
    if budget is not None:
        out.largest = model.largest_fitting(budget, dims)
    return out


def _dim_text(report: ProgramMemory, name: str, value: int) -> str:
    src = report.sources.get(name)
    how = "given" if name in report.given else "traced"
    sym = report.model.symbols.get(name)
    if sym is not None and sym.traced is None and name not in report.given:
        how = "no traced size: range top" if sym.max is not None else "no traced size"
    where = f" = {src[0]}" if src else ""
    return f"{name}={value}{where} ({how})"


def format_text(reports: list[ProgramMemory]) -> str:
    out: list[str] = []
    for r in reports:
        plan, model = r.plan, r.model
        out.append(f"{r.program.name}: peak {format_bytes(plan.peak_bytes)}"
                   + (f" at {plan.peak_node()}" if plan.peak_node() else "")
                   + f" ({len(model.node_names)} nodes)")
        if plan.dims:
            out.append("  dims: " + ", ".join(_dim_text(r, k, v) for k, v in sorted(plan.dims.items())))
        out.append(f"  weights, buffers, constants {format_bytes(plan.weights_bytes)}; "
                   f"inputs {format_bytes(plan.inputs_bytes)}")
        i = plan.peak_index
        if i is not None:
            where = [f"line {r.line(i)}" if r.line(i) else None,
                     f"module {r.module(i) or '(root)'}"]
            out.append(f"  peak node {model.node_names[i]}: " + ", ".join(w for w in where if w)
                       + f"; activations {format_bytes(plan.peak_bytes - plan.baseline_bytes)}")
            src = r.source(i)
            if src:
                out.append(f"    {src}")
        if r.top_plan is not None:
            tp = r.top_plan
            dims = ", ".join(f"{k}={v}" for k, v in sorted(model.top_dims().items()))
            out.append(f"  at the ranges' top ({dims}): peak {format_bytes(tp.peak_bytes)}"
                       f" at {tp.peak_node()}")
        if plan.unknown:
            out.append(f"  {len(plan.unknown)} values with sizes that did not evaluate "
                       f"(counted 0): {', '.join(plan.unknown[:5])}")
        if r.budget is not None:
            verdict = "fits" if r.fits else "does not fit"
            out.append(f"  budget {format_bytes(r.budget)}: {verdict} "
                       f"(peak is {plan.peak_bytes / r.budget:.2%} of it)")
            for name, value in sorted((r.largest or {}).items()):
                sym = model.symbols[name]
                if value is None:
                    out.append(f"    {name}: not even at {sym.min} (the others as above)")
                else:
                    top = " (its range's top)" if sym.max is not None and value == sym.max else ""
                    out.append(f"    largest {name} that fits: {value}{top}")
        out.append(f"  top {min(TOP_NODES, len(model.node_names))} nodes by live bytes:")
        out.append(f"    {'line':>6}  {'live':>11}  {'output':>11}  node  (module)")
        for j in plan.top_nodes(TOP_NODES):
            line = r.line(j)
            out.append(f"    {line if line else '?':>6}  {format_bytes(int(plan.live_bytes[j])):>11}  "
                       f"{format_bytes(int(plan.out_bytes[j])):>11}  {model.node_names[j]}"
                       f"  ({r.module(j) or 'root'})")
        modules = distinct_peaks(module_rows(r))
        if modules:
            out.append(f"  modules by peak (the innermost holding each peak node; "
                       f"top {min(TOP_MODULES, len(modules))}):")
            for m in modules[:TOP_MODULES]:
                out.append(f"    {format_bytes(m.peak_bytes):>11} peak at {m.peak_node}; outputs keep "
                           f"{format_bytes(m.kept_bytes)}  {m.path}")
    return "\n".join(out) + "\n"


def module_rows(report: ProgramMemory) -> list[ModuleMemory]:
    """The module rollups, deepest-first among equal peaks (the innermost module
    that holds the peak is the one to look at)."""
    rows = report.model.module_rollups(report.plan)
    return sorted(rows, key=lambda m: (-m.peak_bytes, -m.path.count("."), m.path))


def distinct_peaks(rows: list[ModuleMemory]) -> list[ModuleMemory]:
    """One row per peak node: the innermost module that holds it (its parents,
    which hold the same peak, say nothing more)."""
    seen: set[str] = set()
    out = []
    for m in rows:
        if m.peak_node not in seen:
            seen.add(m.peak_node)
            out.append(m)
    return out
