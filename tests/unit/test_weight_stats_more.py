"""weight_stats, the parts test_weight_stats_blocks.py leaves open (issue 28, mutation
testing): a reader that cuts each weight into blocks of the size asked for, blocks
longer than the shared scratch arrays, the shifted pass's mean to float64 accuracy,
merges after a one-value block, cancels and messages, warnings a user would see,
and program_weights over committed torch archives (tests/data). Every figure is compared with
numpy or torch computed independently on the same values."""

from __future__ import annotations

import json
import math
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from inspector.core.archive import open_archive
from inspector.core.weight_stats import (
    StatsCancelled,
    compute_stats,
    histogram,
    program_weights,
    stats_steps,
    weight_row,
)
from inspector.core.weights import BLOCK_ELEMENTS, WeightInfo

F32, F64, BOOL, C64, C128 = 7, 8, 12, 10, 11
DATA = Path(__file__).resolve().parents[1] / "data"
rng = np.random.default_rng(2028)


def weight(code: int, n: int, name: str = "w") -> WeightInfo:
    return WeightInfo("p", name, "parameter", f"data/{name}", code, (n,), (1,), 0)


class ChunkReader:
    """Each weight's values (looked up by its name) in blocks of at most
    `max_elements`, as WeightReader.blocks cuts them; counts the blocks handed out."""

    def __init__(self, values: dict[str, np.ndarray], records: dict[str, int] | None = None) -> None:
        self.values, self.records, self.handed = values, records or {}, 0

    def blocks(self, weight: WeightInfo, max_elements: int = BLOCK_ELEMENTS) -> Any:
        x = self.values[weight.name]
        for start in range(0, x.size, max_elements):
            self.handed += 1
            yield x[start:start + max_elements].copy()

    def record_bytes(self, weight: WeightInfo) -> int:
        return self.records[weight.name]


def torch_stats(x: np.ndarray) -> dict[str, float]:
    t = torch.from_numpy(np.asarray(x, np.float64))
    return {"min": float(t.min()), "max": float(t.max()), "mean": float(t.mean()),
            "std": float(t.std())}


def test_blocks_of_the_size_asked_for() -> None:
    x = rng.normal(1.0, 3.0, 10).astype(np.float32)
    reader = ChunkReader({"w": x})
    seen: list[float] = []
    s = compute_stats(reader, weight(F32, 10), progress=seen.append, block_elements=3)
    assert seen == pytest.approx([0.3, 0.6, 0.9, 1.0]) and reader.handed == 4
    want = torch_stats(x)
    assert (s.min, s.max) == (want["min"], want["max"])
    assert s.mean == pytest.approx(want["mean"], rel=1e-6)
    assert s.std == pytest.approx(want["std"], rel=1e-6)
    steps = stats_steps(ChunkReader({"w": x}), weight(F32, 10), block_elements=5)
    assert [next(steps), next(steps)] == [0.5, 1.0]


def test_blocks_longer_than_the_shared_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    # past BLOCK_ELEMENTS: the shared array of ones must grow to the block's length.
    # The shared ones are a module cache with no public surface; an empty one makes
    # this test build them as a process's first call does (mutmut forks each mutant's
    # run from a process whose cache an earlier run already grew)
    from inspector.core import weight_stats

    monkeypatch.setattr(weight_stats, "_ONES", {})
    for dtype, code in ((np.float32, F32), (np.float64, F64)):
        x = rng.normal(-2.0, 0.5, 2 * BLOCK_ELEMENTS + 3).astype(dtype)
        s = compute_stats(ChunkReader({"w": x}), weight(code, x.size), block_elements=x.size)
        # numpy, not torch, for this many values: torch's parallel reductions hang in a
        # forked child whose parent used its thread pool (mutmut forks each mutant's run)
        wide = x.astype(np.float64)
        assert s.mean == pytest.approx(float(np.mean(wide)), rel=1e-6)
        assert s.std == pytest.approx(float(np.std(wide, ddof=1)), rel=1e-5)


def test_shifted_pass_keeps_the_mean_to_float64_accuracy() -> None:
    # a large mean against the spread takes the shifted pass; its mean is the shift
    # (a float32) plus the mean of what is left, as exact as float64 can say
    x = (3e4 + 1e-3 * rng.standard_normal(999)).astype(np.float32)
    s = compute_stats(ChunkReader({"w": x}), weight(F32, x.size), block_elements=x.size)
    want = torch_stats(x)
    assert s.mean == pytest.approx(want["mean"], rel=1e-12)
    assert s.std == pytest.approx(want["std"], rel=1e-3)


def test_merge_after_a_block_of_one_value() -> None:
    x = np.array([5.0, 1.0, 2.0, 7.5, -1.0], np.float64)
    s = compute_stats(ChunkReader({"w": x}), weight(F64, 5), block_elements=1)
    want = torch_stats(x)
    assert s.mean == pytest.approx(want["mean"], rel=1e-12)
    assert s.std == pytest.approx(want["std"], rel=1e-12)
    y = np.array([5.0, 1.0, 2.0], np.float64)  # one value, then a block of two
    blocks = iter([y[:1], y[1:]])

    class Two:
        def blocks(self, weight: WeightInfo, max_elements: int) -> Any:
            return blocks

    s = compute_stats(Two(), weight(F64, 3))
    want = torch_stats(y)
    assert s.mean == pytest.approx(want["mean"], rel=1e-12)
    assert s.std == pytest.approx(want["std"], rel=1e-12)


def test_overflowing_squares_warn_nothing() -> None:
    # numpy's overflow warnings would reach the CLI's stderr: the pass redoes the block
    x = (rng.standard_normal(100) * 1e20).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = compute_stats(ChunkReader({"w": x}), weight(F32, x.size), block_elements=64)
    assert s.std == pytest.approx(torch_stats(x)["std"], rel=1e-5)


# --- histograms ---------------------------------------------------------------------

def test_histogram_messages() -> None:
    reader = ChunkReader({"w": np.arange(4, dtype=np.float32)})
    with pytest.raises(ValueError, match="^bins must be at least 1$"):
        histogram(reader, weight(F32, 4), 0)
    with pytest.raises(ValueError, match=r"^histogram range \(0\.0, inf\) is not finite$"):
        histogram(reader, weight(F32, 4), 4, value_range=(0.0, math.inf))


def test_cancel_during_the_statistics_pass_is_said_so() -> None:
    reader = ChunkReader({"w": np.arange(4, dtype=np.float32)})
    with pytest.raises(StatsCancelled, match="^statistics of w cancelled$"):
        histogram(reader, weight(F32, 4), 4, should_cancel=lambda: True)


def test_cancel_stops_the_magnitude_pass_at_its_first_block() -> None:
    z = (rng.standard_normal(40) + 1j * rng.standard_normal(40)).astype(np.complex64)
    reader = ChunkReader({"w": z})
    stats = compute_stats(reader, weight(C64, 40), block_elements=10)
    reader.handed = 0
    with pytest.raises(StatsCancelled, match="^histogram of w cancelled$"):
        histogram(reader, weight(C64, 40), 4, stats=stats, should_cancel=lambda: True)
    assert reader.handed == 1


def test_histogram_of_small_complex_magnitudes() -> None:
    # every magnitude under 1: the range is 0..the largest, not 0..1
    z = (0.2 * rng.standard_normal(50) + 0.2j * rng.standard_normal(50)).astype(np.complex64)
    z = z / (np.abs(z).max() * 1.5)
    reader = ChunkReader({"w": z})
    h = histogram(reader, weight(C64, 50), 5)
    mags = np.abs(z.astype(np.complex128))
    counts, edges = np.histogram(np.abs(z), bins=5, range=(0.0, float(np.abs(z).max())))
    assert mags.max() < 1
    assert h.counts.tolist() == counts.tolist() and np.allclose(h.edges, edges)


def test_histogram_of_bools_warns_nothing() -> None:
    x = rng.random(30) < 0.4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = histogram(ChunkReader({"w": x}), weight(BOOL, 30), 64)
    assert h.counts.tolist() == [int((~x).sum()), int(x.sum())]


def test_histogram_defaults_and_nothing_finite() -> None:
    x = rng.normal(0, 1, 100).astype(np.float32)
    h = histogram(ChunkReader({"w": x}), weight(F32, 100))  # 64 bins unless told
    counts, edges = np.histogram(x, bins=64, range=(float(x.min()), float(x.max())))
    assert h.counts.tolist() == counts.tolist() and np.allclose(h.edges, edges)
    h = histogram(ChunkReader({"w": np.full(3, np.nan, np.float32)}), weight(F32, 3), 4)
    assert h.of == "values" and h.counts.dtype == np.int64 and h.counts.tolist() == [0] * 4


def test_histogram_of_bools_all_false() -> None:
    x = np.zeros(5, bool)
    h = histogram(ChunkReader({"w": x}), weight(BOOL, 5), 64)
    counts, edges = np.histogram(x.astype(np.uint8), bins=2, range=(0.0, 1.0))
    assert h.counts.tolist() == counts.tolist() and h.edges.tolist() == edges.tolist()


def test_no_bools_and_two_complex_values() -> None:
    s = compute_stats(ChunkReader({"w": np.zeros(0, bool)}), weight(BOOL, 0))
    assert (s.nan, s.inf, s.zeros, s.std) == (0, 0, 0, None)
    z = np.array([1 + 2j, -3 + 0.5j], np.complex128)
    s = compute_stats(ChunkReader({"w": z}), weight(C128, 2))
    assert s.std == pytest.approx(float(torch.from_numpy(z).std()), rel=1e-12)


# --- rows of a real archive -----------------------------------------------------------

def test_weight_row_asks_about_its_own_weight() -> None:
    values = {"a": np.zeros(4, np.float32), "b": np.ones(4, np.float32)}
    reader = ChunkReader(values, records={"a": 16, "b": 0})
    rows = [weight_row(reader, weight(F32, 4, name)) for name in ("a", "b")]
    assert [r["note"] for r in rows] == [None, "empty record: torch.export.load fills it with zeros"]


def _torch_tensors(path: Path) -> dict[str, torch.Tensor]:
    """Each weight as torch decodes its record, found through the weights config read
    with json and zipfile (torch.export.load would take seconds a run)."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for entry in z.namelist():
            if not entry.endswith("_config.json"):
                continue
            folder = entry.rsplit("/", 1)[0]
            for fqn, meta in json.loads(z.read(entry))["config"].items():
                tm = meta["tensor_meta"]
                assert tm["dtype"] == F32 and not meta["use_pickle"]  # what these archives hold
                sizes = [d["as_int"] for d in tm["sizes"]]
                raw = bytearray(z.read(f"{folder}/{meta['path_name']}"))
                out[fqn] = torch.frombuffer(raw, dtype=torch.float32).reshape(sizes)
    return out


@pytest.mark.parametrize("case", ["block", "sequential"])
def test_program_weights_match_torch(case: str) -> None:
    path = DATA / "2.9.1" / f"{case}.pt2"
    tensors = _torch_tensors(path)
    with open_archive(path) as archive:
        (name,) = archive.program_names
        rows = program_weights(archive, name)
    assert sorted(r["name"] for r in rows) == sorted(tensors)
    for row in rows:
        t = tensors[row["name"]]
        assert row["shape"] == list(t.shape) and row["dtype"] == "float32"
        assert row["bytes"] == t.numel() * t.element_size()
        d = t.double()
        st = row["stats"]
        assert (st["min"], st["max"]) == (float(d.min()), float(d.max()))
        assert st["mean"] == pytest.approx(float(d.mean()), rel=1e-6, abs=1e-9)
        assert st["std"] == pytest.approx(float(d.std()), rel=1e-5, abs=1e-9)
        assert (st["nan"], st["inf"], st["zeros"]) == (0, 0, int((d == 0).sum()))
        assert row["note"] is None
