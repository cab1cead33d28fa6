"""The candidate runs of `numerics`, and which candidate node answers which reference node.

Each builder returns a `Candidate`: the graph module to run, its flat arguments, the
device it runs on, a match {reference node name -> candidate node name} (graph
inputs included) and a description for the report.

- precision: a copy of the reference graph module with the frozen dtype literals
  rewritten (inspector/core/dtype_literals.py says which), fed the floating weights,
  buffers, constants and inputs cast to bf16/fp16; every node matches itself.
- on: the same graph module on another device (its weights and inputs moved there);
  on the CPU, the same device with another thread count (a self-check: reductions
  split another way). Every node matches itself.
- decompose: `run_decompositions()` of the program (scaled_dot_product_attention kept
  whole, as `export --decompose` keeps it). A reference node matches the last node
  torch records (`meta["from_node"]`) as made from it; a multi-output node the last
  such node that is not a `getitem`, and its getitems the candidate's getitems of the
  same index.
- with: a program of another archive, matched as `diff` matches nodes
  (core/node_match.py: same origin and name first, then renames in order); graph
  inputs as the diff matches signature entries, so weights of the same name are
  compared too.
"""

from __future__ import annotations

import copy
import operator
from dataclasses import dataclass, field
from typing import Any

from inspector.core.dtype_literals import PRECISIONS, SOURCE_DTYPES, plan_program
from inspector.core.dtypes import DTYPE_NAMES
from inspector.core.errors import InspectorError
from inspector.core.program import Program
from inspector.jobs.inputs import flat_arguments


class CandidateError(InspectorError):
    code = "spec"


@dataclass
class Candidate:
    gm: Any
    args: list[Any]
    device: Any
    match: dict[str, str]
    description: dict[str, Any]
    threads: int = 0  # CPU threads of this run (0: as the reference)
    steps: Any = None  # (node, value) pairs made otherwise than by running `gm` (eager)
    notes: list[str] = field(default_factory=list)


def _placeholders(gm: Any) -> list[Any]:
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def identity(gm: Any) -> dict[str, str]:
    return {n.name: n.name for n in gm.graph.nodes if n.op != "output"}


# --- precision ------------------------------------------------------------------------

def precision(torch: Any, ep: Any, program: Program, users: dict[str, Any], device: Any,
              name: str) -> Candidate:
    """The program at bf16/fp16 (`name`): weights and inputs cast, literals rewritten."""
    to = PRECISIONS[name]
    dtype = getattr(torch, DTYPE_NAMES[to])
    plan = plan_program(program, to)
    gm = copy.deepcopy(ep.graph_module)
    rewritten = _apply_rewrites(torch, gm, plan.rewrites, dtype)
    sources = {getattr(torch, DTYPE_NAMES[c]) for c in SOURCE_DTYPES}

    def cast(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            value = value.to(device)
            if value.dtype in sources:
                value = value.to(dtype)
        return value

    cast_users = {k: cast(v) for k, v in users.items()}
    args = flat_arguments(ep, cast_users, lambda kind, target, v: cast(v))
    kept = plan.kept()
    return Candidate(gm, args, device, identity(gm), {
        "kind": "precision", "precision": name, "device": str(device),
        "dtype_literals": {"rewritten": rewritten, "kept": len(kept),
                           "kept_nodes": [f"{k.node}.{k.arg}" for k in kept[:20]]},
    })


def _apply_rewrites(torch: Any, gm: Any, rewrites: dict[tuple[str, str], int],
                    dtype: Any) -> int:
    """Set each planned (node, argument) of the FX graph to `dtype`: a keyword, or a
    positional argument found by the op's schema."""
    nodes = {n.name: n for n in gm.graph.nodes}
    done = 0
    for (node_name, arg), _code in rewrites.items():
        node = nodes.get(node_name)
        if node is None:
            continue
        if arg in node.kwargs:
            kwargs = dict(node.kwargs)
            kwargs[arg] = dtype
            node.kwargs = kwargs
            done += 1
            continue
        schema = getattr(node.target, "_schema", None)
        names = [a.name for a in schema.arguments] if schema is not None else []
        if arg in names and names.index(arg) < len(node.args):
            args = list(node.args)
            args[names.index(arg)] = dtype
            node.args = tuple(args)
            done += 1
    gm.recompile()
    return done


# --- on another device / thread count ----------------------------------------------

def on_device(torch: Any, ep: Any, users: dict[str, Any], device: Any, ref_device: Any,
              ref_args: list[Any], ref_threads: int) -> Candidate:
    gm = ep.graph_module
    if device == ref_device:
        # the CPU self-check: the same tensors, another thread count
        threads = 1 if ref_threads > 1 else 2
        return Candidate(gm, ref_args, device, identity(gm), {
            "kind": "on", "device": str(device), "threads": threads}, threads=threads)
    moved = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in users.items()}
    args = flat_arguments(ep, moved, lambda kind, target, v: v.to(device)
                          if isinstance(v, torch.Tensor) else v)
    gm = copy.deepcopy(gm)
    literals = move_device_literals(torch, gm, ref_device, device)
    return Candidate(gm, args, device, identity(gm), {"kind": "on", "device": str(device),
                                                      "device_literals": literals})


def move_device_literals(torch: Any, gm: Any, old: Any, new: Any) -> int:
    """The device literals export baked in (`device=` keywords, `to.device`'s target)
    moved from `old` to `new` in a copy of the graph, as torch's move_to_device_pass
    moves them (that pass also moves the weights, in place: here they are moved as
    the candidate's arguments, and the reference's stay where they are)."""
    moved = 0

    def fix(value: Any) -> Any:
        nonlocal moved
        dev = torch.device(value) if isinstance(value, (str, torch.device)) else None
        if dev is not None and dev.type == old.type and (dev.index or 0) == (old.index or 0):
            moved += 1
            return new
        return value

    for module in gm.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            if "device" in node.kwargs:
                kwargs = dict(node.kwargs)
                kwargs["device"] = fix(kwargs["device"])
                node.kwargs = kwargs
            if node.op == "call_function" and node.target is torch.ops.aten.to.device:
                args = list(node.args)
                args[1] = fix(args[1])
                node.args = tuple(args)
        module.recompile()
    return moved


# --- run_decompositions ---------------------------------------------------------------

def decompositions(torch: Any) -> Any:
    table = torch.export.default_decompositions()
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    return table


def decompose(torch: Any, ep: Any, users: dict[str, Any], device: Any, name: str) -> Candidate:
    try:
        dep = ep.run_decompositions(decompositions(torch))
    except Exception as exc:  # noqa: BLE001 - torch's own failure, told plainly
        raise CandidateError(f"run_decompositions() failed on program {name!r} "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]})") from None
    moved = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in users.items()}
    args = flat_arguments(dep, moved, lambda kind, target, v: v.to(device)
                          if isinstance(v, torch.Tensor) else v)
    match = decomposition_match(ep.graph_module, dep.graph_module)
    return Candidate(dep.graph_module, args, device, match, {
        "kind": "decompose", "device": str(device),
        "nodes": sum(1 for n in dep.graph_module.graph.nodes if n.op == "call_function")})


def origin_name(node: Any, names: set[str]) -> str | None:
    """The reference node this candidate node was made from (`from_node`, outermost
    record first), or None."""
    sources = node.meta.get("from_node") or []
    for source in reversed(sources):
        while source is not None:
            if source.name in names:
                return source.name
            source = source.from_node[-1] if source.from_node else None
    return None


def decomposition_match(ref_gm: Any, cand_gm: Any) -> dict[str, str]:
    ref_nodes = [n for n in ref_gm.graph.nodes if n.op != "output"]
    names = {n.name for n in ref_nodes}
    match: dict[str, str] = {}
    for r, c in zip(_placeholders(ref_gm), _placeholders(cand_gm)):
        match[r.name] = c.name
    last: dict[str, Any] = {}
    last_producer: dict[str, Any] = {}
    getitems: dict[tuple[str, int], str] = {}
    for node in cand_gm.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem and isinstance(node.args[1], int):
            getitems[(node.args[0].name, node.args[1])] = node.name
        origin = origin_name(node, names)
        if origin is None:
            continue
        last[origin] = node
        if node.target is not operator.getitem:
            last_producer[origin] = node
    for r in ref_nodes:
        if r.op != "call_function" or r.name in match:
            continue
        if r.target is operator.getitem and isinstance(r.args[1], int):
            parent = match.get(r.args[0].name)
            if parent is not None and (parent, r.args[1]) in getitems:
                match[r.name] = getitems[(parent, r.args[1])]
                continue
        val = r.meta.get("val")
        multi = isinstance(val, (tuple, list))
        chosen = last_producer.get(r.name) if multi else last.get(r.name)
        if chosen is not None:
            match[r.name] = chosen.name
    return match


# --- another archive -----------------------------------------------------------------

def with_archive(torch: Any, other_ep: Any, other_program: Program, program: Program,
                 users: dict[str, Any], plan_inputs: list[Any], device: Any,
                 path: str, other_name: str) -> Candidate:
    from inspector.core.node_match import match_programs

    m = match_programs(program, other_program)
    match: dict[str, str] = {}
    for pair in m.inputs:
        match[pair.a.name] = pair.b.name
    for pair in m.pairs():
        if pair.a.graph.name != "":
            continue
        match[pair.a.name] = pair.b.name
        for a_out, b_out in zip(pair.a.output_names(), pair.b.output_names()):
            match.setdefault(a_out, b_out)
    # the other program's user inputs, in order, get our values (cast to its dtypes)
    wanted = {n.name: n.meta.get("val") for n in _placeholders(other_ep.graph_module)}
    other_users: dict[str, Any] = {}
    ours = [users[i.name] for i in plan_inputs]
    theirs = [s for s in other_ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"
              and not hasattr(s.arg, "value")]
    if len(ours) != len(theirs):
        raise CandidateError(f"program {other_name!r} of {path} takes {len(theirs)} inputs, "
                             f"this one {len(ours)}")
    for value, spec in zip(ours, theirs):
        val = wanted.get(spec.arg.name)
        if isinstance(value, torch.Tensor):
            value = value.to(device)
            if val is not None and hasattr(val, "dtype") and val.dtype != value.dtype:
                value = value.to(val.dtype)
        other_users[spec.arg.name] = value
    args = flat_arguments(other_ep, other_users, lambda kind, target, v: v.to(device)
                          if isinstance(v, torch.Tensor) else v)
    return Candidate(other_ep.graph_module, args, device, match, {
        "kind": "with", "archive": path, "program": other_name, "device": str(device),
        "matched": sum(1 for _ in m.pairs()), "removed": sum(len(g.removed) for g in m.graphs),
        "added": sum(len(g.added) for g in m.graphs)})
