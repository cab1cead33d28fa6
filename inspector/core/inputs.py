"""Inputs for any exported program, planned from its signature alone (no torch).

`check` and `profile` need a call's worth of user inputs for a program nobody wrote
example inputs for. The program JSON says all we need: each user input's dtype and
sizes (a size is an int or a symbolic expression in srepr), the symbols' ranges
(`range_constraints`), and the recorded value of every non-tensor input. Planning
picks a value for each symbol, checks it against the range, and evaluates every size:

- a symbol takes `--dim SYM=N`, else the size a `--input NAME=AxB` gives it, else the
  example size export traced with (the `hint` next to the expression: it satisfies
  every guard export recorded) when it lies in the range, else a small value in range;
- `--input NAME=AxB` gives a whole shape: static sizes must match, a plain symbol is
  bound by it, an expression must evaluate to it;
- integer tensors are filled with zeros (a valid index for any embedding), bool
  tensors with ones, float tensors with seeded random numbers (the job does that);
  constant inputs take their recorded value.

Sizes are evaluated on the srepr tree of `inspector.core.symbolic`, never by sympify.
Any mistake in the user's specs is an `InputSpecError` naming the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec
import orjson

from inspector.core.dtypes import DTYPE_NAMES
from inspector.core.errors import InspectorError
from inspector.core.program import SYM_KINDS, ArgKind, Argument, sym_scalar
from inspector.core.symbolic import (
    Call,
    ExprSyntaxError,
    UnresolvedSymbol,
    evaluate,
    parse_srepr,
    symbol_name,
)

DEFAULT_SIZE = 4  # a symbol without hint: small, but not 0/1 (export specializes those)
MAX_ELEMENTS = 2**31  # one input this large is a typo, not a profile
INTEGER_DTYPES = frozenset({1, 2, 3, 4, 5, 28, 34, 35})
BOOL_DTYPES = frozenset({12})
FLOAT_DTYPES = frozenset({6, 7, 8, 9, 10, 11, 13, 29, 30, 31, 32, 33})

TENSOR, SYM_INT, SYM_FLOAT, SYM_BOOL, CONSTANT = "tensor", "sym_int", "sym_float", "sym_bool", "constant"

_SYMBOL = re.compile(r"^[a-z]{1,6}\d{1,9}$")
_DIM = re.compile(r"^\s*([a-z]{1,6}\d{1,9})\s*=\s*(\d{1,12})\s*$")
_INPUT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]{0,200})\s*=\s*(\S*)\s*$")
_SHAPE = re.compile(r"^(?:\d{1,12}(?:x\d{1,12})*)?$")


class InputSpecError(InspectorError):
    """A --dim/--input spec that does not parse or does not fit the program."""


@dataclass(frozen=True)
class PlannedInput:
    name: str  # the signature's name (what `def forward(...)` in the listing shows)
    kind: str  # TENSOR, SYM_INT, SYM_FLOAT, SYM_BOOL or CONSTANT
    dtype: int | None = None  # schema ScalarType (tensors)
    shape: tuple[int, ...] = ()
    value: Any = None  # sym/constant inputs: the value to pass
    fill: str = ""  # tensors: "zeros", "ones" or "random"

    @property
    def dtype_name(self) -> str:
        return DTYPE_NAMES.get(self.dtype or 0, f"dtype{self.dtype}")

    def describe(self) -> dict[str, Any]:
        """The `inputs` entries of the check/profile JSON."""
        if self.kind == TENSOR:
            return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype_name}
        return {"name": self.name, "shape": None, "dtype": type(self.value).__name__,
                "value": self.value}


@dataclass
class InputPlan:
    program: str
    inputs: list[PlannedInput] = field(default_factory=list)
    symbols: dict[str, int] = field(default_factory=dict)  # every symbol's chosen value

    def by_name(self) -> dict[str, PlannedInput]:
        return {i.name: i for i in self.inputs}


# --- parsing the user's specs -------------------------------------------------

def parse_dims(specs: list[str] | None) -> dict[str, int]:
    """['s70=16', ...] -> {'s70': 16}."""
    out: dict[str, int] = {}
    for spec in specs or []:
        m = _DIM.match(spec)
        if not m:
            raise InputSpecError(f"--dim {spec!r} does not parse (expected SYMBOL=N, e.g. "
                                 "s70=16; `pt2-inspector list` shows the symbols in the "
                                 "input annotations)")
        if m.group(1) in out and out[m.group(1)] != int(m.group(2)):
            raise InputSpecError(f"--dim {m.group(1)} is given twice with different values")
        out[m.group(1)] = int(m.group(2))
    return out


def parse_shapes(specs: list[str] | None) -> dict[str, tuple[int, ...]]:
    """['input_ids=2x16', 'x='] -> {'input_ids': (2, 16), 'x': ()} ('' is a 0-d tensor)."""
    out: dict[str, tuple[int, ...]] = {}
    for spec in specs or []:
        m = _INPUT.match(spec)
        if not m or not _SHAPE.match(m.group(2)):
            raise InputSpecError(f"--input {spec!r} does not parse (expected NAME=AxBx..., "
                                 "e.g. input_ids=2x16; NAME= for a 0-d tensor)")
        name, text = m.group(1), m.group(2)
        shape = tuple(int(x) for x in text.split("x")) if text else ()
        if name in out and out[name] != shape:
            raise InputSpecError(f"--input {name} is given twice with different shapes")
        out[name] = shape
    return out


# --- evaluating srepr sizes ---------------------------------------------------

# (the evaluator lives in core/symbolic.py: the memory plan evaluates sizes too)
_Unresolved = UnresolvedSymbol
_symbol_name = symbol_name
_eval = evaluate


def _as_int(value: object, text: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, Fraction, float)) \
            or value != int(value):
        raise ExprSyntaxError(f"size {text[:80]!r} is not a whole number here ({value})")
    return int(value)


# --- planning -----------------------------------------------------------------

@dataclass
class _Size:
    """One size of one input: an int, or an srepr tree with its text and hint."""

    static: int | None
    tree: object = None
    text: str = ""
    hint: int | None = None


def _sizes(meta: Any, where: str) -> list[_Size]:
    raw = meta.get("sizes") if isinstance(meta, dict) else None
    if not isinstance(raw, list):
        raise InputSpecError(f"{where}: the program records no sizes for it")
    out: list[_Size] = []
    for s in raw:
        sym = sym_scalar(s)
        if sym is not None and type(sym.literal) is int:
            out.append(_Size(sym.literal))
            continue
        text = sym.expr if sym is not None else None
        if text is None:
            raise InputSpecError(f"{where}: a size is neither an int nor an expression")
        try:
            tree = parse_srepr(text)
        except ExprSyntaxError as exc:
            raise InputSpecError(f"{where}: size {text[:80]!r} cannot be read ({exc})") from None
        hint = sym.hint  # type: ignore[union-attr]
        out.append(_Size(None, tree, text, hint if type(hint) is int else None))
    return out


def _ranges(doc: dict[str, Any]) -> dict[str, tuple[int | None, int | None]]:
    out: dict[str, tuple[int | None, int | None]] = {}
    for sym, r in (doc.get("range_constraints") or {}).items():
        # derived dims (`2*s23`) have ranges too, keyed by their printed text: the
        # symbols' own ranges bound them, and torch's guards check the relation
        if isinstance(r, dict) and _SYMBOL.match(str(sym)):
            lo, hi = r.get("min_val"), r.get("max_val")
            out[str(sym)] = (lo if isinstance(lo, int) else None,
                             hi if isinstance(hi, int) else None)
    return out


def _range_text(r: tuple[int | None, int | None]) -> str:
    return f"{'-inf' if r[0] is None else r[0]}..{'inf' if r[1] is None else r[1]}"


def _in_range(value: int, r: tuple[int | None, int | None]) -> bool:
    return (r[0] is None or value >= r[0]) and (r[1] is None or value <= r[1])


def _user_inputs(doc: dict[str, Any], program: str) -> list[tuple[str, str, Any]]:
    """(name, kind, payload) for each user input in signature order: kind 'tensor'
    (payload: tensor meta), 'sym_int'/'sym_float'/'sym_bool' (payload: the value
    record), 'constant' (payload: the recorded value)."""
    gm = doc.get("graph_module") if isinstance(doc, dict) else None
    graph = gm.get("graph") if isinstance(gm, dict) else None
    sig = gm.get("signature") if isinstance(gm, dict) else None
    if not isinstance(graph, dict) or not isinstance(sig, dict):
        raise InputSpecError(f"program {program!r} is not an exported program")
    tensors = graph.get("tensor_values") or {}
    out: list[tuple[str, str, Any]] = []
    for spec in sig.get("input_specs") or []:
        if not isinstance(spec, dict) or len(spec) != 1:
            continue
        ((kind, body),) = spec.items()
        if kind == "constant_input" and isinstance(body, dict):
            out.append((str(body.get("name")), CONSTANT, _constant(body.get("value"))))
        elif kind == "user_input" and isinstance(body, dict):
            arg = Argument.of(body.get("arg"))
            if arg.kind == ArgKind.UNKNOWN:
                continue
            if arg.kind == ArgKind.TENSOR and type(arg.value) is dict:
                name = str(arg.name())
                out.append((name, TENSOR, tensors.get(name)))
            elif arg.kind in SYM_KINDS and type(arg.value) is dict:
                name = arg.name()
                values = graph.get(arg.type_name + "_values") or {}
                out.append((str(name), arg.type_name, values.get(name)))
            else:  # a constant passed as a user input (older schemas)
                out.append((f"arg{len(out)}", CONSTANT, _constant(body.get("arg"))))
    return out


def _constant(value: Any) -> Any:
    """A recorded constant's value as written (None for None and for anything else)."""
    return Argument.of(value).literal()


def plan_inputs(doc: dict[str, Any], program: str, dims: dict[str, int] | None = None,
                shapes: dict[str, tuple[int, ...]] | None = None, *,
                strict: bool = True) -> InputPlan:
    """Plan one program's user inputs. With strict=False, dims and shapes naming
    symbols/inputs this program lacks are ignored (a spec for several programs)."""
    dims = dict(dims or {})
    shapes = dict(shapes or {})
    ranges = _ranges(doc)
    entries = _user_inputs(doc, program)
    names = [n for n, _, _ in entries]
    where = f"program {program!r}"
    if strict:
        unknown = [n for n in shapes if n not in names]
        if unknown:
            raise InputSpecError(f"--input {unknown[0]}: {where} has no input of that name "
                                 f"(inputs: {', '.join(names) or 'none'})")
    sizes: dict[str, list[_Size]] = {}
    for name, kind, payload in entries:
        if kind == TENSOR:
            sizes[name] = _sizes(payload, f"{where}, input {name!r}")
        elif name in shapes and strict:
            raise InputSpecError(f"--input {name}: it is not a tensor input of {where}")
    symbols: set[str] = set(ranges)
    for ss in sizes.values():
        for s in ss:
            if s.tree is not None:
                symbols |= _free_symbols(s.tree)
    sym_records: dict[str, Any] = {}
    for name, kind, payload in entries:
        if kind in (SYM_INT, SYM_FLOAT, SYM_BOOL):
            sym_records[name] = payload
            sym = sym_scalar(payload) if kind == SYM_INT else None
            if sym is not None and sym.literal is None:
                tree = _tree(sym.expr)
                if tree is not None:
                    symbols |= _free_symbols(tree)
    if strict:
        unknown_dims = [d for d in dims if d not in symbols]
        if unknown_dims:
            raise InputSpecError(f"--dim {unknown_dims[0]}: {where} has no symbol of that "
                                 f"name (symbols: {', '.join(sorted(symbols)) or 'none'})")
    env: dict[str, int] = {}
    given: dict[str, str] = {}  # symbol -> what set it, for messages
    for sym, value in dims.items():
        if sym in symbols:
            env[sym] = value
            given[sym] = f"--dim {sym}={value}"
    # whole shapes bind the plain symbols they cover
    for name, shape in shapes.items():
        if name not in sizes:
            continue
        ss = sizes[name]
        if len(shape) != len(ss):
            raise InputSpecError(f"--input {name}={'x'.join(map(str, shape))}: {name} has "
                                 f"{len(ss)} dimension{'s' if len(ss) != 1 else ''}, not "
                                 f"{len(shape)} (its sizes: {_sizes_text(ss)})")
        for i, (value, s) in enumerate(zip(shape, ss)):
            if s.static is not None:
                if value != s.static:
                    raise InputSpecError(
                        f"--input {name}: dimension {i} is fixed at {s.static} in this program "
                        f"(export traced it static), not {value} (its sizes: {_sizes_text(ss)})")
                continue
            sym = _symbol_name(s.tree)
            if sym is None:
                continue  # an expression: checked once every symbol has a value
            if sym in env and env[sym] != value:
                raise InputSpecError(
                    f"--input {name}: dimension {i} is {sym}, which {given[sym]} already "
                    f"sets to {env[sym]}, not {value}")
            env[sym] = value
            given[sym] = f"--input {name}"
    # defaults: the traced example size, else a small size in range
    hints: dict[str, int] = {}
    for ss in sizes.values():
        for s in ss:
            sym = _symbol_name(s.tree) if s.tree is not None else None
            if sym is not None and s.hint is not None:
                hints.setdefault(sym, s.hint)
    for sym in sorted(symbols):
        if sym in env:
            continue
        r = ranges.get(sym, (None, None))
        hint = hints.get(sym)
        if hint is not None and _in_range(hint, r):
            env[sym] = hint
        else:
            lo = r[0] if r[0] is not None else 0
            value = max(lo, DEFAULT_SIZE)
            env[sym] = value if r[1] is None else min(value, r[1])
        given[sym] = "the default"
    for sym, value in env.items():
        r = ranges.get(sym)
        if r is not None and not _in_range(value, r):
            raise InputSpecError(f"{given[sym]}: {sym} = {value} is outside its range "
                                 f"{_range_text(r)} in {where}")
        if value < 0:
            raise InputSpecError(f"{given[sym]}: a size cannot be negative ({sym} = {value})")
    plan = InputPlan(program, symbols=dict(sorted(env.items())))
    for name, kind, payload in entries:
        if kind == TENSOR:
            shape = _evaluate_shape(name, sizes[name], env, shapes.get(name), where)
            dtype = payload.get("dtype") if isinstance(payload, dict) else None
            if not isinstance(dtype, int):
                raise InputSpecError(f"{where}, input {name!r}: no dtype recorded")
            fill = "zeros" if dtype in INTEGER_DTYPES else "ones" if dtype in BOOL_DTYPES else "random"
            if dtype not in INTEGER_DTYPES | BOOL_DTYPES | FLOAT_DTYPES:
                raise InputSpecError(f"{where}, input {name!r}: dtype "
                                     f"{DTYPE_NAMES.get(dtype, dtype)} cannot be made up here")
            plan.inputs.append(PlannedInput(name, TENSOR, dtype, shape, fill=fill))
        elif kind in (SYM_INT, SYM_FLOAT, SYM_BOOL):
            plan.inputs.append(PlannedInput(name, kind, value=_sym_value(payload, env, name, where)))
        else:
            plan.inputs.append(PlannedInput(name, CONSTANT, value=payload))
    return plan


class _PlanGraph(msgspec.Struct):
    # the nodes, the biggest part of the text, are skipped at msgspec's scanning speed
    tensor_values: dict[str, msgspec.Raw] = {}
    sym_int_values: dict[str, msgspec.Raw] = {}
    sym_float_values: dict[str, msgspec.Raw] = {}
    sym_bool_values: dict[str, msgspec.Raw] = {}


class _PlanModule(msgspec.Struct):
    graph: _PlanGraph | None = None
    signature: msgspec.Raw = msgspec.Raw()  # (empty: absent; Raw takes no union)


class _PlanDocument(msgspec.Struct):
    graph_module: _PlanModule | None = None
    range_constraints: msgspec.Raw = msgspec.Raw()


class _DecodedOnGet(Mapping[str, Any]):
    """A record table whose entries are decoded when looked up (plan_inputs reads
    the few of the user inputs, out of one per value the graph defines)."""

    def __init__(self, raw: dict[str, msgspec.Raw]) -> None:
        self._raw = raw

    def __getitem__(self, name: str) -> Any:
        return orjson.loads(memoryview(self._raw[name]))

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def plan_document(text: bytes | bytearray | memoryview) -> dict[str, Any] | None:
    """What plan_inputs reads of a program's JSON (ranges, the signature, the value
    records), decoded without the nodes: the window plans the inputs of a 100k-node
    program in a fraction of a full parse's time and memory (~1 s and 1.3 GB). None
    where msgspec does not take the text (an old torch's bare `Infinity` tokens):
    the caller reads it whole (Archive.program_json). The text must be one that
    opened (Archive.program vetted its size and nesting)."""
    try:
        top = msgspec.json.decode(text, type=_PlanDocument)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    doc: dict[str, Any] = {}
    if top.range_constraints:
        doc["range_constraints"] = orjson.loads(memoryview(top.range_constraints))
    gm = top.graph_module
    if gm is not None:
        module: dict[str, Any] = {}
        doc["graph_module"] = module
        if gm.signature:
            module["signature"] = orjson.loads(memoryview(gm.signature))
        if gm.graph is not None:
            module["graph"] = {key: _DecodedOnGet(getattr(gm.graph, key))
                               for key in _PlanGraph.__struct_fields__}
    return doc


def plan_programs(docs: dict[str, dict[str, Any]], dims: dict[str, int] | None = None,
                  shapes: dict[str, tuple[int, ...]] | None = None) -> dict[str, InputPlan]:
    """Plans for several programs. A --dim or --input must fit at least one of them
    (one spec line is shared, and each program ignores what it does not have)."""
    dims, shapes = dims or {}, shapes or {}
    if len(docs) == 1:
        ((name, doc),) = docs.items()
        return {name: plan_inputs(doc, name, dims, shapes)}
    plans = {name: plan_inputs(doc, name, dims, shapes, strict=False) for name, doc in docs.items()}
    for sym in dims:
        if not any(sym in p.symbols for p in plans.values()):
            raise InputSpecError(f"--dim {sym}: no program ({', '.join(docs)}) has a symbol "
                                 "of that name (`pt2-inspector list` shows them)")
    for name in shapes:
        if not any(name in p.by_name() for p in plans.values()):
            raise InputSpecError(f"--input {name}: no program ({', '.join(docs)}) has an "
                                 "input of that name")
    return plans


def _tree(text: Any) -> object | None:
    if not isinstance(text, str):
        return None
    try:
        return parse_srepr(text)
    except ExprSyntaxError:
        return None


def _free_symbols(tree: object) -> set[str]:
    out: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, Call):
            name = _symbol_name(node)
            if name is not None:
                out.add(name)
            else:
                stack.extend(node.args)
    return out


def _sizes_text(ss: list[_Size]) -> str:
    return "[" + ", ".join(str(s.static) if s.static is not None else _short(s) for s in ss) + "]"


def _short(s: _Size) -> str:
    name = _symbol_name(s.tree)
    return name if name is not None else "expr"


def _evaluate_shape(name: str, ss: list[_Size], env: dict[str, int],
                    given: tuple[int, ...] | None, where: str) -> tuple[int, ...]:
    out: list[int] = []
    for i, s in enumerate(ss):
        if s.static is not None:
            out.append(s.static)
            continue
        try:
            value = _as_int(_eval(s.tree, env), s.text)
        except _Unresolved as exc:  # cannot happen: every free symbol got a value
            raise InputSpecError(f"{where}, input {name!r}: symbol {exc.symbol} has no value "
                                 f"(set it with --dim {exc.symbol}=N)") from None
        except (ExprSyntaxError, ZeroDivisionError, OverflowError) as exc:
            raise InputSpecError(f"{where}, input {name!r}: size {i} cannot be computed "
                                 f"({exc}); give the shape with --input {name}=...") from None
        if given is not None and given[i] != value:
            syms = ", ".join(f"{k}={env[k]}" for k in sorted(_free_symbols(s.tree)))
            raise InputSpecError(f"--input {name}: dimension {i} is an expression of {syms}, "
                                 f"which makes it {value}, not {given[i]} (set the symbols "
                                 "with --dim instead)")
        if value < 0:
            raise InputSpecError(f"{where}, input {name!r}: size {i} comes out negative ({value})")
        out.append(value)
    n = 1
    for v in out:
        n *= v
    if n > MAX_ELEMENTS:
        raise InputSpecError(f"{where}, input {name!r}: shape {'x'.join(map(str, out))} has "
                             f"{n:,} elements, over the limit of {MAX_ELEMENTS:,}")
    return tuple(out)


def _sym_value(payload: Any, env: dict[str, int], name: str, where: str) -> Any:
    """A symbolic scalar input's value: its expression under the chosen symbols, or
    the constant it was recorded as."""
    sym = sym_scalar(payload)
    if sym is not None:
        if sym.literal is not None:
            return sym.literal
        if sym.expr is not None:
            tree = _tree(sym.expr)
            if tree is not None:
                try:
                    value = _eval(tree, env)
                    return int(value) if isinstance(value, Fraction) and value == int(value) \
                        else value if not isinstance(value, Fraction) else float(value)
                except (_Unresolved, ExprSyntaxError, ZeroDivisionError):
                    pass
    raise InputSpecError(f"{where}, input {name!r}: its value cannot be worked out from the "
                         "program")


def plan_archive_inputs(archive: Any, names: list[str], dims: tuple[str, ...] | list[str],
                        inputs: tuple[str, ...] | list[str]) -> dict[str, InputPlan]:
    """The inputs `check`/`profile` would make for programs `names` of an open
    archive, from the option texts (`--dim`, `--input`). Reads program JSON: run
    it off the GUI thread."""
    docs = {}
    for name in names:
        archive.program(name)  # the vetted parse first (cached): its limits hold for the text
        docs[name] = plan_document(archive.program_text(name)) or archive.program_json(name)
    return plan_programs(docs, parse_dims(list(dims)), parse_shapes(list(inputs)))
