"""The check job: would each program run on DEV? A dry run with fake tensors.

`python -m inspector.jobs check FILE --device DEV [--program NAME] [--dim S=N]
[--input NAME=AxB] [--seed N] [--trust]`

Each program runs node by node (an FX Interpreter over `ep.graph_module`) under
torch's `FakeTensorMode`: tensors carry dtype, shape and device but no memory, and
ops run their meta kernels, so the device need not exist here and the full-size
model costs no more memory than the tiny one. Weights are loaded as `meta` tensors
(nothing read; load.py `payloads="meta"`) and made fake on DEV with factories
inside the fake mode (`torch.empty_strided(..., device=DEV)`): moving a fake CPU
tensor with `.to("cuda")` fails on a CPU-only torch.

A node that raises is recorded (name, target, listing line, torch's message, the
stack frames export recorded for it) and the run goes on with that node's outputs
made on DEV from the output metadata export recorded (`node.meta["val"]`, its
symbols replaced by the planned sizes), so one pass finds every failing node.
Errors a dry run cannot decide (data-dependent shapes, ops without a fake kernel,
fake kernels that call into the device's runtime, which a CPU-only torch lacks:
training-mode batch norm on cuda) are listed as `unchecked`, not as failures.

result: {"device", "programs": [{"name", "ok", "failures": [{"node", "target",
"line", "message", "frames": [{"file", "line", "function", "code", "user"}],
"literals": [{"node", "line"}]}], "unchecked": [{"node", "target", "line", "message"}],
"inputs": [...], "nodes", "graph_nodes"}]}
A failure's `literals` are the nodes upstream of it whose arguments bake in a device
of another type than DEV (`arange(..., device=cpu)`): the cause `check` names first.
"""

from __future__ import annotations

import argparse
import operator
from typing import Any

from inspector.core.errors import InspectorError
from inspector.core.profile_report import failure_record
from inspector.jobs import graph_spec
from inspector.jobs.graph_run import (Loaded, first_line, load_for_run, target_text, timed_nodes,
                                      vet_for_run)
from inspector.jobs.graph_spec import GraphRunSpec
from inspector.jobs.inputs import flat_arguments, user_values
from inspector.jobs.protocol import Emitter


_NO_BACKEND = "is not linked with support for"
_NOT_COMPILED = "not compiled with"


class CheckError(InspectorError):
    pass


def add_arguments(parser: argparse.ArgumentParser) -> None:
    graph_spec.add_arguments(parser, profile=False)


def main(args: argparse.Namespace, emit: Emitter) -> int:
    spec = GraphRunSpec.from_args(args)
    emit.result(**run(spec, emit))
    return 0


def fake_device(torch: Any, name: str) -> Any:
    """torch.device for DEV, whether or not this machine has it."""
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise CheckError(f"bad device {name!r} ({exc})") from None
    if device.type not in ("cpu", "meta") and device.index is None:
        device = torch.device(device.type, 0)
    return device


def run(spec: GraphRunSpec, emit: Emitter) -> dict[str, Any]:
    vetted = vet_for_run(spec, emit)  # before torch: a refusal costs no import
    emit.progress("import torch", 0.02)
    import torch

    device = fake_device(torch, spec.device)
    loaded = load_for_run(spec, emit, payloads="meta", vetted=vetted, start=0.05, end=0.2)
    results = []
    span = 0.8 / max(len(loaded.names), 1)
    for i, name in enumerate(loaded.names):
        results.append(check_program(torch, loaded, name, device, spec.seed, emit,
                                     0.2 + i * span, span))
    emit.progress("done", 1.0)
    return {"device": str(device), "programs": results}


# --- one program ----------------------------------------------------------------

def _dry_run_limits() -> tuple[type[BaseException], ...]:
    """Errors that say "a dry run cannot tell", not "this fails on the device"."""
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        UnsupportedOperatorException,
    )
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    return (DataDependentOutputException, DynamicOutputShapeException,
            UnsupportedOperatorException, GuardOnDataDependentSymNode)


class _StandIns:
    """Outputs for a node that failed: made on DEV from `node.meta["val"]`, inside the
    fake mode, with the program's symbols replaced by the planned sizes."""

    def __init__(self, torch: Any, device: Any, symbols: dict[str, int], shape_env: Any) -> None:
        self.torch, self.device, self.symbols, self.shape_env = torch, device, symbols, shape_env

    def _concrete(self, value: Any) -> Any:
        torch = self.torch
        if not isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return value
        expr = value.node.expr
        if isinstance(expr, (int, float, bool)):  # a size torch knows as a number
            return expr
        subs = {s: self.symbols[s.name] for s in expr.free_symbols if s.name in self.symbols}
        out = expr.xreplace(subs) if subs else expr
        if getattr(out, "free_symbols", None):  # unbacked (data-dependent): an unknown size of its own
            return self.shape_env.create_unbacked_symint()
        if isinstance(value, torch.SymInt):
            return int(out)
        if isinstance(value, torch.SymBool):
            return bool(out)
        return float(out)

    def make(self, value: Any) -> Any:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            sizes = [self._concrete(s) for s in value.shape]
            if all(isinstance(s, int) for s in sizes):
                strides = [self._concrete(s) for s in value.stride()]
                if all(isinstance(s, int) for s in strides):
                    return torch.empty_strided(sizes, strides, dtype=value.dtype, device=self.device)
            return torch.empty(sizes, dtype=value.dtype, device=self.device)
        if isinstance(value, (list, tuple)):
            return type(value)(self.make(v) for v in value)
        if isinstance(value, dict):
            return {k: self.make(v) for k, v in value.items()}
        return self._concrete(value)


def check_program(torch: Any, loaded: Loaded, name: str, device: Any, seed: int,
                  emit: Emitter, start: float, span: float) -> dict[str, Any]:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch.utils._pytree import tree_map

    ep = loaded.programs[name]
    plan = loaded.plans[name]
    index = loaded.indexes[name]
    shape_env = ShapeEnv()
    # allow_non_fake_inputs: TorchBind objects and the like stay real
    mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
    stand_ins = _StandIns(torch, device, plan.symbols, shape_env)
    failures: list[dict[str, Any]] = []
    unchecked: list[dict[str, Any]] = []
    limits = _dry_run_limits()
    nodes = timed_nodes(ep.graph_module.graph)
    every = max(1, len(nodes) // 20)
    seen = [0]
    upstream = _UpstreamLiterals(torch, ep.graph_module.graph, device)

    def fake_like(kind: str, target: str, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(tuple(value.shape), tuple(value.stride()),
                                       dtype=value.dtype, device=device)
        return value

    def resolve(value: Any) -> Any:
        # At run time torch resolves an index-less device to the current one
        # (cuda -> cuda:0), and the real `_assert_tensor_metadata` compares indices
        # only when both sides have one; the fake kernels compare strictly, and a
        # fake `.to("cuda")` asks the CUDA runtime for the current device, which a
        # CPU-only torch cannot answer. So ops get DEV itself for "DEV's type".
        if isinstance(value, torch.device) and value.type == device.type and value.index is None:
            return device
        return value

    class DryRun(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            if n.op in ("placeholder", "output"):
                return super().run_node(n)
            seen[0] += 1
            if seen[0] % every == 0:
                emit.progress(f"check {name}: node {seen[0]}/{len(nodes)}",
                              start + span * seen[0] / len(nodes))
            try:
                with self._set_current_node(n):
                    args, kwargs = self.fetch_args_kwargs_from_env(n)
                    args, kwargs = tree_map(resolve, (args, kwargs))
                    return getattr(self, n.op)(n.target, args, kwargs)
            except limits as exc:
                unchecked.append({"node": n.name, "target": target_text(n),
                                  "line": index[n.name].line if n.name in index else None,
                                  "message": first_line(f"{type(exc).__name__}: {exc}")})
            except Exception as exc:  # noqa: BLE001 - torch's error is the finding
                if _NO_BACKEND in str(exc) or _NOT_COMPILED in str(exc):
                    # a fake kernel that asks the device's runtime (cudnn batch norm
                    # does), which this CPU-only torch lacks: not a finding
                    unchecked.append({"node": n.name, "target": target_text(n),
                                      "line": index[n.name].line if n.name in index else None,
                                      "message": first_line(f"{type(exc).__name__}: {exc}")})
                    return stand_ins.make(n.meta.get("val"))
                record = failure_record(n.name, index, str(exc).strip() or type(exc).__name__,
                                        target_text(n))
                # the baked device literals this node's inputs come from (torch's graph)
                record["literals"] = [{"node": m, "line": index[m].line if m in index else None}
                                      for m in upstream.of(n)]
                failures.append(record)
            return stand_ins.make(n.meta.get("val"))

    emit.progress(f"check {name}", start)
    with mode:
        users = user_values(torch, plan, device, seed, fake=True)
        flat = flat_arguments(ep, users, fake_like)
    with torch.no_grad(), mode:
        DryRun(ep.graph_module).run(*flat)
    return {
        "name": name,
        "ok": not failures,
        "failures": failures,
        "unchecked": unchecked,
        "inputs": [i.describe() for i in plan.inputs],
        # as `info` counts them: the archive's nodes; the FX graph torch rebuilds adds a
        # getitem node per output of each multi-output op (`graph_nodes` counts those too)
        "nodes": sum(1 for n in nodes if n.target is not operator.getitem),
        "graph_nodes": len(nodes),
    }


class _UpstreamLiterals:
    """For a node: the nodes upstream of it (itself included) whose arguments carry a
    device literal other than DEV's type, in graph order. Computed in one pass over
    the graph the first time it is asked (only when something failed)."""

    def __init__(self, torch: Any, graph: Any, device: Any) -> None:
        self.torch, self.graph, self.device = torch, graph, device
        self._sets: dict[Any, frozenset[str]] | None = None
        self._order: dict[str, int] = {}

    def _off_device(self, node: Any) -> bool:
        found = [False]

        def visit(value: Any) -> None:
            if isinstance(value, self.torch.device) and value.type != self.device.type:
                found[0] = True
            elif isinstance(value, (list, tuple)):
                for v in value:
                    visit(v)
            elif isinstance(value, dict):
                for v in value.values():
                    visit(v)

        visit(node.args)
        visit(node.kwargs)
        return found[0]

    def _build(self) -> dict[Any, frozenset[str]]:
        empty: frozenset[str] = frozenset()
        sets: dict[Any, frozenset[str]] = {}
        for i, node in enumerate(self.graph.nodes):
            self._order[node.name] = i
            parents = [sets.get(p, empty) for p in node.all_input_nodes]
            mine = max(parents, key=len, default=empty)  # share the set when nothing is added
            for other in parents:
                if not other <= mine:
                    mine = mine | other
            if self._off_device(node):
                mine = mine | {node.name}
            sets[node] = mine
        return sets

    def of(self, node: Any) -> list[str]:
        if self._sets is None:
            self._sets = self._build()
        return sorted(self._sets.get(node, frozenset()), key=self._order.__getitem__)
