"""`profile --memory`: each node's memory measured on the device, beside the static plan.

One extra run of the graph module (after the timed ones, so the recording costs no
timed run anything) through an FX Interpreter that records, around each node's call:

- CUDA: `torch.cuda.memory_allocated()` before and after, and
  `max_memory_allocated()` after a `reset_peak_memory_stats()` before: the caching
  allocator's own count of bytes in live tensors, so the peak while the node runs
  includes its kernels' workspaces and temporaries;
- CPU (and anything else): torch's profiler with `profile_memory=True` and a
  `record_function` range per node; its `[memory]` events (every allocation and
  free, with its time) are replayed in order after the run, so a node's peak is
  the most bytes held at any moment inside its range. The baseline (weights,
  buffers, constants, inputs: allocated before the run) is the bytes of the
  arguments' storages, counted once.

Per node: `measured_bytes` (the peak held while it runs), `allocated_bytes` (held
after minus before: what it leaves behind), beside the plan's (core/memory_plan.py)
`estimated_bytes` (live bytes at the node) and `estimated_new_bytes` (the storages
it makes), and `ratio` = measured / estimated. Where they differ is the allocator's
caching and rounding, kernels' workspaces, or views the plan took for copies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

CUDA_METHOD = "torch.cuda.memory_allocated / max_memory_allocated around each node"
PROFILER_METHOD = "torch.profiler profile_memory=True, a record_function range per node"
_RANGE = "pt2i.memory.node."


def storage_bytes(torch: Any, values: Sequence[Any]) -> int:
    """Bytes of the distinct storages of the tensors in `values`."""
    seen: dict[int, int] = {}
    for v in values:
        if isinstance(v, torch.Tensor) and v.layout == torch.strided:
            s = v.untyped_storage()
            seen[s.data_ptr() or id(s)] = s.nbytes()
    return sum(seen.values())


class _CudaRecorder:
    method = CUDA_METHOD

    def __init__(self, torch: Any, device: Any, count: int) -> None:
        self.torch, self.device = torch, device
        self.before = [0] * count
        self.after = [0] * count
        self.peak = [0] * count
        self.ran = [False] * count
        self.baseline = 0

    @contextlib.contextmanager
    def session(self, flat: Sequence[Any]):  # noqa: ANN201
        self.torch.cuda.synchronize(self.device)
        self.baseline = self.torch.cuda.memory_allocated(self.device)
        yield

    def start(self, i: int) -> None:
        cuda = self.torch.cuda
        self.before[i] = cuda.memory_allocated(self.device)
        cuda.reset_peak_memory_stats(self.device)

    def stop(self, i: int) -> None:
        cuda = self.torch.cuda
        self.after[i] = cuda.memory_allocated(self.device)
        self.peak[i] = cuda.max_memory_allocated(self.device)
        self.ran[i] = True

    def read(self) -> list[tuple[int, int] | None]:
        return [(p, a - b) if ran else None
                for p, a, b, ran in zip(self.peak, self.after, self.before, self.ran)]


class _ProfilerRecorder:
    method = PROFILER_METHOD

    def __init__(self, torch: Any, device: Any, count: int) -> None:
        self.torch = torch
        self.count = count
        self.baseline = 0
        self._open: Any = None
        self._prof: Any = None

    @contextlib.contextmanager
    def session(self, flat: Sequence[Any]):  # noqa: ANN201
        from torch.profiler import ProfilerActivity, profile

        self.baseline = storage_bytes(self.torch, flat)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            yield
        self._prof = prof

    def start(self, i: int) -> None:
        self._open = self.torch.autograd.profiler.record_function(f"{_RANGE}{i}")
        self._open.__enter__()

    def stop(self, i: int) -> None:
        self._open.__exit__(None, None, None)
        self._open = None

    def read(self) -> list[tuple[int, int] | None]:
        events = list(self._prof.profiler.kineto_results.events())
        ranges: dict[int, tuple[int, int]] = {}
        memory: list[tuple[int, int]] = []
        for e in events:
            name = e.name()
            if name == "[memory]":
                memory.append((e.start_ns(), int(e.nbytes())))
            elif name.startswith(_RANGE):
                start = e.start_ns()
                ranges[int(name[len(_RANGE):])] = (start, start + e.duration_ns())
        memory.sort()
        out: list[tuple[int, int] | None] = [None] * self.count
        # replay: held bytes over time; each range's peak and net change
        order = sorted(ranges.items(), key=lambda kv: kv[1][0])
        held = 0
        m = 0
        for i, (start, end) in order:
            while m < len(memory) and memory[m][0] < start:
                held += memory[m][1]
                m += 1
            before = peak = held
            while m < len(memory) and memory[m][0] <= end:
                held += memory[m][1]
                peak = max(peak, held)
                m += 1
            out[i] = (self.baseline + peak, held - before)
        return out


def recorder(torch: Any, device: Any, count: int) -> _CudaRecorder | _ProfilerRecorder:
    return _CudaRecorder(torch, device, count) if device.type == "cuda" else \
        _ProfilerRecorder(torch, device, count)


def measure(torch: Any, gm: Any, nodes: list[Any], flat: list[Any], device: Any,
            context: Any) -> tuple[str, int, dict[str, tuple[int, int]]]:
    """Run `gm` once on `flat` recording each of `nodes`: (method, baseline bytes,
    node name -> (peak bytes while it ran, bytes it left allocated))."""
    slots = {n: i for i, n in enumerate(nodes)}
    rec = recorder(torch, device, len(nodes))

    class Measured(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            slot = slots.get(n)
            if slot is None:
                return super().run_node(n)
            with self._set_current_node(n):
                args, kwargs = self.fetch_args_kwargs_from_env(n)
                call = getattr(self, n.op)
                rec.start(slot)
                try:
                    return call(n.target, args, kwargs)
                finally:
                    rec.stop(slot)

    with torch.no_grad(), context, rec.session(flat):
        out = Measured(gm).run(*flat)
        del out
    read = rec.read()
    return rec.method, rec.baseline, {n.name: r for n, r in zip(nodes, read) if r is not None}


def compare(measured: dict[str, tuple[int, int]], baseline: int, method: str,
            estimate: Any, lines: dict[str, int | None]) -> dict[str, Any]:
    """The `memory` entry of a profiled program: measured beside the plan
    (`estimate`: a core MemoryPlan at the run's sizes)."""
    model = estimate.model
    position = {name: i for i, name in enumerate(model.node_names)}
    rows = []
    for name, (peak, alloc) in measured.items():
        i = position.get(name)
        if i is None:  # a getitem: part of its producer's outputs
            continue
        est = int(estimate.live_bytes[i])
        rows.append({"name": name, "line": lines.get(name), "measured_bytes": int(peak),
                     "allocated_bytes": int(alloc), "estimated_bytes": est,
                     "estimated_new_bytes": int(estimate.new_bytes[i]),
                     "ratio": round(peak / est, 4) if est else None})
    top = max(rows, key=lambda r: r["measured_bytes"], default=None)
    return {
        "method": method,
        "dims": dict(estimate.dims),
        "baseline_bytes": int(baseline),
        "estimated_baseline_bytes": int(estimate.baseline_bytes),
        "peak": {
            "measured_bytes": top["measured_bytes"] if top else baseline,
            "measured_node": top["name"] if top else None,
            "estimated_bytes": int(estimate.peak_bytes),
            "estimated_node": estimate.peak_node(),
            "ratio": (round(top["measured_bytes"] / estimate.peak_bytes, 4)
                      if top and estimate.peak_bytes else None),
        },
        "nodes": rows,
    }
