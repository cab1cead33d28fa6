"""Typed model of a serialized ExportedProgram (torch/_export/serde/schema.py).

The record classes only; program/parser.py builds them from the parsed JSON of
`models/<name>.json` without torch (nothing from the file is evaluated).
They are msgspec Structs, not dataclasses: the same fields, eq, hash, frozen
and repr, but defined and built in C. Issue 17 (`list` in 0.1 s): decorating
the 20 dataclasses of the `list` path (here, symbolic.py, frames.py,
archive.py, listing.py) took ~20 ms of every start, and their Python
__init__s ~3 ms of making the toy decoder's 795 nodes.
Symbolic sizes are kept as text, rendered by symbolic.py's small grammar.

Arguments stay in their serialized union form (`{"as_tensor": {"name": "x"}}`)
wrapped in `Argument(kind, value)`: torch adds argument kinds every release, so
an unknown kind is kept and shown, never fatal. Argument's accessors (name,
sym, device, items, ...) and ArgKind are the one place that form is decoded.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from msgspec import Struct, field

from inspector.core.dtypes import DTYPE_ABBRS, DTYPE_ITEMSIZE, DTYPE_NAMES

# Highest schema major version whose meaning we know (torch 2.13 writes 8.20).
KNOWN_SCHEMA_MAJOR = 8

POSITIONAL = 1
KEYWORD = 2


class Device(Struct, frozen=True):
    type: str
    index: int | None = None

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


class TensorMeta(Struct):
    dtype: int
    sizes: list[int | str]  # str: a symbolic size, rendered as sympy prints it
    strides: list[int | str]
    device: Device
    requires_grad: bool
    layout: int
    storage_offset: int | str

    @property
    def dtype_abbr(self) -> str:
        # (the fallback text made only when needed: the listing asks once per tensor)
        abbr = DTYPE_ABBRS.get(self.dtype)
        return f"dtype{self.dtype}" if abbr is None else abbr

    @property
    def dtype_name(self) -> str:
        return DTYPE_NAMES.get(self.dtype, f"dtype{self.dtype}")

    def shape_text(self) -> str:
        return "[" + ", ".join(map(str, self.sizes)) + "]"

    def annotation(self) -> str:
        """The `f32[s77, 768]` text print_readable shows for a tensor."""
        return f"{self.dtype_abbr}{self.shape_text()}"

    def numel(self) -> int | None:
        n = 1
        for s in self.sizes:
            if not isinstance(s, int):
                return None
            n *= s
        return n

    def nbytes(self) -> int | None:
        n = self.numel()
        return None if n is None else n * DTYPE_ITEMSIZE.get(self.dtype, 0)


class ArgKind:
    """The members of the serialized Argument union (torch/_export/serde/schema.py),
    named once: code outside core/program dispatches on these, never on the keys."""

    NONE = "as_none"
    TENSOR = "as_tensor"
    TENSORS = "as_tensors"
    INT = "as_int"
    INTS = "as_ints"
    FLOAT = "as_float"
    FLOATS = "as_floats"
    STRING = "as_string"
    STRINGS = "as_strings"
    BOOL = "as_bool"
    BOOLS = "as_bools"
    SYM_INT = "as_sym_int"
    SYM_INTS = "as_sym_ints"
    SYM_FLOAT = "as_sym_float"
    SYM_FLOATS = "as_sym_floats"
    SYM_BOOL = "as_sym_bool"
    SYM_BOOLS = "as_sym_bools"
    SCALAR_TYPE = "as_scalar_type"
    MEMORY_FORMAT = "as_memory_format"
    LAYOUT = "as_layout"
    DEVICE = "as_device"
    GRAPH = "as_graph"
    OPTIONAL_TENSOR = "as_optional_tensor"
    OPTIONAL_TENSORS = "as_optional_tensors"
    CUSTOM_OBJ = "as_custom_obj"
    OPERATOR = "as_operator"
    COMPLEX = "as_complex"
    INT_LISTS = "as_int_lists"
    FLOAT_LISTS = "as_float_lists"
    NESTED_TENSORS = "as_nested_tensors"
    STRING_TO_ARGUMENT = "as_string_to_argument"
    UNKNOWN = "unknown"  # not a one-member object: kept as the file wrote it


K = ArgKind
SCALAR_KINDS = frozenset({K.INT, K.FLOAT, K.BOOL, K.STRING})
LITERAL_KINDS = SCALAR_KINDS | {K.INTS, K.FLOATS, K.BOOLS, K.STRINGS}
SYM_KINDS = frozenset({K.SYM_INT, K.SYM_FLOAT, K.SYM_BOOL})
_SYM_LIST_KINDS = frozenset({K.SYM_INTS, K.SYM_FLOATS, K.SYM_BOOLS})
# Kinds whose values name no graph value: two of them are equal when their
# serialized values are.
PLAIN_KINDS = LITERAL_KINDS | {
    K.NONE, K.SCALAR_TYPE, K.MEMORY_FORMAT, K.LAYOUT, K.DEVICE, K.INT_LISTS,
    K.FLOAT_LISTS, K.COMPLEX, K.OPERATOR}
# Keys under which a serialized value names a graph value (`{"name": "x"}` in a
# tensor argument, `{"as_name": "s0"}` in a symbolic one).
REFERENCE_KEYS = frozenset({"name", "as_name"})
# A list kind -> the kind of each element.
_ELEMENT_KIND = {
    K.TENSORS: K.TENSOR, K.INTS: K.INT, K.FLOATS: K.FLOAT, K.BOOLS: K.BOOL,
    K.STRINGS: K.STRING, K.SYM_INTS: K.SYM_INT, K.SYM_FLOATS: K.SYM_FLOAT,
    K.SYM_BOOLS: K.SYM_BOOL, K.OPTIONAL_TENSORS: K.OPTIONAL_TENSOR,
    K.INT_LISTS: K.INTS, K.FLOAT_LISTS: K.FLOATS, K.NESTED_TENSORS: K.TENSORS,
}
_SYM_LITERALS = ("as_int", "as_float", "as_bool")
# How the serializer writes the floats JSON has no literal for.
FLOAT_WORDS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


class SymArg(NamedTuple):
    """A SymInt/SymFloat/SymBool argument: a symbolic value of the graph by
    name, or a literal export specialized it to. (A tuple: listings make one
    per symbolic argument, and a frozen dataclass costs several times more.)"""

    name: str | None
    literal: int | float | bool | str | None = None  # str: a float word ("Infinity")


class SymScalar(Struct, frozen=True):
    """A serialized SymInt/SymFloat/SymBool value (a tensor size, a symbol's
    record): a literal, or an expression in sympy srepr with the example value
    export traced with (`hint`). Never evaluated here."""

    literal: int | float | bool | None
    expr: str | None = None
    hint: int | float | bool | None = None


def sym_scalar(raw: Any) -> SymScalar | None:
    """`{"as_int": 3}` / `{"as_expr": {"expr_str": ..., "hint": {"as_int": 4}}}` ->
    its SymScalar; None when `raw` is neither (a damaged file)."""
    if type(raw) is not dict or len(raw) != 1:
        return None
    ((kind, value),) = raw.items()
    if kind in _SYM_LITERALS:
        return SymScalar(value) if isinstance(value, (int, float)) else None
    if kind == "as_expr" and isinstance(value, dict):
        text = value.get("expr_str")
        hint = sym_scalar(value.get("hint"))
        return SymScalar(None, text if isinstance(text, str) else None,
                         hint.literal if hint is not None else None)
    return None


def sym_size(raw: Any) -> int | str:
    """A serialized SymInt size as an int, or its expression's srepr text as
    written (not rendered), or "?" when damaged."""
    if type(raw) is int:
        return raw
    sym = sym_scalar(raw)
    if sym is None:
        return "?"
    if type(sym.literal) is int:
        return sym.literal
    return "?" if sym.expr is None else sym.expr


_DEVICES: dict[tuple[str, int | None], Device] = {}  # a program names a handful of devices


def decode_device(raw: Any) -> Device | None:
    """A serialized Device (`{"type": "cuda", "index": 0}`); None if not an object."""
    if type(raw) is not dict:
        return None
    kind, index = raw.get("type", "unknown"), raw.get("index")
    key = (kind if type(kind) is str else str(kind), index if type(index) is int else None)
    device = _DEVICES.get(key)
    if device is None:
        device = Device(*key)
        if len(_DEVICES) < 256:  # shared frozen instances; bounded against hostile input
            _DEVICES[key] = device
    return device


class Argument(Struct, frozen=True):
    """One serialized Argument union member: kind is e.g. 'as_tensor'.

    The accessors below are the one place its value is decoded; each answers
    None (or an empty list) for another kind or a damaged value, so callers
    never look inside `value` themselves."""

    kind: str
    value: Any

    @staticmethod
    def of(raw: Any) -> Argument:
        """A raw `{"as_<kind>": value}` union (as found in the JSON) -> Argument."""
        if type(raw) is dict and len(raw) == 1:
            ((kind, value),) = raw.items()
            return Argument(str(kind), value)
        return Argument(K.UNKNOWN, raw)

    @property
    def type_name(self) -> str:
        """The kind without its `as_` prefix: `sym_int`, `tensors`, `unknown`."""
        return self.kind.removeprefix("as_")

    @property
    def is_none(self) -> bool:
        return self.kind == K.NONE

    def tensor_names(self) -> list[str]:
        """Names of the graph values this argument reads."""
        kind, value = self.kind, self.value
        if kind == "as_tensor" and type(value) is dict:  # most arguments: no generator
            name = value.get("name")
            return [name] if isinstance(name, str) else []
        return list(value_names(kind, value))

    def name(self) -> str | None:
        """The one graph value this argument names: a tensor, a custom object,
        a symbolic value, an optional tensor that is there. None otherwise."""
        kind, value = self.kind, self.value
        if type(value) is not dict:
            return None
        if kind == "as_tensor" or kind == "as_custom_obj":  # literals: 100k-node listings call this
            name = value.get("name")
        elif kind in SYM_KINDS:
            name = value.get("as_name")
        elif kind == K.OPTIONAL_TENSOR:
            inner = value.get("as_tensor")
            name = inner.get("name") if type(inner) is dict else None
        else:
            return None
        return name if type(name) is str else None

    def sym(self) -> SymArg | None:
        """A SymInt/SymFloat/SymBool argument: its symbol's name or its literal."""
        return _sym_arg(self.value) if self.kind in SYM_KINDS else None

    def syms(self) -> list[SymArg | None] | None:
        """A SymInt/SymFloat/SymBool list's elements (None for a damaged one);
        what items() gives, decoded, without an Argument per element."""
        if self.kind not in _SYM_LIST_KINDS or type(self.value) is not list:
            return None
        return [_sym_arg(v) for v in self.value]

    def literal(self) -> Any:
        """The value of an int/float/bool/string argument or a list of them, as
        written (a float may be a word: "Infinity"); None for other kinds."""
        return self.value if self.kind in LITERAL_KINDS else None

    def int_value(self) -> int | None:
        value = self.value
        return value if self.kind == K.INT and type(value) is int else None

    def items(self) -> list[Argument] | None:
        """A list kind's elements as Arguments (`as_tensors` -> `as_tensor`s,
        `as_int_lists` -> `as_ints`, ...); None for another kind or a damaged list."""
        sub = _ELEMENT_KIND.get(self.kind)
        if sub is None or type(self.value) is not list:
            return None
        return [Argument(sub, v) for v in self.value]

    def mapping(self) -> dict[str, Argument] | None:
        """An `as_string_to_argument`'s members, each decoded as an Argument."""
        if self.kind != K.STRING_TO_ARGUMENT or type(self.value) is not dict:
            return None
        return {str(k): Argument.of(v) for k, v in self.value.items()}

    def optional(self) -> Argument | None:
        """An optional tensor's member: an `as_tensor` or an `as_none` Argument."""
        if self.kind != K.OPTIONAL_TENSOR or type(self.value) is not dict or len(self.value) != 1:
            return None
        inner = Argument.of(self.value)
        return inner if inner.kind in (K.TENSOR, K.NONE) else None

    def device(self) -> Device | None:
        """A device argument's Device (`unknown` when damaged: still a device)."""
        if self.kind != K.DEVICE:
            return None
        return decode_device(self.value) or Device("unknown")

    def devices(self) -> list[tuple[str | None, Device]]:
        """The devices this argument holds: its own (key None) or, for a
        string-to-argument map, each member's that is a device (by key)."""
        if self.kind == K.DEVICE:
            return [(None, self.device())]  # type: ignore[list-item]
        members = self.mapping()
        if not members:
            return []
        return [(key, d) for key, arg in members.items() if (d := arg.device()) is not None]

    def graph_name(self) -> str | None:
        """A control-flow subgraph argument's name (its `self.<name>` module)."""
        if self.kind != K.GRAPH or type(self.value) is not dict:
            return None
        name = self.value.get("name")
        return name if type(name) is str else None

    def enum_code(self) -> int | None:
        """A dtype / memory format / layout argument's enum number."""
        if self.kind in (K.SCALAR_TYPE, K.MEMORY_FORMAT, K.LAYOUT) and type(self.value) is int:
            return self.value
        return None

    def complex_value(self) -> complex | None:
        value = self.value
        if self.kind != K.COMPLEX or type(value) is not dict:
            return None
        return complex(_number(value.get("real")), _number(value.get("imag")))


def _sym_arg(value: Any) -> SymArg | None:
    if type(value) is not dict or len(value) != 1:
        return None
    ((key, inner),) = value.items()
    if key == "as_name":
        return SymArg(inner) if type(inner) is str else None
    if key in _SYM_LITERALS:
        return SymArg(None, inner)
    return None


def _number(v: Any) -> float:
    if isinstance(v, str):
        return FLOAT_WORDS.get(v, 0.0)
    return float(v) if isinstance(v, (int, float)) else 0.0


class NamedArgument(Struct, frozen=True):
    name: str
    arg: Argument
    kind: int | None  # 1 positional, 2 keyword, None/0 unknown (old schemas)


class Node(Struct, eq=False):
    index: int  # position in its graph
    name: str
    target: str
    inputs: list[NamedArgument]
    outputs: list[Argument]
    metadata: dict[str, str]
    graph: Graph  # left out of repr (see __repr__)
    is_hop_single_tensor_return: bool | None = None
    # False when the file gave no name (older schemas) and `name` was made up
    # here; the listing then names the node as torch's deserializer would.
    name_in_file: bool = True

    def __repr__(self) -> str:
        # the graph left out, as the dataclass's field(repr=False) did: it holds the node
        return (f"Node(index={self.index!r}, name={self.name!r}, target={self.target!r}, "
                f"inputs={self.inputs!r}, outputs={self.outputs!r}, metadata={self.metadata!r}, "
                f"is_hop_single_tensor_return={self.is_hop_single_tensor_return!r}, "
                f"name_in_file={self.name_in_file!r})")

    @property
    def stack_trace(self) -> str | None:
        return self.metadata.get("stack_trace") or None

    @property
    def nn_module_stack(self) -> str | None:
        return self.metadata.get("nn_module_stack") or None

    def output_names(self) -> list[str]:
        names: list[str] = []
        for out in self.outputs:
            names.extend(out.tensor_names())
        return names

    def input_names(self) -> list[str]:
        names: list[str] = []
        for inp in self.inputs:
            names.extend(inp.arg.tensor_names())
        return names

    @property
    def op_name(self) -> str:
        """`arange` for `torch.ops.aten.arange.default` (used by `op:` search)."""
        parts = self.target.split(".")
        if len(parts) >= 4 and parts[0] == "torch" and parts[1] == "ops":
            return parts[3]
        return parts[-1]


class Graph(Struct, eq=False):
    name: str  # "" for the program's top graph, else the submodule name
    inputs: list[Argument]
    outputs: list[Argument]
    nodes: list[Node]
    tensor_values: dict[str, TensorMeta]
    sym_int_values: dict[str, int | str]
    sym_bool_values: dict[str, bool | str]
    sym_float_values: dict[str, float | str]
    custom_obj_values: dict[str, str]  # name -> class fqn
    is_single_tensor_return: bool
    subgraphs: list[Graph] = field(default_factory=list)
    depth: int = 0
    # Example values of symbolic sizes (`as_expr.hint`), keyed by the rendered
    # expression ("s77", "s77 + 1"): the audit compares literal sizes with them.
    size_hints: dict[str, int] = field(default_factory=dict)

    def walk(self) -> Iterator[Graph]:
        yield self
        for sub in self.subgraphs:
            yield from sub.walk()


class InputSpec(Struct, frozen=True):
    kind: str  # user_input, parameter, buffer, tensor_constant, custom_obj, token, constant_input
    name: str  # the graph input's name
    target: str | None  # parameter / buffer / constant FQN
    persistent: bool | None = None
    # constant_input (and a user_input holding a literal, as older torch
    # wrote): the value, as torch's graph_signature.user_inputs gives it
    constant: bool = False
    value: Any = None


class OutputSpec(Struct, frozen=True):
    kind: str  # user_output, buffer_mutation, user_input_mutation, loss_output, ...
    name: str
    target: str | None


class Range(Struct, frozen=True):
    min: int | None
    max: int | None  # None: unbounded

    def text(self) -> str:
        hi = "inf" if self.max is None else str(self.max)
        lo = "-inf" if self.min is None else str(self.min)
        return f"[{lo}, {hi}]"


class Program(Struct, eq=False):
    name: str
    schema_version: tuple[int, int]
    torch_version: str
    opset_version: dict[str, int]
    verifiers: list[str]
    guards_code: list[str]
    graph: Graph
    input_specs: list[InputSpec]
    output_specs: list[OutputSpec]
    range_constraints: dict[str, Range]
    module_call_graph: list[dict[str, Any]]
    metadata: dict[str, Any]
    unknown_fields: dict[str, Any]
    # every range_constraints key as the file holds it (range_constraints keeps the
    # used ones): the audit's code-in-names rule checks them as the loader does
    range_keys: list[str] = field(default_factory=list)

    def graphs(self) -> Iterator[Graph]:
        return self.graph.walk()

    def all_nodes(self) -> Iterator[Node]:
        for g in self.graphs():
            yield from g.nodes

    @property
    def node_count(self) -> int:
        return sum(len(g.nodes) for g in self.graphs())

    def user_inputs(self) -> list[InputSpec]:
        """The tensor and symbolic user inputs (not the constants)."""
        return [s for s in self.input_specs if s.kind == "user_input" and not s.constant]

    def forward_inputs(self) -> list[InputSpec]:
        """Every argument of the user's forward, constants included, in order:
        what torch's graph_signature.user_inputs lists."""
        return [s for s in self.input_specs if s.kind in ("user_input", "constant_input")]

    def user_outputs(self) -> list[OutputSpec]:
        return [s for s in self.output_specs if s.kind == "user_output"]


def nodes_mentioning(nodes: Sequence[Node], words: Iterable[str]) -> Iterable[Node]:
    """The nodes that may hold one of `words` in their arguments, in graph order: where
    the program keeps its nodes' text (program/lean.py), a superset found without
    making the others (a rule, or a weight's readers, looks at a few of 400,000);
    otherwise all of them."""
    pick = getattr(nodes, "mentioning", None)
    return pick(words) if pick is not None else nodes


def value_names(kind: str, value: Any) -> Iterator[str]:
    """Names of graph values referenced by an argument (tensors, symbols, objects)."""
    if kind in ("as_tensor", "as_custom_obj", "as_optional_tensor_name"):
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            yield value["name"]
    elif kind in ("as_sym_int", "as_sym_bool", "as_sym_float", "as_optional_tensor"):
        if isinstance(value, dict):
            inner = value.get("as_name", value.get("as_tensor"))
            if isinstance(inner, str):
                yield inner
            elif isinstance(inner, dict) and isinstance(inner.get("name"), str):
                yield inner["name"]
    elif kind in ("as_tensors", "as_sym_ints", "as_sym_bools", "as_sym_floats",
                  "as_optional_tensors"):
        if isinstance(value, list):
            sub = {"as_tensors": "as_tensor", "as_sym_ints": "as_sym_int",
                   "as_sym_bools": "as_sym_bool", "as_sym_floats": "as_sym_float",
                   "as_optional_tensors": "as_optional_tensor"}[kind]
            for v in value:
                yield from value_names(sub, v)
    elif kind == "as_nested_tensors" and isinstance(value, list):
        for lst in value:
            if isinstance(lst, list):
                for v in lst:
                    yield from value_names("as_tensor", v)
    elif kind == "as_string_to_argument" and isinstance(value, dict):
        for v in value.values():
            if isinstance(v, dict) and len(v) == 1:
                ((k2, v2),) = v.items()
                yield from value_names(k2, v2)
