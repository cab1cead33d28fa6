"""Shapes of a program: symbols, where they come from, ranges, assertions, specializations.

Everything here comes from the archive's JSON (through the program model), not
taken from torch, and never evaluates an expression: sizes arrive already rendered by
symbolic.py (`2*s77 + 1`, exactly as torch prints a SymInt), conditions are
rendered the same way.

One model (`ProgramShapes`, plain dataclasses) serves the `shapes` command (text
and `--json`) and the window's future Shapes view; `symbol_tooltip` is what a
listing hover over a symbol can show.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from inspector.core.errors import InspectorError
from inspector.core.frames import first_user_frame, parse_stack_trace
from inspector.core.program import SCALAR_KINDS, ArgKind, Graph, Node, Program
from inspector.core.symbolic import render_condition

# Ops that check or constrain symbolic sizes at run time (torch inserts them for
# torch._check, .item() sizes, Dim relations it could not prove at export time).
ASSERTION_OPS = frozenset({
    "_assert_scalar", "_functional_assert_scalar", "_assert_async", "_functional_assert_async",
    "sym_constrain_range", "sym_constrain_range_for_size", "_functional_sym_constrain_range",
    "_functional_sym_constrain_range_for_size",
})
_SYMBOL = re.compile(r"\b([a-z]+\d+)\b")  # s77, u0, c3, ...: the names torch gives symbols
_ASSERT_MSG = re.compile(r"Runtime assertion failed for expression (.*?) on node '[^']*'", re.S)


@dataclass(slots=True)
class SourceLine:
    file: str
    line: int
    function: str
    code: str
    line_text: str = ""  # the recorded number when `line` cannot hold it (frames.py)

    def text(self) -> str:
        return f"{self.file}:{self.line_text or self.line} in {self.function}" + (f": {self.code}" if self.code else "")


@dataclass(slots=True)
class InputShape:
    name: str
    shape: list[str] | None  # None for a non-tensor input (int, float, object, None)
    dtype: str | None  # torch's name without the `torch.` prefix: int64, float32
    kind: str  # tensor, sym_int, sym_float, constant, custom_obj, ...
    value: str | None = None  # a constant input's value, as Python prints it


@dataclass(slots=True)
class Assertion:
    node: str  # the node in the listing
    graph: str  # "" for the main graph
    index: int  # the node's position in its graph (to jump to it)
    op: str  # _assert_scalar, sym_constrain_range_for_size, ...
    condition: str  # readable: `u0 >= 0`, `s0 == 2*s1`, `0 <= u0 <= 19`
    symbols: list[str]
    source: SourceLine | None


@dataclass(slots=True)
class Symbol:
    name: str
    min: int | None  # None: unbounded
    max: int | None
    sources: list[str]  # input dims whose size is exactly this symbol
    assertions: list[str]  # conditions that mention it
    example: int | None = None  # the size export traced with, when recorded
    defined_by: str | None = None  # for data-dependent (unbacked) symbols: the node

    def range_text(self) -> str:
        lo = "-inf" if self.min is None else str(self.min)
        hi = "inf" if self.max is None else str(self.max)
        return f"[{lo}, {hi}]"


@dataclass(slots=True)
class DerivedSize:
    expr: str  # `2*s17 - 1`
    symbols: list[str]
    sources: list[str]  # input dims of exactly this size
    first_node: str | None  # the first node whose output has this size
    example: int | None = None


@dataclass(slots=True)
class Specialization:
    source: str  # `input_ids.shape[0]`
    size: str  # the constant it became
    reason: str  # why it looks specialized


@dataclass(slots=True)
class Guard:
    code: str  # as recorded: `L['y'].size()[0] == L['x'].size()[0]`
    text: str  # readable: `y.shape[0] == x.shape[0]`


@dataclass(slots=True)
class ProgramShapes:
    name: str
    inputs: list[InputShape]
    symbols: dict[str, Symbol]
    derived: list[DerivedSize]
    assertions: list[Assertion]
    guards: list[Guard]
    specialized: list[Specialization] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "inputs": [{"name": i.name, "shape": i.shape, "dtype": i.dtype, "kind": i.kind,
                        "value": i.value} for i in self.inputs],
            "symbols": {s.name: {"min": s.min, "max": s.max, "sources": s.sources,
                                 "assertions": s.assertions, "example": s.example,
                                 "defined_by": s.defined_by}
                        for s in self.symbols.values()},
            "derived": [{"expr": d.expr, "symbols": d.symbols, "sources": d.sources,
                         "first_node": d.first_node, "example": d.example} for d in self.derived],
            "assertions": [_assertion_json(a) for a in self.assertions],
            "guards": [{"code": g.code, "text": g.text} for g in self.guards],
            "specialized": [{"source": s.source, "size": s.size, "reason": s.reason}
                            for s in self.specialized],
        }


def _assertion_json(a: Assertion) -> dict[str, Any]:
    src = a.source
    return {"node": a.node, "graph": a.graph, "index": a.index, "op": a.op, "condition": a.condition,
            "symbols": a.symbols,
            "file": src.file if src else None, "line": src.line if src else None,
            "function": src.function if src else None, "code": src.code if src else None}


# --- building -------------------------------------------------------------------

def program_shapes(program: Program, requested: dict[str, dict[int, str]] | None = None
                   ) -> ProgramShapes:
    """The shapes model of one program. `requested`: input name -> {dim: Dim name}
    that the exporter asked to be dynamic (from the export job's record), used to
    flag the ones that came out constant."""
    graph = program.graph
    inputs = _inputs(program)
    sources: dict[str, list[str]] = {}
    for inp in inputs:
        for i, size in enumerate(inp.shape or ()):
            sources.setdefault(size, []).append(f"{inp.name}.shape[{i}]")
    assertions = [a for g in program.graphs() for n in g.nodes
                  if (a := _assertion(n, g)) is not None]
    defined = _unbacked_definitions(program)
    symbols: dict[str, Symbol] = {}
    used = _used_names(program)
    for name, rng in program.range_constraints.items():
        if not _appears(name, used):
            # torch's deserializer drops ranges of symbols no graph value mentions
            # (replaced during export); so do we, to show what torch.export.load shows
            continue
        symbols[name] = Symbol(
            name=name, min=rng.min, max=rng.max, sources=sources.get(name, []),
            assertions=[a.condition for a in assertions if name in a.symbols],
            example=graph.size_hints.get(name),
            # an input's size is backed: a sym_size node reading it defines nothing
            defined_by=None if sources.get(name) else defined.get(name))
    return ProgramShapes(
        name=program.name, inputs=inputs, symbols=symbols,
        derived=_derived(program, sources), assertions=assertions,
        guards=[Guard(code, readable_guard(code, [i.name for i in inputs]))
                for code in program.guards_code],
        specialized=_specialized(inputs, requested or {}),
    )


def _used_names(program: Program) -> tuple[set[str], list[str]]:
    """(symbols, expressions) mentioned by any size, stride, offset or sym value."""
    texts: set[str] = set()
    for g in program.graphs():
        for meta in g.tensor_values.values():
            texts.update(x for x in (*meta.sizes, *meta.strides, meta.storage_offset)
                         if isinstance(x, str))
        for values in (g.sym_int_values, g.sym_bool_values, g.sym_float_values):
            texts.update(v for v in values.values() if isinstance(v, str))
    symbols = {m for t in texts for m in _SYMBOL.findall(t)}
    return symbols, sorted(texts)


def _appears(name: str, used: tuple[set[str], list[str]]) -> bool:
    symbols, texts = used
    if _SYMBOL.fullmatch(name):
        return name in symbols
    return any(name in t for t in texts)  # a derived key: an expression or part of one


def _inputs(program: Program) -> list[InputShape]:
    """User inputs in call order, constants (an int or bool the caller passed,
    baked in by export) included, as torch's graph_signature.user_inputs lists them."""
    graph = program.graph
    out = []
    for i, spec in enumerate(program.input_specs):
        if spec.kind not in ("user_input", "constant_input"):
            continue
        arg = graph.inputs[i] if i < len(graph.inputs) else None
        meta = graph.tensor_values.get(spec.name) if spec.kind == "user_input" else None
        if meta is not None:
            out.append(InputShape(spec.name, [str(s) for s in meta.sizes], meta.dtype_name,
                                  "tensor"))
        elif spec.kind == "constant_input":
            out.append(InputShape(spec.name, None, None, "constant", _constant_text(arg)))
        else:
            kind = arg.type_name if arg is not None else "unknown"
            out.append(InputShape(spec.name, None, None, kind))
    return out


def _constant_text(arg: Any) -> str | None:
    if arg is None:
        return None
    if arg.is_none:
        return "None"
    value = arg.literal() if arg.kind in SCALAR_KINDS else None
    return None if value is None or isinstance(value, (dict, list)) else str(value)


def _assertion(node: Node, graph: Graph) -> Assertion | None:
    op = node.op_name
    if op not in ASSERTION_OPS:
        return None
    args = {na.name: na.arg for na in node.inputs}
    positional = [na.arg for na in node.inputs]
    condition = ""
    if "constrain_range" in op:
        size = _sym_int_text(graph, positional[0]) if positional else "?"
        lo = _int_arg(args.get("min"))
        hi = _int_arg(args.get("max"))
        if "for_size" in op and lo is None:
            lo = 0  # a size: torch's own default lower bound
        condition = " <= ".join([*([str(lo)] if lo is not None else []), size,
                                 *([str(hi)] if hi is not None else [])])
    elif positional:
        first = positional[0]
        sym = first.sym() if first.kind == ArgKind.SYM_BOOL else None
        if sym is not None:
            if sym.name is not None and sym.name in graph.sym_bool_values:
                value = graph.sym_bool_values[sym.name]
                condition = str(value) if not isinstance(value, str) else value
            elif sym.name is None:
                condition = str(sym.literal)
        msg = next((na.arg.literal() for na in node.inputs if na.arg.kind == ArgKind.STRING), None)
        if isinstance(msg, str):
            m = _ASSERT_MSG.search(msg)
            if m and (not condition or condition == "?"):
                condition = m.group(1)
            elif not condition:
                condition = msg
        if not condition:
            condition = ", ".join(first.tensor_names()) or "?"
    condition = render_condition(condition)
    frames = parse_stack_trace(node.stack_trace)
    frame = first_user_frame(frames) or (frames[-1] if frames else None)
    source = SourceLine(frame.file, frame.line, frame.function, frame.code, frame.recorded_line) if frame else None
    return Assertion(node.name, graph.name, node.index, op, condition,
                     list(dict.fromkeys(_SYMBOL.findall(condition))), source)


def _sym_int_text(graph: Graph, arg: Any) -> str:
    sym = arg.sym() if arg.kind == ArgKind.SYM_INT else None
    if sym is not None:
        if sym.name is not None:
            return str(graph.sym_int_values.get(sym.name, sym.name))
        return str(sym.literal)
    if arg.kind == ArgKind.INT:
        return str(arg.literal())
    return "?"


def _int_arg(arg: Any) -> int | None:
    if arg is None:
        return None
    return arg.int_value()


def _unbacked_definitions(program: Program) -> dict[str, str]:
    """Symbol -> the node whose SymInt output is exactly that symbol (`item` for
    u0 = x.item()); the first such node in graph order."""
    out: dict[str, str] = {}
    for g in program.graphs():
        for node in g.nodes:
            for name in node.output_names():
                value = g.sym_int_values.get(name)
                if isinstance(value, str) and value not in out and _SYMBOL.fullmatch(value):
                    out[value] = node.name
    return out


def _derived(program: Program, sources: dict[str, list[str]]) -> list[DerivedSize]:
    """Every distinct size that is an expression of symbols (not a bare symbol),
    in the order it first appears: inputs first, then node outputs."""
    found: dict[str, DerivedSize] = {}

    def add(size: object, node: str | None, graph: Graph) -> None:
        if not isinstance(size, str) or size in found or _SYMBOL.fullmatch(size) or size == "?":
            return
        found[size] = DerivedSize(size, list(dict.fromkeys(_SYMBOL.findall(size))),
                                  sources.get(size, []), node, graph.size_hints.get(size))

    graph = program.graph
    for spec in program.user_inputs():
        meta = graph.tensor_values.get(spec.name)
        for size in meta.sizes if meta else ():
            add(size, None, graph)
    for g in program.graphs():
        for node in g.nodes:
            for name in node.output_names():
                meta = g.tensor_values.get(name)
                if meta is not None:
                    for size in meta.sizes:
                        add(size, node.name, g)
    return list(found.values())


def _specialized(inputs: list[InputShape], requested: dict[str, dict[int, str]]
                 ) -> list[Specialization]:
    out = []
    for inp in inputs:
        for dim, dim_name in sorted(requested.get(inp.name, {}).items()):
            if inp.shape is not None and dim < len(inp.shape) and inp.shape[dim].lstrip("-").isdigit():
                out.append(Specialization(
                    f"{inp.name}.shape[{dim}]", inp.shape[dim],
                    f"the export asked for Dim {dim_name!r} here, but torch made it the "
                    f"constant {inp.shape[dim]}"))
    return out


def _cross_program(shapes: list[ProgramShapes]) -> None:
    """A dim that is a constant in one program and symbolic in another program of
    the same archive, for an input of the same name (the same data fed to both)."""
    symbolic: dict[tuple[str, int], str] = {}
    for ps in shapes:
        for inp in ps.inputs:
            for i, size in enumerate(inp.shape or ()):
                if not size.lstrip("-").isdigit():
                    symbolic.setdefault((inp.name, i), ps.name)
    for ps in shapes:
        already = {s.source for s in ps.specialized}
        for inp in ps.inputs:
            for i, size in enumerate(inp.shape or ()):
                other = symbolic.get((inp.name, i))
                source = f"{inp.name}.shape[{i}]"
                if other and other != ps.name and size.lstrip("-").isdigit() and source not in already:
                    ps.specialized.append(Specialization(
                        source, size, f"symbolic in program {other!r}, the constant {size} here"))


# --- the archive: all programs, with the export job's record -------------------

EXTRA_RECORD = "pt2_inspector.json"  # written by inspector/jobs/export.py


def archive_shapes(archive: Any, program: str | None = None) -> list[ProgramShapes]:
    """Shapes of every program (or one), with specializations checked against the
    export job's recorded spec when the archive carries one."""
    names = [program] if program else list(archive.program_names)
    for name in names:
        archive.program_path(name)  # a clear error for an unknown name
    requested = requested_dims(archive)
    # cross-program checks need every program, even when one is shown
    all_shapes = [program_shapes(archive.program(n), requested.get(n)) for n in archive.program_names]
    _cross_program(all_shapes)
    return [s for s in all_shapes if s.name in names]


def requested_dims(archive: Any) -> dict[str, dict[str, dict[int, str]]]:
    """program -> input -> {dim: Dim name} the export job asked for, from
    extra/pt2_inspector.json; {} for archives without it (or a record we cannot read)."""
    if EXTRA_RECORD not in archive.extra_names():
        return {}
    try:
        record = json.loads(archive.read_extra(EXTRA_RECORD, 1024 * 1024))
    except (ValueError, InspectorError):  # an unreadable record only loses this hint
        return {}
    return requested_from_record(record)


def requested_from_record(record: Any) -> dict[str, dict[str, dict[int, str]]]:
    if not isinstance(record, dict):
        return {}
    recorded = record.get("dynamic_shapes")
    if isinstance(recorded, dict):  # written by newer exports: exactly what was passed
        out: dict[str, dict[str, dict[int, str]]] = {}
        for prog, by_input in recorded.items():
            if not isinstance(by_input, dict):
                continue
            for inp, dims in by_input.items():
                if isinstance(dims, dict):
                    out.setdefault(str(prog), {})[str(inp)] = {
                        int(d): str(n) for d, n in dims.items() if str(d).isdigit()}
        return out
    spec = record.get("spec")
    if not isinstance(spec, dict):
        return {}
    return dynamic_dims_of_spec(spec)


def dynamic_dims_of_spec(spec: dict[str, Any]) -> dict[str, dict[str, dict[int, str]]]:
    """The toy export's dynamic_shapes (jobs/export.py) as plain data: a Dim only
    where the range has more than one size (a one-size range is static by design)."""
    def ranged(lo_key: str, hi_key: str) -> bool:
        lo, hi = spec.get(lo_key), spec.get(hi_key)
        return isinstance(lo, int) and isinstance(hi, int) and lo != hi

    batch = {0: "batch"} if ranged("batch_min", "batch_max") else {}
    seq = ranged("seq_min", "seq_max")
    dec: dict[str, dict[int, str]] = {
        "input_ids": {**batch, **({1: "seq_len"} if seq else {})},
        "encoder_hidden_states": dict(batch),
    }
    if spec.get("cache_position"):
        dec["cache_position"] = {0: "seq_len"} if seq else {}
    return {"encoder": {"pixel_values": dict(batch)}, "decoder": dec}


# --- text -----------------------------------------------------------------------

_GUARD_NAME = re.compile(r"L\['([^'\]]+)'\]")
_GUARD_SIZE = re.compile(r"\.size\(\)\[(\d+)\]")
_GUARD_STRIDE = re.compile(r"\.stride\(\)\[(\d+)\]")
_GUARD_ITEM = re.compile(r"\[(\d+)\]")


_GUARD_FLAT = re.compile(r"\bflat_args\[(\d+)\]")


def readable_guard(code: str, inputs: list[str] | None = None) -> str:
    """`L['y'].size()[0] == L['x'].size()[0]` -> `y.shape[0] == x.shape[0]`; strict
    exports' `flat_args[1]` -> the name of user input 1. Text only (the guard is
    never evaluated)."""
    text = _GUARD_NAME.sub(lambda m: m.group(1), code)
    if inputs:
        text = _GUARD_FLAT.sub(lambda m: inputs[int(m.group(1))] if int(m.group(1)) < len(inputs)
                               else m.group(0), text)
    text = _GUARD_SIZE.sub(lambda m: f".shape[{m.group(1)}]", text)
    text = _GUARD_STRIDE.sub(lambda m: f".stride({m.group(1)})", text)
    return text


def symbol_tooltip(shapes: ProgramShapes, symbol: str) -> str | None:
    """What hovering a symbol in the listing shows: range, sources, example,
    assertions. None for a name that is not a symbol of this program."""
    s = shapes.symbols.get(symbol)
    if s is None:
        return None
    lines = [f"{s.name}: {s.range_text()}"]
    if s.sources:
        lines.append("size of " + ", ".join(s.sources)
                     + (" (they must match at run time)" if len(s.sources) > 1 else ""))
    if s.defined_by:
        lines.append(f"data-dependent: the value of node {s.defined_by}")
    if s.example is not None:
        lines.append(f"example value at export: {s.example}")
    for cond in s.assertions:
        lines.append(f"checked at run time: {cond}")
    return "\n".join(lines)


def format_text(shapes: list[ProgramShapes]) -> str:
    out: list[str] = []
    for ps in shapes:
        if out:
            out.append("")
        out.append(f"program {ps.name}")
        out.append("  inputs")
        width = max((len(i.name) for i in ps.inputs), default=0)
        for i in ps.inputs:
            what = (f"{i.dtype}[{', '.join(i.shape)}]" if i.shape is not None else
                    f"constant {i.value}" if i.kind == "constant" else i.kind)
            out.append(f"    {i.name:<{width}}  {what}")
        if ps.symbols:
            out.append("  symbols")
            for s in ps.symbols.values():
                where = ", ".join(s.sources) or (f"node {s.defined_by}" if s.defined_by else "-")
                example = f"  example {s.example}" if s.example is not None else ""
                out.append(f"    {s.name:<6} {s.range_text():<14} {where}{example}")
        if ps.derived:
            out.append("  derived sizes")
            for d in ps.derived:
                at = ", ".join(d.sources) or (f"first at {d.first_node}" if d.first_node else "")
                out.append(f"    {d.expr}" + (f"  ({at})" if at else ""))
        if ps.assertions:
            out.append("  runtime assertions")
            for a in ps.assertions:
                where = f"  # {a.source.file}:{a.source.line}" if a.source else ""
                out.append(f"    {a.condition}  [{a.node}]{where}")
                if a.source and a.source.code:
                    out.append(f"        {a.source.code}")
        if ps.guards:
            out.append("  guards")
            for g in ps.guards:
                out.append(f"    {g.text}")
        if ps.specialized:
            out.append("  looks specialized")
            for s in ps.specialized:
                out.append(f"    {s.source} = {s.size}: {s.reason}")
    return "\n".join(out) + "\n"


def shapes_summary(ps: ProgramShapes) -> str:
    """One line about a program's shapes (the Shapes panel's summary)."""
    dynamic = sum(1 for i in ps.inputs for s in (i.shape or ()) if not s.lstrip("-").isdigit())
    parts = [f"{len(ps.inputs)} input{'s' if len(ps.inputs) != 1 else ''}",
             f"{dynamic} dynamic dim{'s' if dynamic != 1 else ''}",
             f"{len(ps.symbols)} symbol{'s' if len(ps.symbols) != 1 else ''}"]
    if ps.assertions:
        parts.append(f"{len(ps.assertions)} runtime assertion{'s' if len(ps.assertions) != 1 else ''}")
    if ps.specialized:
        parts.append(f"{len(ps.specialized)} dim{'s' if len(ps.specialized) != 1 else ''} "
                     "look specialized")
    return f"{ps.name}: " + " · ".join(parts)
