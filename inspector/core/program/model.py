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
an unknown kind is kept and shown, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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


class Argument(Struct, frozen=True):
    """One serialized Argument union member: kind is e.g. 'as_tensor'."""

    kind: str
    value: Any

    def tensor_names(self) -> list[str]:
        """Names of the graph values this argument reads."""
        return list(value_names(self.kind, self.value))


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
