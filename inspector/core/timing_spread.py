"""How far a timing can be believed: its spread over repeats, and one warning line.

Pure Python (no torch): the run and profile jobs build their results' `spread` and
`warnings` with it, and the CLI and the Run/Profile panels show those as they come.

A figure is only as good as its repeats: a p50 of 1.1 ms from runs whose own p50s
went from 1.0 to 1.9 ms says "busy machine", not "1.1 ms". A warning is raised when
- the runs disagree: (max - min) / median of the per-run figure above WIDE_SPREAD,
- the machine was busy: the 1-minute load average during the run at or above the
  number of CPUs (torch's intra-op threads then spin against the other work),
- (profile) the node times added up are outside NODE_SUM_RANGE x the whole forward:
  the per-node figures then measure the machine more than the nodes;
and it says what to do: one thread, more repeats, an idle machine.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

WIDE_SPREAD = 0.25  # (max - min) / median of the runs' figures
NODE_SUM_RANGE = (0.5, 1.5)  # nodes-sum / forward outside this: per-node times unreliable


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def spread(values: Sequence[float]) -> dict[str, float | int]:
    """{"p50", "q1", "q3", "min", "max", "n"} of `values` (rounded to 4 decimals)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"p50": 0.0, "q1": 0.0, "q3": 0.0, "min": 0.0, "max": 0.0, "n": 0}
    return {"p50": round(percentile(vals, 50), 4), "q1": round(percentile(vals, 25), 4),
            "q3": round(percentile(vals, 75), 4), "min": round(min(vals), 4),
            "max": round(max(vals), 4), "n": len(vals)}


def relative_range(values: Sequence[float]) -> float:
    """(max - min) / median; 0 for fewer than two values or a zero median."""
    if len(values) < 2:
        return 0.0
    mid = percentile(values, 50)
    return (max(values) - min(values)) / mid if mid > 0 else 0.0


def range_text(s: dict[str, float | int], unit: str = "ms") -> str:
    """'1.13 ms (1.10-1.20 over 3 runs)', or '1.13 ms (1 run)'."""
    if int(s["n"]) < 2:
        return f"{float(s['p50']):.2f} {unit} (1 run)"
    return f"{float(s['p50']):.2f} {unit} ({float(s['min']):.2f}-{float(s['max']):.2f} over {s['n']} runs)"


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_average() -> float | None:
    """The 1-minute load average, or None where the system has none (Windows)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


@dataclass
class LoadWatch:
    """The highest 1-minute load average seen between start and the last sample."""

    peak: float | None = None

    def sample(self) -> None:
        now = load_average()
        if now is not None and (self.peak is None or now > self.peak):
            self.peak = now


def unsteady_warning(*, what: str, runs: Sequence[float], load: float | None, cpus: int,
                     threads: int | None, node_ratio: float | None = None) -> str | None:
    """One line saying why `what`'s figures are not to be trusted and what to do, or None.

    `runs`: the per-run figure (each run's p50, each run's forward); `node_ratio`:
    profile's nodes-sum / forward."""
    causes: list[str] = []
    advice: list[str] = []
    rel = relative_range(runs)
    if rel > WIDE_SPREAD:
        causes.append(f"runs differ by {100 * rel:.0f}% ({min(runs):.3g}-{max(runs):.3g} ms "
                      f"over {len(runs)} runs)")
        advice.append("more repeats (--repeats)")
    if load is not None and load >= cpus:
        causes.append(f"load average {load:.1f} on {cpus} CPU{'s' if cpus != 1 else ''}")
        advice.append("an idle machine")
    if node_ratio is not None and not NODE_SUM_RANGE[0] <= node_ratio <= NODE_SUM_RANGE[1]:
        causes.append(f"nodes sum to {node_ratio:.2f}x the forward "
                      f"(expected {NODE_SUM_RANGE[0]}-{NODE_SUM_RANGE[1]}x)")
        advice.append("more repeats (--repeats)")
    if not causes:
        return None
    if threads is None or threads != 1:
        advice.insert(0, "--threads 1")
    todo = ", ".join(dict.fromkeys(advice))  # in order, once each
    return f"{what} unsteady: {'; '.join(causes)}; for figures to trust use {todo}"
