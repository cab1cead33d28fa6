"""torch's own answer to the memory plan's questions (core/memory_plan.py), for the tests.

`torch_memory(ep, users)` interprets the exported graph module under torch's
FakeTensorMode (with a ShapeEnv) on fake inputs of the given sizes and returns, per
node (placeholders, `getitem`s and the output left out, as the plan counts them),
`sum(numel * element_size)` of what the node returned, and the live bytes at that
node computed independently of the plan: every storage (by `untyped_storage()`
identity, its `nbytes()`) made at or before the node and read (through any tensor
sharing it) at or after it, plus the placeholders' storages (weights, inputs)."""

from __future__ import annotations

import operator
from typing import Any

from inspector.core.inputs import plan_inputs
from inspector.jobs.inputs import flat_arguments, user_values


def _tensors(value: Any, torch: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v, torch)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v, torch)]
    return []


def meta_bytes(node: Any, torch: Any) -> int | None:
    """sum(numel * element_size) of torch's `node.meta["val"]`, at the traced sizes
    (a symbolic numel taken at its hint); None when a size has no hint (unbacked)."""
    from torch.fx.experimental.symbolic_shapes import guarding_hint_or_throw, has_guarding_hint

    total = 0
    for t in _tensors(node.meta.get("val"), torch):
        n = t.numel()
        if isinstance(n, torch.SymInt):
            if not has_guarding_hint(n):
                return None
            n = guarding_hint_or_throw(n)
        total += int(n) * t.element_size()
    return total


def torch_memory(ep: Any, doc: dict[str, Any], name: str, dims: dict[str, int] | None = None
                 ) -> tuple[dict[str, int], list[tuple[str, int]] | None, dict[str, int]]:
    """(node name -> output bytes, [(node name, live bytes)] in program order,
    the symbol values the inputs were made with). A node whose output has a
    data-dependent size is left out of the first map; the curve is None where a
    storage's size is data-dependent."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    plan = plan_inputs(doc, name, dims)
    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)

    def fake_like(kind: str, target: str, value: Any) -> Any:
        # from_tensor keeps storages shared: tied weights (one tensor under two
        # names) stay one storage, as the loaded program has them
        return (mode.from_tensor(value, static_shapes=True) if isinstance(value, torch.Tensor)
                else value)

    with mode:
        users = user_values(torch, plan, torch.device("cpu"), 0, fake=True)
        flat = flat_arguments(ep, users, fake_like)
    graph = ep.graph_module.graph
    # the serialized program's nodes: no getitem (the deserializer adds those) and
    # no get_attr of a control-flow subgraph
    order = [n for n in graph.nodes if n.op not in ("placeholder", "output", "get_attr")
             and n.target is not operator.getitem]
    position = {n: i for i, n in enumerate(order)}
    values: dict[Any, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            values[n] = out
            return out

    with torch.no_grad(), mode:
        Recorder(ep.graph_module).run(*flat)

    keep: list[Any] = []  # every tensor stays alive, so no storage's identity is reused
    born: dict[int, int] = {}  # storage key -> index of the node that made it (-1: placeholder)
    nbytes: dict[int, int] = {}
    last: dict[int, int] = {}

    def key(t: Any) -> int:
        keep.append(t)
        return t.untyped_storage()._cdata

    out_bytes: dict[str, int] = {}
    for n in graph.nodes:
        if n.op == "placeholder":
            for t in _tensors(values[n], torch):
                k = key(t)
                born.setdefault(k, -1)
                nbytes[k] = t.untyped_storage().nbytes()
    for n in order:
        i = position[n]
        outs = _tensors(values[n], torch)
        if all(isinstance(t.numel(), int) for t in outs):
            out_bytes[n.name] = sum(t.numel() * t.element_size() for t in outs)
        for t in outs:
            k = key(t)
            if k not in born:
                born[k] = i
                nbytes[k] = t.untyped_storage().nbytes()
    for n in graph.nodes:
        if n.op in ("placeholder", "get_attr") or n.target is operator.getitem:
            continue
        at = len(order) if n.op == "output" else position[n]
        for inp in n.all_input_nodes:
            for t in _tensors(values.get(inp), torch):
                k = key(t)
                last[k] = max(last.get(k, -1), at)
    if not all(isinstance(b, int) for b in nbytes.values()):
        return out_bytes, None, dict(plan.symbols)  # a data-dependent storage size
    baseline = sum(b for k, b in nbytes.items() if born[k] == -1)
    live: list[tuple[str, int]] = []
    for n in order:
        i = position[n]
        held = sum(b for k, b in nbytes.items()
                   if born[k] != -1 and born[k] <= i <= max(last.get(k, born[k]), born[k]))
        live.append((n.name, baseline + held))
    return out_bytes, live, dict(plan.symbols)
