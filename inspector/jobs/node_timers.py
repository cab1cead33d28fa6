"""Per-node timers for the profile job: perf_counter on the CPU, CUDA events on CUDA.

Both have one interface: `start(i)` / `stop(i)` around node i's call, `read()` after
the run -> milliseconds per node index (None for a node that did not run).

Why CUDA events (not torch.profiler kernels attributed to nodes): an event pair is
recorded on the stream around each node's launches, so the time between them is
what the stream spent on that node: its kernels, and the gaps the host left while
launching them. Summed over the nodes that is the forward's stream time, so per-node
times add up to the uninstrumented forward as the CPU timer's do, and the report's
shares mean the same thing on both devices. torch.profiler gives pure kernel time
(no launch gaps, so a launch-bound decoder step would look idle), needs its
correlation ids joined back to nodes through record_function ranges, and costs far
more per node (a range and a trace event each, plus the trace processing after the
run). The cost of an event pair is two `cudaEventRecord` calls (a few microseconds
of host time, no device sync); it shows up as `instrumented_ms - forward_ms` in the
report. Reading all events waits for the stream once, after the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

PERF_COUNTER = "perf_counter"
CUDA_EVENTS = "cuda events"


class PerfCounterTimer:
    """Host clock around each node. `sync` (mps) waits for the device before each
    reading so a node's queued work counts for that node."""

    kind = PERF_COUNTER

    def __init__(self, count: int, sync: Callable[[], None] | None = None) -> None:
        self._ms: list[float | None] = [None] * count
        self._sync = sync
        self._t0 = 0.0

    def start(self, i: int) -> None:
        if self._sync is not None:
            self._sync()
        self._t0 = time.perf_counter()

    def stop(self, i: int) -> None:
        if self._sync is not None:
            self._sync()
        self._ms[i] = (time.perf_counter() - self._t0) * 1000.0

    def read(self) -> list[float | None]:
        out = self._ms
        self._ms = [None] * len(out)
        return out


class CudaEventTimer:
    """A pair of CUDA events per node, created once and reused for every run."""

    kind = CUDA_EVENTS

    def __init__(self, count: int, event_factory: Callable[[], Any],
                 synchronize: Callable[[], None]) -> None:
        self._starts = [event_factory() for _ in range(count)]
        self._ends = [event_factory() for _ in range(count)]
        self._ran = [False] * count
        self._synchronize = synchronize

    def start(self, i: int) -> None:
        self._starts[i].record()

    def stop(self, i: int) -> None:
        self._ends[i].record()
        self._ran[i] = True

    def read(self) -> list[float | None]:
        self._synchronize()  # once: every end event has completed after this
        out = [float(s.elapsed_time(e)) if ran else None
               for s, e, ran in zip(self._starts, self._ends, self._ran)]
        self._ran = [False] * len(self._ran)
        return out


def node_timer(torch: Any, device: Any, count: int) -> PerfCounterTimer | CudaEventTimer:
    if device.type == "cuda":
        return CudaEventTimer(count, lambda: torch.cuda.Event(enable_timing=True),
                              torch.cuda.synchronize)
    if device.type == "mps":
        return PerfCounterTimer(count, torch.mps.synchronize)
    return PerfCounterTimer(count)
