"""One run's per-token latencies: a growing buffer, its peak and percentiles.

Samples arrive one per generated token, hundreds per second on a GPU: they are
appended to a preallocated numpy buffer (amortised O(1), no Python list of
floats to convert). The Run panel's chart (ui/widgets/latency_chart.py) draws
them; its results files (core/run_results.py) write them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(eq=False)  # one run: compared by identity, never by its buffer
class LatencySeries:
    """One run's samples: ms per token, in arrival order."""

    label: str
    color: str
    ms: np.ndarray = field(default_factory=lambda: np.empty(1024, dtype=np.float64))
    n: int = 0
    peak: float = 0.0  # largest sample so far (fixes the y range without a scan)
    expected: int = 0  # samples the run will send (0 once it ended: only n counts)

    def append(self, value: float) -> None:
        if self.n == len(self.ms):  # double: amortised O(1) appends
            grown = np.empty(len(self.ms) * 2, dtype=np.float64)
            grown[: self.n] = self.ms[: self.n]
            self.ms = grown
        self.ms[self.n] = value
        self.n += 1
        if value > self.peak:
            self.peak = value

    def reserve(self, count: int) -> None:
        if count > len(self.ms):
            grown = np.empty(count, dtype=np.float64)
            grown[: self.n] = self.ms[: self.n]
            self.ms = grown

    def values(self) -> np.ndarray:
        return self.ms[: self.n]

    def percentiles(self) -> tuple[float, float, float]:
        if not self.n:
            return (float("nan"),) * 3
        p = np.percentile(self.values(), (50, 90, 99))
        return float(p[0]), float(p[1]), float(p[2])
