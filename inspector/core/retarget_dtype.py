"""`retarget --dtype bf16|fp16`: an archive a bf16 (fp16) deployment can load, without torch.

What changes, per program (the plan is core/dtype_literals.py's, shared with the
numerics job's `--precision` candidate):
- the frozen dtype literals of the top graph's nodes (`as_scalar_type` arguments),
  the model's own casts kept;
- the recorded dtype of every value whose dtype the plan changes (`tensor_values`),
  graph inputs included;
- the weights and tensor constants of a source dtype (fp32, fp64): their configs'
  `tensor_meta.dtype` and their raw bytes, converted here with numpy as torch's
  `Tensor.to` converts (round to nearest even; NaN stays NaN). fp64 goes to bf16
  through fp32 (two roundings: torch rounds once; fp64 weights are rare).
Pickled weights, sample inputs and control-flow subgraphs are left as they are
(said in the notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inspector.core.dtype_literals import BFLOAT16, FLOAT16, FLOAT32, FLOAT64, PRECISIONS, plan_program
from inspector.core.errors import InspectorError
from inspector.core.program import Program

_NUMPY = {FLOAT32: "<f4", FLOAT64: "<f8"}


class DtypeRetargetError(InspectorError):
    pass


@dataclass
class DtypeChange:
    literals: int = 0  # node dtype arguments rewritten
    kept: int = 0  # the model's own casts left as they were
    values: int = 0  # tensor_values whose dtype changed
    payloads: int = 0  # weight/constant entries now of the new dtype
    blobs: set[str] = field(default_factory=set)  # raw records to convert


def precision_code(name: str) -> int:
    if name not in PRECISIONS:
        raise DtypeRetargetError(f"bad dtype {name!r} (bf16 or fp16)")
    return PRECISIONS[name]


def rewrite_program_dtypes(doc: dict[str, Any], program: Program, to: int,
                           change: DtypeChange) -> None:
    """Apply the plan to the program's JSON, in place (the top graph)."""
    plan = plan_program(program, to)
    graph = doc["graph_module"]["graph"]
    nodes = graph.get("nodes") or []
    for raw, node in zip(nodes, program.graph.nodes):
        for inp in raw.get("inputs") or []:
            key = (node.name, inp.get("name"))
            arg = inp.get("arg")
            if key in plan.rewrites and isinstance(arg, dict) and "as_scalar_type" in arg:
                arg["as_scalar_type"] = plan.rewrites[key]
                change.literals += 1
    change.kept += len(plan.kept())
    values = graph.get("tensor_values") or {}
    for name, code in {**plan.input_dtypes, **plan.value_dtypes}.items():
        meta = values.get(name)
        if isinstance(meta, dict) and meta.get("dtype") != code:
            meta["dtype"] = code
            change.values += 1


def rewrite_payload_config(doc: dict[str, Any], to: int, change: DtypeChange) -> None:
    """The weights/constants config: entries of a source dtype become `to`, their
    raw records are marked for conversion (pickled ones are left)."""
    for entry in (doc.get("config") or {}).values():
        if not isinstance(entry, dict) or entry.get("use_pickle"):
            continue
        meta = entry.get("tensor_meta")
        if not isinstance(meta, dict) or meta.get("dtype") not in _NUMPY:
            continue
        path = entry.get("path_name")
        if not isinstance(path, str):
            continue
        change.blobs.add(f"{path}\0{meta['dtype']}")
        meta["dtype"] = to
        change.payloads += 1


def convert(data: bytes, source: int, to: int) -> bytes:
    """Raw little-endian fp32/fp64 storage bytes -> bf16/fp16 bytes, as torch rounds."""
    width = 8 if source == FLOAT64 else 4
    if len(data) % width:
        raise DtypeRetargetError(f"a weight record of {len(data)} bytes is not whole "
                                 f"{'fp64' if width == 8 else 'fp32'} values")
    values = np.frombuffer(data, dtype=_NUMPY[source])
    if to == FLOAT16:
        with np.errstate(over="ignore"):  # beyond fp16's range is Inf, as in torch
            return values.astype("<f2").tobytes()
    if to != BFLOAT16:
        raise DtypeRetargetError(f"cannot convert to dtype code {to}")
    bits = values.astype("<f4").view("<u4")
    rounded = ((bits.astype(np.uint64) + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16) | 0x0040).astype("<u2")
    return rounded.tobytes()
