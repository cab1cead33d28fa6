"""The profile job: time every node of each program on a real device.

`python -m inspector.jobs profile FILE --device DEV [--program NAME] [--dim S=N]
[--input NAME=AxB] [--seed N] [--warmup N] [--repeats N] [--precision fp32|bf16]
[--trust]`

Each program's graph module runs in two ways, alternately, `warmup` times untimed
and then `repeats` times timed (alternating keeps a busy machine's drift out of the
comparison):
- uninstrumented: `ep.graph_module(*args)`, FX's generated code, timed as a whole
  (perf_counter, or CUDA events on CUDA: jobs/timed_generation.Timer);
- instrumented: an FX Interpreter that times each node's call alone (argument
  fetching and bookkeeping stay outside the timed span) with jobs/node_timers.py.
Reported per node: the median over the timed runs; `forward_ms` is the median
uninstrumented run, `instrumented_ms` the median instrumented run (whole), so the
instrumentation's cost is in plain view; `node_ms` is the sum of the node medians.
`runs` keeps each timed run's forward, summed node time and instrumented time: on a
busy machine a preemption lands in some run's forward but in no single node's
median, so compare a run's node sum with a run's forward (like with like). bf16 runs under autocast, as `run` does.

A node that raises stops that program: the result then carries `ok: false` and the
failure, in check's record shape (jobs/check.py).

result: {"device", "device_name", "precision", "warmup", "repeats", "timer", "torch",
"threads", "cpus", "load_average" (the highest 1-minute load seen), "warnings" (one
line per unsteady program: core/timing_spread.py),
"programs": [{"name", "ok", "failures", "inputs": [{"name", "shape", "dtype"}],
"symbols", "forward_ms", "node_ms", "instrumented_ms", "spread": {"forward_ms",
"node_ms", "instrumented_ms": {"p50", "q1", "q3", "min", "max", "n"}}, "warning", "runs": {"forward_ms": [...],
"node_ms": [...], "instrumented_ms": [...]}, "nodes": [{"name", "target",
"ms", "share", "line", "module"}], "modules": [{"path", "class", "ms", "share",
"nodes", "parent"}], "ops": [{"target", "ms", "share", "nodes", "slowest"}], "sources":
[{"file", "line", "function", "code", "user", "ms", "share", "nodes", "slowest"}],
"memory" (with --memory: jobs/memory_measure.py `compare`)}]}
(`slowest`: the name of the row's slowest node)
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from typing import Any

from inspector.core.profile_report import (
    failure_record,
    module_rollup,
    node_records,
    op_rollup,
    source_rollup,
)
from inspector.core.timing_spread import LoadWatch, cpu_count, spread, unsteady_warning
from inspector.jobs import graph_spec
from inspector.jobs.timed_generation import Timer, check_device, device_name
from inspector.jobs.graph_run import Loaded, load_for_run, target_text, timed_nodes, vet_for_run
from inspector.jobs.graph_spec import GraphRunSpec
from inspector.jobs.inputs import flat_arguments, user_values
from inspector.jobs.node_timers import node_timer
from inspector.jobs.protocol import Emitter


def add_arguments(parser: argparse.ArgumentParser) -> None:
    graph_spec.add_arguments(parser, profile=True)


def main(args: argparse.Namespace, emit: Emitter) -> int:
    spec = GraphRunSpec.from_args(args)
    emit.result(**run(spec, emit))
    return 0


class NodeFailed(Exception):
    def __init__(self, node: Any, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.node = node
        self.exc = exc


def run(spec: GraphRunSpec, emit: Emitter) -> dict[str, Any]:
    vetted = vet_for_run(spec, emit)  # before torch: a refusal costs no import
    emit.progress("import torch", 0.02)
    import torch

    device = check_device(torch, spec.device)  # RunError: not on this machine
    if spec.threads:
        torch.set_num_threads(spec.threads)
    # "cpu" payloads: a retargeted archive records cuda, which torch's loader would
    # move to at once; load on the CPU and move below, to DEV.
    loaded = load_for_run(spec, emit, payloads="cpu", vetted=vetted, start=0.05, end=0.15)
    results = []
    span = 0.85 / max(len(loaded.names), 1)
    timer_kind = ""
    load = LoadWatch()
    cpus = cpu_count()
    threads = torch.get_num_threads()
    warnings = []
    for i, name in enumerate(loaded.names):
        load.sample()
        record, timer_kind = profile_program(torch, loaded, name, device, spec, emit,
                                             0.15 + i * span, span)
        load.sample()
        if record["ok"]:
            ratio = record["node_ms"] / record["forward_ms"] if record["forward_ms"] else None
            record["warning"] = unsteady_warning(
                what=f"{name}'s times", runs=record["runs"]["forward_ms"], load=load.peak,
                cpus=cpus, threads=threads if device.type == "cpu" else 1, node_ratio=ratio)
            if record["warning"]:  # in the result: `profile` prints it beside the figures
                warnings.append(record["warning"])
        results.append(record)
        loaded.programs[name] = None  # free its weights before the next program
    emit.progress("done", 1.0)
    return {
        "device": str(device),
        "device_name": device_name(torch, device),
        "precision": spec.precision,
        "warmup": spec.warmup,
        "repeats": spec.repeats,
        "timer": timer_kind,
        "threads": threads,
        "cpus": cpus,
        "load_average": load.peak,
        "warnings": warnings,
        "torch": torch.__version__,
        "programs": results,
    }


def _memory(torch: Any, spec: GraphRunSpec, name: str, gm: Any, nodes: list[Any],
            flat: list[Any], device: Any, context: Any, symbols: dict[str, int],
            index: dict[str, Any]) -> dict[str, Any]:
    """One more run recording each node's memory, beside the static plan at the
    run's sizes (`memory` entry: jobs/memory_measure.py)."""
    from inspector.core.archive import open_archive
    from inspector.core.memory_report import model_for
    from inspector.jobs.memory_measure import compare, measure

    with open_archive(spec.file) as archive:
        model = model_for(archive.program(name), archive)
    estimate = model.plan({k: v for k, v in symbols.items() if k in model.symbols},
                          checked=False)
    method, baseline, measured = measure(torch, gm, nodes, flat, device, context)
    return compare(measured, baseline, method, estimate,
                   {k: getattr(v, "line", None) for k, v in index.items()})


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def profile_program(torch: Any, loaded: Loaded, name: str, device: Any, spec: GraphRunSpec,
                    emit: Emitter, start: float, span: float) -> tuple[dict[str, Any], str]:
    ep = loaded.programs[name]
    plan = loaded.plans[name]
    index = loaded.indexes[name]
    gm = ep.graph_module
    nodes = timed_nodes(gm.graph)
    slots = {n: i for i, n in enumerate(nodes)}
    timer = node_timer(torch, device, len(nodes))
    whole = Timer(torch, device)

    class Timed(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            slot = slots.get(n)
            if slot is None:
                return super().run_node(n)
            with self._set_current_node(n):
                args, kwargs = self.fetch_args_kwargs_from_env(n)
                call = getattr(self, n.op)
                timer.start(slot)
                try:
                    out = call(n.target, args, kwargs)
                except Exception as exc:  # noqa: BLE001 - reported as the node's failure
                    raise NodeFailed(n, exc) from exc
                timer.stop(slot)
            return out

    users = user_values(torch, plan, device, spec.seed)
    flat = flat_arguments(ep, users, lambda kind, target, v: v.to(device)
                          if isinstance(v, torch.Tensor) else v)
    def precision() -> Any:
        return (torch.autocast(device_type=device.type, dtype=torch.bfloat16)
                if spec.precision == "bf16" else contextlib.nullcontext())

    autocast = precision()
    record: dict[str, Any] = {"name": name, "ok": True, "failures": [],
                              "inputs": [i.describe() for i in plan.inputs],
                              "symbols": plan.symbols}
    interpreter = Timed(gm)
    forward: list[float] = []
    instrumented: list[float] = []
    per_node: list[list[float]] = [[] for _ in nodes]
    node_sums: list[float] = []  # per timed run: its nodes' times added up
    total = spec.warmup + spec.repeats
    try:
        with torch.no_grad(), autocast:
            for r in range(total):
                timed = r >= spec.warmup
                label = (f"run {r - spec.warmup + 1}/{spec.repeats}" if timed
                         else f"warm-up {r + 1}/{spec.warmup}")
                emit.progress(f"profile {name}: {label}", start + span * r / total)
                # instrumented first: a failing node is then named, not just raised
                t = whole.start()
                interpreter.run(*flat)
                ms_whole = whole.stop(t)
                node_ms = timer.read()
                t = whole.start()
                gm(*flat)
                ms_forward = whole.stop(t)
                if timed:
                    instrumented.append(ms_whole)
                    forward.append(ms_forward)
                    run_sum = 0.0
                    for i, ms in enumerate(node_ms):
                        if ms is not None:
                            per_node[i].append(ms)
                            run_sum += ms
                    node_sums.append(run_sum)
    except NodeFailed as failed:
        exc = failed.exc
        record["ok"] = False
        record["failures"] = [failure_record(failed.node.name, index,
                                             str(exc).strip() or type(exc).__name__,
                                             target_text(failed.node))]
        record.update(forward_ms=None, node_ms=None, instrumented_ms=None, runs=None,
                      nodes=[], modules=[], ops=[], sources=[])
        return record, timer.kind
    except torch.OutOfMemoryError:
        from inspector.jobs.timed_generation import RunError

        raise RunError(f"out of memory on {device} while profiling {name} "
                       f"(inputs {plan.symbols}; try smaller --dim values)") from None
    if spec.memory:
        emit.progress(f"profile {name}: memory", start + span * 0.98)
        record["memory"] = _memory(torch, spec, name, gm, nodes, flat, device, precision(),
                                   plan.symbols, index)
    timed_list = [(n.name, _median(per_node[i])) for i, n in enumerate(nodes)]
    node_list = node_records(timed_list, index, {n.name: target_text(n) for n in nodes})
    record.update(
        forward_ms=round(_median(forward), 6),
        node_ms=round(sum(ms for _, ms in timed_list), 6),
        instrumented_ms=round(_median(instrumented), 6),
        spread={"forward_ms": spread(forward), "node_ms": spread(node_sums),
                "instrumented_ms": spread(instrumented)},
        # every timed run's own figures, for statistics beyond the medians
        runs={"forward_ms": [round(x, 6) for x in forward],
              "node_ms": [round(x, 6) for x in node_sums],
              "instrumented_ms": [round(x, 6) for x in instrumented]},
        nodes=node_list,
        modules=module_rollup(node_list, index),
        ops=op_rollup(node_list),
        sources=source_rollup(node_list, index),
    )
    return record, timer.kind
