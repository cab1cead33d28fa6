"""weight_stats over hand-made blocks (fast; the mutation run of tests/mutation uses it).

A stand-in reader hands the accumulators blocks we choose, so each branch (NaN/Inf
blocks, constant blocks, overflowing squares, cancellation, Chan's merge, ints, bools,
complex) is reached on purpose; every figure is compared with numpy or torch
computed independently on the same values.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

from inspector.core.weight_stats import StatsCancelled, compute_stats, histogram, stats_steps, weight_row
from inspector.core.weights import WeightError, WeightInfo

F32, F64, I32, I64, BOOL, C64, C128 = 7, 8, 4, 5, 12, 10, 11


class BlockReader:
    """Hands out fixed blocks (copies: the code may not write into them)."""

    def __init__(self, blocks: list[np.ndarray]) -> None:
        self.given = blocks

    def blocks(self, weight: WeightInfo, max_elements: int = 0) -> Any:
        return iter([b.copy() for b in self.given])


def weight(code: int, n: int) -> WeightInfo:
    return WeightInfo("p", "w", "parameter", "data/w", code, (n,), (1,), 0)


def stats_of(blocks: list[np.ndarray], code: int) -> Any:
    n = sum(b.size for b in blocks)
    return compute_stats(BlockReader(blocks), weight(code, n))


def ref(values: np.ndarray) -> dict[str, Any]:
    """torch's figures over the finite values (float64)."""
    t = torch.from_numpy(np.asarray(values, np.float64))
    fin = t[torch.isfinite(t)]
    out = {"count": t.numel(), "finite": fin.numel(), "nan": int(torch.isnan(t).sum()),
           "inf": int(torch.isinf(t).sum()), "zeros": int((t == 0).sum())}
    if fin.numel():
        out |= {"min": float(fin.min()), "max": float(fin.max()), "mean": float(fin.mean())}
    out["std"] = float(fin.std()) if fin.numel() > 1 else None
    return out


def check(s: Any, r: dict[str, Any], rel: float = 1e-5) -> None:
    for k in ("count", "finite", "nan", "inf", "zeros"):
        assert getattr(s, k) == r[k], k
    if r["finite"]:
        assert s.min == r["min"] and s.max == r["max"]
        assert s.mean == pytest.approx(r["mean"], rel=rel, abs=1e-12)
    else:
        assert s.min is None and s.max is None and s.mean is None
    if r["std"] is None:
        assert s.std is None
    else:
        assert s.std == pytest.approx(r["std"], rel=rel, abs=1e-12)


rng = np.random.default_rng(28)


@pytest.mark.parametrize("dtype,code", [(np.float32, F32), (np.float64, F64)])
def test_random_blocks_with_nan_inf_and_zeros(dtype: Any, code: int) -> None:
    a = rng.normal(0.3, 2.0, 300).astype(dtype)
    b = rng.normal(-1.0, 0.5, 200).astype(dtype)
    b[[3, 50, 51]] = np.nan
    b[[7]] = np.inf
    b[[9, 10]] = -np.inf
    b[[11, 12, 13]] = 0.0
    b[14] = -0.0
    c = np.full(40, np.nan, dtype)  # a block with nothing finite
    d = np.array([2.5, 2.5, 2.5], dtype)  # a constant block, merged into the rest
    e = rng.normal(5.0, 1.0, 7).astype(dtype)
    blocks = [a, b, c, d, e]
    s = stats_of(blocks, code)
    check(s, ref(np.concatenate(blocks)))
    assert isinstance(s.min, float) and isinstance(s.max, float)
    assert s.as_dict() == {"min": s.min, "max": s.max, "mean": s.mean, "std": s.std,
                           "nan": 3 + 40, "inf": 3, "zeros": 4}


def test_first_blocks_empty_of_finite_values_then_one_value() -> None:
    blocks = [np.array([np.nan, np.inf], np.float32), np.array([-3.0], np.float32)]
    s = stats_of(blocks, F32)
    check(s, ref(np.concatenate(blocks)))
    assert s.std is None and s.mean == -3.0


def test_nothing_finite_and_nothing_at_all() -> None:
    s = stats_of([np.array([np.nan, -np.inf], np.float64)], F64)
    check(s, ref(np.array([np.nan, -np.inf])))
    s = stats_of([], F32)
    assert (s.count, s.finite, s.min, s.max, s.mean, s.std) == (0, 0, None, None, None, None)


def test_zeros_counted_only_where_the_range_holds_zero() -> None:
    pos = np.array([0.0, 1.0, 2.0, 0.0], np.float32)  # lo == 0
    neg = np.array([-2.0, -0.0, -1.0], np.float32)  # hi == 0 (as -0.0)
    far = np.array([3.0, 4.0], np.float32)
    for blocks in ([pos], [neg], [far], [pos, neg, far]):
        check(stats_of(blocks, F32), ref(np.concatenate(blocks)))


def test_constant_blocks() -> None:
    s = stats_of([np.full(10, 7.25, np.float32), np.full(5, 7.25, np.float32)], F32)
    assert (s.mean, s.std, s.min, s.max) == (7.25, 0.0, 7.25, 7.25)
    s = stats_of([np.full(4, 1.0, np.float64), np.full(4, 3.0, np.float64)], F64)
    check(s, ref(np.r_[np.full(4, 1.0), np.full(4, 3.0)]))


@pytest.mark.parametrize("centre", [1.0, -1000.0, 3e4])
def test_large_mean_small_spread_does_not_cancel(centre: float) -> None:
    # LayerNorm-like: the one-pass variance would lose every digit in float32
    blocks = [(centre + 1e-3 * rng.standard_normal(1000)).astype(np.float32) for _ in range(3)]
    check(stats_of(blocks, F32), ref(np.concatenate(blocks)), rel=1e-4)


def test_two_values_nearly_equal() -> None:
    x = np.array([1.0, np.nextafter(np.float32(1.0), np.float32(2.0))], np.float32)
    check(stats_of([x], F32), ref(x), rel=1e-4)


def test_float32_squares_past_the_float32_range() -> None:
    blocks = [(rng.standard_normal(100) * 1e20).astype(np.float32),
              (rng.standard_normal(50) * 1e21).astype(np.float32)]
    check(stats_of(blocks, F32), ref(np.concatenate(blocks)))
    big = np.array([3e38, -3e38, 1e38, 2e38], np.float32)  # their sum overflows too
    check(stats_of([big], F32), ref(big))


def test_float64_squares_past_the_float64_range() -> None:
    # found by issue 28's mutation run: the mean came out NaN (the sum was made inf
    # with the squares); torch gives the mean, and inf for the std
    x = rng.standard_normal(64) * 1e160
    s = stats_of([x], F64)
    t = torch.from_numpy(x)
    assert s.mean == pytest.approx(float(t.mean()), rel=1e-9)
    assert s.std == float(t.std())  # inf: the variance is past float64


@pytest.mark.parametrize("code,dtype", [(I32, np.int32), (I64, np.int64)])
def test_integers(code: int, dtype: Any) -> None:
    a = rng.integers(-50, 50, 300).astype(dtype)
    a[:5] = 0
    b = np.full(20, 9, dtype)  # constant block
    c = rng.integers(-3, 3, 11).astype(dtype)
    s = stats_of([a, b, c], code)
    check(s, ref(np.concatenate([a, b, c]).astype(np.float64)))
    assert type(s.min) is int and type(s.max) is int


def test_bools() -> None:
    a = rng.random(100) < 0.3
    b = np.ones(10, bool)
    x = np.concatenate([a, b])
    s = stats_of([a, b], BOOL)
    t = torch.from_numpy(x).double()
    assert (s.count, s.finite, s.nan, s.inf, s.zeros) == (110, 110, 0, 0, int((~x).sum()))
    assert s.min is bool(x.all()) and s.max is bool(x.any())
    assert s.mean == pytest.approx(float(t.mean()))
    assert s.std == pytest.approx(float(t.std()))
    s = stats_of([np.ones(3, bool)], BOOL)
    assert (s.min, s.max, s.mean, s.std, s.zeros) == (True, True, 1.0, 0.0, 0)
    s = stats_of([np.zeros(2, bool)], BOOL)
    assert (s.min, s.max, s.mean, s.std, s.zeros) == (False, False, 0.0, 0.0, 2)
    s = stats_of([np.ones(1, bool)], BOOL)
    assert (s.count, s.mean, s.std) == (1, 1.0, None)
    s = stats_of([], BOOL)
    assert (s.count, s.finite, s.min, s.max, s.mean, s.std, s.zeros) == (0, 0, None, None, None, None, 0)


@pytest.mark.parametrize("code,dtype", [(C64, np.complex64), (C128, np.complex128)])
def test_complex(code: int, dtype: Any) -> None:
    a = (rng.standard_normal(200) + 1j * rng.standard_normal(200) * 3 + 2).astype(dtype)
    a[:3] = 0
    a[5] = complex(np.nan, 1.0)
    a[6] = complex(1.0, np.inf)
    a[7] = complex(np.inf, np.nan)
    b = (rng.standard_normal(30) - 1j).astype(dtype)
    x = np.concatenate([a, b])
    s = stats_of([a, b], code)
    t = torch.from_numpy(x.astype(np.complex128))
    fin = t[torch.isfinite(t)]
    assert (s.count, s.finite) == (230, fin.numel())
    assert (s.nan, s.inf) == (int(torch.isnan(t).sum()), int(torch.isinf(t).sum()))
    assert s.zeros == int((t == 0).sum())
    assert s.min is None and s.max is None
    m = complex(fin.mean())
    assert s.mean == (pytest.approx(m.real, rel=1e-5), pytest.approx(m.imag, rel=1e-5))
    assert s.std == pytest.approx(float(fin.std()), rel=1e-5)
    assert s.as_dict()["mean"] == list(s.mean)
    one = stats_of([np.array([1 + 2j], dtype)], code)
    assert (one.finite, one.mean, one.std) == (1, (1.0, 2.0), None)
    none = stats_of([np.array([complex(np.nan, 0)], dtype)], code)
    assert (none.finite, none.mean, none.std, none.nan) == (0, None, None, 1)


def test_progress_fractions_and_cancel() -> None:
    blocks = [np.ones(3, np.float32), np.ones(1, np.float32)]
    seen: list[float] = []
    compute_stats(BlockReader(blocks), weight(F32, 4), progress=seen.append)
    assert seen == [0.75, 1.0]
    steps = stats_steps(BlockReader([np.zeros(1, np.float32)]), weight(F32, 0))  # numel unknown/0
    assert next(steps) == 1.0
    calls: list[int] = []
    with pytest.raises(StatsCancelled, match="statistics of w cancelled"):
        compute_stats(BlockReader(blocks), weight(F32, 4),
                      should_cancel=lambda: calls.append(1) or True)
    assert calls == [1]
    assert compute_stats(BlockReader(blocks), weight(F32, 4), should_cancel=lambda: False).count == 4


# --- histograms ---------------------------------------------------------------------

def test_histogram_of_floats_is_numpys_over_the_finite_values() -> None:
    a = rng.normal(0, 1, 500).astype(np.float32)
    a[:4] = [np.nan, np.inf, -np.inf, np.nan]
    b = rng.normal(1, 1, 100).astype(np.float32)
    reader = BlockReader([a, b])
    x = np.concatenate([a, b]).astype(np.float64)
    fin = x[np.isfinite(x)]
    for bins in (1, 7, 64):
        h = histogram(reader, weight(F32, x.size), bins)
        counts, edges = np.histogram(fin.astype(np.float32), bins=bins, range=(fin.min(), fin.max()))
        assert h.of == "values"
        assert h.counts.dtype == np.int64 and h.counts.tolist() == counts.tolist()
        assert np.allclose(h.edges, edges) and h.edges[0] == fin.min() and h.edges[-1] == fin.max()
    h = histogram(reader, weight(F32, x.size), 4, value_range=(-1.0, 1.0))
    assert h.counts.tolist() == np.histogram(fin.astype(np.float32), 4, range=(-1.0, 1.0))[0].tolist()
    assert h.edges.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]


def test_histogram_of_one_value_and_of_nothing_finite() -> None:
    h = histogram(BlockReader([np.full(5, 2.0, np.float32)]), weight(F32, 5), 3)
    c, e = np.histogram(np.full(5, 2.0), bins=3)
    assert h.counts.tolist() == c.tolist() and np.allclose(h.edges, e)
    h = histogram(BlockReader([np.full(2, np.nan, np.float32)]), weight(F32, 2), 4)
    assert h.counts.tolist() == [0, 0, 0, 0] and h.edges.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_histogram_of_integers() -> None:
    x = np.array([3, 5, 5, 7, 3, 3], np.int32)  # 5 values from 3 to 7: one bin each
    h = histogram(BlockReader([x]), weight(I32, 6), 5)
    assert h.counts.tolist() == np.bincount(x - 3, minlength=5).tolist()
    assert h.edges.tolist() == [2.5, 3.5, 4.5, 5.5, 6.5, 7.5]
    h = histogram(BlockReader([x]), weight(I32, 6), 64)
    assert h.counts.tolist() == [3, 0, 2, 0, 1]
    h = histogram(BlockReader([x]), weight(I32, 6), 4)  # fewer bins than values
    c, e = np.histogram(x, bins=4, range=(3, 7))
    assert h.counts.tolist() == c.tolist() and np.allclose(h.edges, e)


def test_histogram_of_bools_and_complex() -> None:
    x = np.array([True, False, True, True])
    h = histogram(BlockReader([x]), weight(BOOL, 4), 64)
    assert h.counts.tolist() == [1, 3] and h.edges.tolist() == [0.0, 0.5, 1.0]
    z = np.array([3 + 4j, 0, 1j, complex(np.nan, 1), complex(np.inf, 0), -6 + 8j], np.complex64)
    h = histogram(BlockReader([z[:3], z[3:], np.full(1, np.nan, np.complex64)]), weight(C64, 7), 2)
    mags = np.abs(z.astype(np.complex128))
    mags = mags[np.isfinite(mags)]
    c, e = np.histogram(mags, bins=2, range=(0.0, mags.max()))
    assert h.of == "magnitudes" and h.counts.tolist() == c.tolist() and np.allclose(h.edges, e)


def test_histogram_arguments_and_cancel() -> None:
    reader = BlockReader([np.arange(4, dtype=np.float32)])
    with pytest.raises(ValueError, match="at least 1"):
        histogram(reader, weight(F32, 4), 0)
    for bad in ((0.0, math.inf), (-math.inf, 0.0), (math.nan, 1.0)):
        with pytest.raises(ValueError, match="not finite"):
            histogram(reader, weight(F32, 4), 4, value_range=bad)
    with pytest.raises(StatsCancelled, match="histogram of w cancelled"):
        histogram(reader, weight(F32, 4), 4, value_range=(0.0, 3.0), should_cancel=lambda: True)
    with pytest.raises(StatsCancelled, match="histogram of w cancelled"):
        histogram(BlockReader([np.ones(2, np.complex64)]), weight(C64, 2), should_cancel=lambda: True,
                  stats=stats_of([np.ones(2, np.complex64)], C64))
    h = histogram(reader, weight(F32, 4), 2, stats=stats_of([np.array([1.0, 2.0], np.float32)], F32))
    assert h.counts.tolist() == np.histogram(np.arange(4), 2, range=(1, 2))[0].tolist()
    assert h.edges.tolist() == [1.0, 1.5, 2.0]


def test_one_true_and_nans_in_several_complex_blocks() -> None:
    x = np.array([False, True, False])
    s = stats_of([x[:2], x[2:]], BOOL)
    assert (s.min, s.max, s.zeros) == (False, True, 2)
    assert s.std == pytest.approx(float(torch.from_numpy(x).double().std()))
    z = np.array([complex(np.nan, 0), 1j, complex(0, np.inf)], np.complex64)
    s = stats_of([z, z.copy()], C64)
    assert (s.nan, s.inf, s.zeros) == (2, 2, 0)


# --- the weights table row ------------------------------------------------------------

class RowReader(BlockReader):
    def __init__(self, blocks: list[np.ndarray], record: int, error: str | None = None) -> None:
        super().__init__(blocks)
        self.record, self.error = record, error

    def blocks(self, weight: WeightInfo, max_elements: int = 0) -> Any:
        if self.error:
            raise WeightError(self.error)
        return super().blocks(weight, max_elements)

    def record_bytes(self, weight: WeightInfo) -> int:
        return self.record


def test_weight_row() -> None:
    x = np.array([1.0, -2.0, 0.0, np.nan], np.float32)
    w = WeightInfo("p", "w", "buffer", "data/w", F32, (2, 2), (2, 1), 0)
    row = weight_row(RowReader([x], record=16), w)
    r = ref(x)
    assert row == {"name": "w", "kind": "buffer", "dtype": "float32", "shape": [2, 2], "bytes": 16,
                   "stats": {"min": r["min"], "max": r["max"], "mean": pytest.approx(r["mean"]),
                             "std": pytest.approx(r["std"]), "nan": 1, "inf": 0, "zeros": 1},
                   "note": None}
    row = weight_row(RowReader([np.zeros(4, np.float32)], record=0), w)
    assert row["note"] == "empty record: torch.export.load fills it with zeros"
    assert row["stats"]["zeros"] == 4
    empty = WeightInfo("p", "e", "parameter", "data/e", F32, (0,), (1,), 0)
    assert weight_row(RowReader([], record=0), empty)["note"] is None
    row = weight_row(RowReader([], record=16, error="offset past end"), w)
    assert (row["stats"], row["note"]) == (None, "error: offset past end")
    pickled = WeightInfo("p", "q", "constant", None, None, (), (), 0, note="pickled, not a tensor")
    row = weight_row(RowReader([], record=0, error="never read"), pickled)
    assert row == {"name": "q", "kind": "constant", "dtype": None, "shape": [], "bytes": None,
                   "stats": None, "note": "pickled, not a tensor"}
