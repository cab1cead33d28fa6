"""The Run panel's runs and their results files, Qt-free.

A `RunRecord` is one timed generation: its options (the run job's spec), its
per-token latencies (core/latency_series.py), the job's result once it ended.
`results_csv` / `results_json` are what Save results writes: a row per token, or
each run's options, samples and result.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from inspector.core.latency_series import LatencySeries


class RunOptions(Protocol):
    """What a record needs of the run job's spec (inspector.jobs.spec.RunSpec)."""

    device: str
    mode: str
    compile: bool
    precision: str
    batch: int


@dataclass(eq=False)
class RunRecord:
    spec: Any  # RunOptions: the RunSpec the run was started with
    series: LatencySeries
    result: dict[str, Any] | None = None
    state: str = "running"  # running, done, failed, stopped
    repeats: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.series.label


def run_label(spec: RunOptions) -> str:
    mode = spec.mode + (" + compile" if spec.compile else "")
    return f"{mode}, {spec.precision}, {spec.device}, batch {spec.batch}"


def results_csv(records: Sequence[RunRecord]) -> bytes:
    """A row per token of every run: its options, repeat, step and ms."""
    text = io.StringIO(newline="")
    w = csv.writer(text)
    w.writerow(["run", "label", "device", "mode", "compile", "precision", "batch",
                "repeat", "step", "ms"])
    for i, rec in enumerate(records):
        s = rec.spec
        for rep, step, ms in zip(rec.repeats, rec.steps, rec.series.values(), strict=False):
            w.writerow([i + 1, rec.label, s.device, s.mode, int(s.compile),
                        s.precision, s.batch, rep, step, f"{ms:.4f}"])
    return text.getvalue().encode("utf-8")


def results_json(records: Sequence[RunRecord]) -> bytes:
    """Each run's label, state, options (never `trust`), samples and result."""
    doc = [{"label": rec.label, "state": rec.state,
            "options": {k: v for k, v in vars(rec.spec).items() if k != "trust"},
            "per_token_ms": [round(float(x), 4) for x in rec.series.values()],
            "result": rec.result} for rec in records]
    return json.dumps(doc, indent=1).encode("utf-8")
