"""The rows of the window's weights view, Qt-free: each weight with the graph input
(placeholder) that carries it and the nodes that read it, and the statistics of
many weights in one cancellable pass (the same rows as `weights --json`).

The window runs `table_stats` and `weight_histogram` on its task pool
(inspector/ui/tasks.py); both only ask `should_cancel` between blocks, so Cancel
stops them within one block of work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from inspector.core.archive import Archive
from inspector.core.program import Program, nodes_mentioning
from inspector.core.weight_stats import (
    Histogram,
    StatsCancelled,
    WeightStats,
    compute_stats,
    histogram,
)
from inspector.core.weights import WeightError, WeightInfo, WeightReader, list_weights

CANCELLED_NOTE = "not computed (cancelled)"


class PlaceholderUsers:
    """The nodes reading each placeholder of a program's top graph, found on the first
    ask, from only the nodes whose argument text names a placeholder (making every
    node took ~1 s at 100k nodes, on the GUI thread when a weight was first selected
    before the listing's stream had made them)."""

    __slots__ = ("_program", "_placeholders", "_map", "_lock")

    def __init__(self, program: Program, placeholders: Iterable[str]) -> None:
        self._program = program
        self._placeholders = frozenset(placeholders)
        self._map: dict[str, list[str]] | None = None
        self._lock = threading.Lock()  # a stats task and the GUI thread may both ask

    def of(self, placeholder: str) -> list[str]:
        with self._lock:
            if self._map is None:
                users: dict[str, list[str]] = {}
                wanted = self._placeholders
                # placeholders are the top graph's inputs: only its nodes read them
                for node in nodes_mentioning(self._program.graph.nodes, wanted):
                    for name in dict.fromkeys(node.input_names()):
                        if name in wanted:
                            users.setdefault(name, []).append(node.name)
                self._map = users
            return self._map.get(placeholder, [])


@dataclass(slots=True)
class WeightEntry:
    info: WeightInfo
    placeholder: str | None  # the top graph's input that carries it (None: unused)
    readers: PlaceholderUsers | None = None

    @property
    def users(self) -> list[str]:
        """The nodes reading the placeholder (computed on first ask, for all entries)."""
        if self.placeholder is None or self.readers is None:
            return []
        return self.readers.of(self.placeholder)


@dataclass(slots=True)
class StatsResult:
    rows: list[dict[str, Any]]  # `weights --json` rows, in the entries' order
    cancelled: bool  # stopped early: the rows not reached carry CANCELLED_NOTE


def weight_entries(archive: Archive, program_name: str, program: Program) -> list[WeightEntry]:
    """Every weight of a program (the configs' order) with its placeholder; the users
    of each placeholder are found when first asked (PlaceholderUsers)."""
    placeholder = {s.target: s.name for s in program.input_specs if s.target}
    readers = PlaceholderUsers(program, placeholder.values())
    return [WeightEntry(info, placeholder.get(info.name), readers)
            for info in list_weights(archive, program_name, program)]


def _base_row(info: WeightInfo, note: str | None) -> dict[str, Any]:
    return {"name": info.name, "kind": info.kind, "dtype": info.dtype_name,
            "shape": list(info.sizes), "bytes": info.nbytes, "stats": None, "note": note}


def table_stats(archive: Archive, weights: list[WeightInfo], *,
                should_cancel: Callable[[], bool] | None = None,
                progress: Callable[[float], None] | None = None) -> StatsResult:
    """Statistics of every weight (rows as `weights --json` prints them: an error
    for one weight is that row's note). Progress is the fraction of bytes done;
    on cancel the rows done so far are kept."""
    total = sum(w.nbytes or 0 for w in weights if w.readable) or 1
    done = 0
    rows: list[dict[str, Any]] = []
    with WeightReader(archive) as reader:
        for i, w in enumerate(weights):
            if should_cancel is not None and should_cancel():
                rows.extend(_base_row(r, r.note or CANCELLED_NOTE) for r in weights[i:])
                return StatsResult(rows, True)
            size = (w.nbytes or 0) if w.readable else 0

            def step(fraction: float, base: int = done, size: int = size) -> None:
                if progress is not None:
                    progress(min(1.0, (base + fraction * size) / total))

            try:
                row = _row(reader, w, should_cancel, step)
            except StatsCancelled:
                rows.extend(_base_row(r, r.note or CANCELLED_NOTE) for r in weights[i:])
                return StatsResult(rows, True)
            rows.append(row)
            done += size
            if progress is not None:
                progress(done / total)
    return StatsResult(rows, False)


def _row(reader: WeightReader, w: WeightInfo, should_cancel: Callable[[], bool] | None,
         step: Callable[[float], None]) -> dict[str, Any]:
    """weight_stats.weight_row, cancellable within a big weight."""
    row = _base_row(w, w.note)
    if not w.readable:
        return row
    try:
        row["stats"] = compute_stats(reader, w, should_cancel=should_cancel,
                                     progress=step).as_dict()
        if reader.record_bytes(w) == 0 and w.numel:
            row["note"] = "empty record: torch.export.load fills it with zeros"
    except WeightError as exc:
        row["note"] = f"error: {exc}"
    return row


def stats_of_row(row: dict[str, Any]) -> WeightStats | None:
    """A row's stats back as WeightStats (for the histogram's range)."""
    s = row.get("stats")
    if s is None:
        return None
    mean = tuple(s["mean"]) if isinstance(s["mean"], list) else s["mean"]
    return WeightStats(0, 0, s["min"], s["max"], mean, s["std"], s["nan"], s["inf"], s["zeros"])


def weight_histogram(archive: Archive, weight: WeightInfo, bins: int = 64, *,
                     stats: WeightStats | None = None,
                     should_cancel: Callable[[], bool] | None = None) -> Histogram:
    """core's histogram of one weight, on its own reader (a task of its own)."""
    with WeightReader(archive) as reader:
        return histogram(reader, weight, bins, stats=stats, should_cancel=should_cancel)
