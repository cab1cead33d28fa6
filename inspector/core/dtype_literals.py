"""The floating dtypes export froze into a program, and how a lower-precision run
rewrites them.

Export bakes dtypes as it bakes devices: the fp32 example's dtype is written into
`_assert_tensor_metadata` checks, the targets of `to`/`_to_copy` (a `.to(x.device)`
is recorded as `to.dtype_layout(..., dtype=torch.float32)`), factory ops' `dtype`
(`full(..., dtype=dtype)` where `dtype` was the activations' dtype) and reductions'
`dtype`. Run with bf16 weights, the first such assert raises "Tensor dtype mismatch!
Expected: Float, Got: c10::BFloat16".

Which literal is frozen and which is the model's own cast (`x.float()` before a
softmax, `dtype=torch.float32` in a norm) cannot be told from the graph: both read
`torch.float32`. The node's source line can: a line that spells a floating dtype
(`torch.float32`, `torch.float`, `.float()`, `.double()`) asked for it, a line that
computes it (`dtype=x.dtype`, `.to(device)`, `torch.finfo(dtype)`) had it frozen.
So a literal equal to a source dtype (fp32, fp64) is rewritten unless its node's
innermost source line spells a floating dtype; a node without a stack trace is
rewritten (export itself wrote it).

Asserts are not judged by their own line: an assert checks the dtype its argument
has, so its literal follows the argument's dtype in the lower-precision run, which is
propagated here from the graph inputs (floating weights, buffers, constants and
inputs become the target dtype) through every node: a node whose recorded output is
a source dtype gets the target dtype when a rewritten literal made it, and otherwise
as torch's type promotion would (any source-dtype floating input with dimensions
keeps it at the source dtype; otherwise a target-dtype input makes it the target).

Pure Python over the parsed program (no torch): `retarget --dtype`, the audit's
`dtype-literal` rule and the numerics job's `--precision` candidate share it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from inspector.core.dtypes import DTYPE_NAMES
from inspector.core.frames import parse_stack_trace
from inspector.core.program import ArgKind, Graph, Node, Program

FLOAT16, FLOAT32, FLOAT64, BFLOAT16 = 6, 7, 8, 13
PRECISIONS = {"bf16": BFLOAT16, "fp16": FLOAT16}
SOURCE_DTYPES = frozenset({FLOAT32, FLOAT64})
FLOATING = frozenset({FLOAT16, FLOAT32, FLOAT64, BFLOAT16, 29, 30, 31, 32, 33})

ASSERT, CAST, FACTORY, OTHER = "assert", "cast", "factory", "op"
_ASSERT_OPS = ("aten._assert_tensor_metadata.",)
_CAST_OPS = ("aten.to.", "aten._to_copy.", "aten.type_as.", "aten._to_dtype")
# A line that spells a floating dtype asked for it (the model's own cast).
_SPELLED = re.compile(r"torch\.(?:float32|float64|float|double)\b|\.(?:float|double)\(\s*\)"
                      r"|\bdtype\s*=\s*['\"]?float(?:32|64)?\b")


@dataclass(frozen=True, slots=True)
class DtypeLiteral:
    """One floating dtype argument of a node that a lower-precision run must judge."""

    node: str  # the node's name (torch's FX name)
    arg: str  # the argument's name in the op's schema
    target: str  # the op, as the program records it
    dtype: int  # the dtype it records (a schema ScalarType code)
    kind: str  # ASSERT, CAST, FACTORY or OTHER
    kept: bool  # the model's own cast: left as it is
    code: str  # the source line judged ("" without a stack trace)

    @property
    def dtype_name(self) -> str:
        return DTYPE_NAMES.get(self.dtype, f"dtype{self.dtype}")


@dataclass
class DtypePlan:
    """What a run at `to` changes: literal -> new code, and every value's dtype."""

    to: int
    literals: list[DtypeLiteral]
    rewrites: dict[tuple[str, str], int]  # (node, arg) -> new dtype code
    value_dtypes: dict[str, int]  # value name -> its dtype in that run (changed only)
    input_dtypes: dict[str, int]  # graph input name -> its dtype in that run (changed only)

    def kept(self) -> list[DtypeLiteral]:
        return [lit for lit in self.literals if lit.kept]


def kind_of(target: str, arg: str) -> str:
    target = target.removeprefix("torch.ops.")
    if target.startswith(_ASSERT_OPS):
        return ASSERT
    if target.startswith(_CAST_OPS):
        return CAST
    if arg == "dtype" and not target.startswith(("aten.sum", "aten.mean", "aten.cumsum",
                                                  "aten.prod", "aten._softmax",
                                                  "aten.softmax", "aten._log_softmax",
                                                  "aten.log_softmax", "aten.norm")):
        return FACTORY
    return OTHER


def spells_dtype(code: str) -> bool:
    """Whether a source line names a floating dtype itself (the model's own cast)."""
    return bool(_SPELLED.search(code))


def source_line(node: Node) -> str:
    frames = parse_stack_trace(node.stack_trace)
    return frames[-1].code if frames else ""


def _dtype_args(node: Node) -> Iterable[tuple[str, int]]:
    for named in node.inputs:
        arg = named.arg
        if arg.kind == ArgKind.SCALAR_TYPE:
            code = arg.enum_code()
            if code is not None:
                yield named.name, code
        elif arg.kind == ArgKind.OPTIONAL_TENSOR:
            continue


def _tensor_inputs(node: Node) -> list[str]:
    return node.input_names()


def literals_of(node: Node) -> list[DtypeLiteral]:
    """A node's source-dtype literals judged alone: casts and factories by their
    source line, asserts as frozen (plan_program judges asserts by propagation)."""
    out = []
    code = None
    for arg_name, value in _dtype_args(node):
        if value not in SOURCE_DTYPES:
            continue
        kind = kind_of(node.target, arg_name)
        if kind == ASSERT:
            out.append(DtypeLiteral(node.name, arg_name, node.target, value, kind, False, ""))
            continue
        if code is None:
            code = source_line(node)
        out.append(DtypeLiteral(node.name, arg_name, node.target, value, kind,
                                spells_dtype(code), code))
    return out


def plan_program(program: Program, to: int) -> DtypePlan:
    """Judge every floating dtype literal of the program's top graph and propagate the
    dtypes of a run whose floating inputs are `to` (a ScalarType code)."""
    plan = DtypePlan(to, [], {}, {}, {})
    # the top graph only: a control-flow subgraph's node names may repeat the top
    # graph's, and its inputs are the operands of its HOP call
    _plan_graph(program, program.graph, to, plan)
    return plan


def _plan_graph(program: Program, graph: Graph, to: int, plan: DtypePlan) -> None:
    meta = graph.tensor_values
    dtype: dict[str, int] = {name: m.dtype for name, m in meta.items()}
    # graph inputs: floating tensors of a source dtype become `to`
    for arg in graph.inputs:
        for name in arg.tensor_names():
            if dtype.get(name) in SOURCE_DTYPES:
                dtype[name] = to
                plan.input_dtypes[name] = to
    for node in graph.nodes:
        code = None
        rewritten_here = False
        kept_here = False
        for arg_name, value in _dtype_args(node):
            if value not in SOURCE_DTYPES:
                continue
            kind = kind_of(node.target, arg_name)
            if kind == ASSERT:
                # follows its argument: rewritten when the argument is `to`
                args = _tensor_inputs(node)
                follows = bool(args) and dtype.get(args[0]) == to
                lit = DtypeLiteral(node.name, arg_name, node.target, value, kind,
                                   not follows, "")
                plan.literals.append(lit)
                if follows:
                    plan.rewrites[(node.name, arg_name)] = to
                continue
            if code is None:
                code = source_line(node)
            kept = spells_dtype(code)
            plan.literals.append(DtypeLiteral(node.name, arg_name, node.target, value,
                                              kind, kept, code))
            if kept:
                kept_here = True
            else:
                plan.rewrites[(node.name, arg_name)] = to
                rewritten_here = True
        for out in node.output_names():
            recorded = meta.get(out)
            if recorded is None or recorded.dtype not in SOURCE_DTYPES:
                continue
            if rewritten_here:
                new = to
            elif kept_here:
                new = recorded.dtype
            else:
                new = _promoted(node, dtype, meta, to, recorded.dtype)
            if new != recorded.dtype:
                dtype[out] = new
                plan.value_dtypes[out] = new


def _promoted(node: Node, dtype: dict[str, int], meta: dict, to: int, recorded: int) -> int:
    """The output dtype torch's promotion gives from the inputs' dtypes in the run:
    a source-dtype floating input with dimensions keeps the source dtype (a 0-dim
    tensor does not promote a dimensioned one of its category)."""
    floats = [(name, dtype[name]) for name in _tensor_inputs(node)
              if dtype.get(name) in FLOATING]
    if not floats:
        return recorded
    dimensioned = [(n, d) for n, d in floats if meta.get(n) is not None and meta[n].sizes]
    judged = dimensioned or floats
    if any(d in SOURCE_DTYPES for _, d in judged):
        return recorded
    if any(d == to for _, d in judged):
        return to
    return recorded
