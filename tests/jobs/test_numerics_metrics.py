"""numerics' per-node metrics against numpy and torch.testing on the same tensors.

Every metric is recomputed here with numpy in float64 (the job's own arithmetic is not
reused), and `passes` must be exactly what torch.testing.assert_close (check_dtype
off, equal_nan on, its default tolerances for the two dtypes) accepts."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from inspector.jobs.numerics_compare import compare, default_tolerances  # noqa: E402


def _numpy_metrics(ref, cand):
    r = ref.double().numpy()
    c = cand.double().numpy()
    finite = np.isfinite(r) & np.isfinite(c)
    r, c = r[finite], c[finite]
    d = np.abs(c - r)
    nz = r != 0
    return {
        "max_abs": float(d.max()) if d.size else 0.0,
        "max_rel": float((d[nz] / np.abs(r[nz])).max()) if nz.any() else 0.0,
        "mean_abs": float(d.mean()) if d.size else 0.0,
        "cosine": float(np.dot(c, r) / math.sqrt(np.dot(r, r) * np.dot(c, c))),
        "rel_l2": float(np.linalg.norm(c - r) / np.linalg.norm(r)),
        "bound": (d, np.abs(r)),
    }


def _torch_passes(ref, cand, rtol=None, atol=None):
    try:
        torch.testing.assert_close(cand, ref, check_dtype=False, equal_nan=True,
                                   rtol=rtol, atol=atol)
    except AssertionError:
        return False
    return True


CASES = {
    "bf16 cast": lambda r: r.to(torch.bfloat16),
    "fp16 cast": lambda r: r.to(torch.float16),
    "tiny noise": lambda r: r + 1e-7 * torch.randn(r.shape, generator=torch.Generator().manual_seed(3)),
    "same": lambda r: r.clone(),
    "one NaN in the candidate": lambda r: r.clone().index_fill_(0, torch.tensor([1]), float("nan")),
    "an Inf": lambda r: r.clone().index_fill_(0, torch.tensor([2]), float("inf")),
}


def _compared_like_numpy(ref, cand) -> dict:
    """compare()'s record, its float metrics and tolerance ratio checked against numpy's."""
    got = compare(torch, ref, cand, None, None).record()
    want = _numpy_metrics(ref, cand)
    for key in ("max_abs", "max_rel", "mean_abs"):
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=0.0), key
    assert got["cosine"] == pytest.approx(want["cosine"], rel=1e-12)
    assert got["rel_l2"] == pytest.approx(want["rel_l2"], rel=1e-9)
    d, abs_r = want["bound"]
    rtol, atol = default_tolerances(ref.dtype, cand.dtype)
    assert got["tol_ratio"] == pytest.approx(float((d / (atol + rtol * abs_r)).max()), rel=1e-12)
    return got


@pytest.mark.parametrize("case", sorted(CASES))
def test_float_metrics_equal_numpy_and_assert_close(case):
    gen = torch.Generator().manual_seed(0)
    ref = torch.randn(64, 33, generator=gen)
    ref[0, :5] = 0.0  # zeros: left out of max_rel
    cand = CASES[case](ref)
    got = _compared_like_numpy(ref, cand)
    assert got["passes"] == _torch_passes(ref, cand)
    assert (got["rtol"], got["atol"]) == default_tolerances(ref.dtype, cand.dtype)
    assert got["nan"] == bool(torch.isnan(cand).any() or torch.isnan(ref).any())
    assert got["inf"] == bool(torch.isinf(cand).any())
    assert got["nonfinite"]["candidate"]["nan"] == int(torch.isnan(cand).sum())


def test_default_tolerances_are_assert_close_s():
    from torch.testing._comparison import default_tolerances as torch_defaults

    for a, b in ((torch.float32, torch.bfloat16), (torch.float32, torch.float16),
                 (torch.float32, torch.float32), (torch.float64, torch.float64)):
        want = torch_defaults(torch.empty(1, dtype=a), torch.empty(1, dtype=b))
        assert default_tolerances(a, b) == want


def test_tolerance_override_and_boundary():
    ref = torch.tensor([1.0, 2.0, 4.0])
    cand = ref + torch.tensor([0.0, 0.0, 0.01])
    assert not compare(torch, ref, cand, None, None).passes
    assert compare(torch, ref, cand, 0.0025, 0.0).passes == _torch_passes(ref, cand, 0.0025, 0.0)
    assert compare(torch, ref, cand, 0.0024, 0.0).passes == _torch_passes(ref, cand, 0.0024, 0.0)


def test_nan_in_both_runs_at_one_place_passes_but_not_in_one():
    ref = torch.tensor([1.0, float("nan")])
    assert compare(torch, ref, ref.clone(), None, None).passes
    assert not compare(torch, ref, torch.tensor([1.0, 0.0]), None, None).passes


def test_integers_bools_symints_tuples_exact():
    a = torch.arange(6)
    assert compare(torch, a, a.clone(), None, None).record()["max_abs"] == 0.0
    off = compare(torch, a, a + torch.tensor([0, 0, 3, 0, 0, 0]), None, None).record()
    assert not off["passes"] and off["max_abs"] == 3.0 and off["cosine"] is None
    assert not compare(torch, a > 2, a > 3, None, None).passes
    assert compare(torch, 7, 7, None, None).passes and not compare(torch, 7, 8, None, None).passes
    r = (torch.ones(3), torch.zeros(2, dtype=torch.long))
    c = (torch.ones(3) * 2, torch.zeros(2, dtype=torch.long))
    both = compare(torch, r, c, None, None).record()
    assert both["max_abs"] == 1.0 and not both["passes"]
    assert compare(torch, None, None, None, None) is None
    shape = compare(torch, torch.ones(2), torch.ones(3), None, None)
    assert not shape.passes and "shape" in shape.notes[0]


def test_passes_is_assert_close_s_at_the_tolerance_itself():
    """A float32 pair within float32's rounding of the tolerance: torch.isclose (in the
    promoted dtype, as assert_close) accepts it while its exact float64 ratio is just
    over 1. `passes` says what assert_close says, not what the float64 ratio would."""
    ref = torch.tensor([3.8695333003997803, 1.0], dtype=torch.float32)
    cand = torch.tensor([3.8734028339385986, 1.0], dtype=torch.float32)
    rtol, atol = 1e-3, 0.0
    ratio = float(((cand.double() - ref.double()).abs() / (rtol * ref.double().abs())).max())
    assert ratio > 1.0  # the float64 ratio alone would fail it
    assert _torch_passes(ref, cand, rtol, atol)
    got = compare(torch, ref, cand, rtol, atol)
    assert got.passes
    assert got.tol_ratio == pytest.approx(ratio, rel=1e-12)


def test_identical_runs_with_an_inf_count_it_and_measure_the_rest():
    """The same tensor in both runs, an Inf in it: the Inf is counted in both runs and
    left out of every metric, as numpy's over the finite elements."""
    ref = torch.randn(40, 7, generator=torch.Generator().manual_seed(1))
    ref[3, 2] = float("inf")
    got = compare(torch, ref, ref.clone(), None, None).record()
    want = _numpy_metrics(ref, ref.clone())
    assert got["nonfinite"] == {"reference": {"nan": 0, "inf": 1},
                                "candidate": {"nan": 0, "inf": 1}}
    assert got["passes"] == _torch_passes(ref, ref.clone())
    for key in ("max_abs", "max_rel", "mean_abs"):
        assert got[key] == want[key], key
    assert got["cosine"] == pytest.approx(want["cosine"], rel=1e-12)


@pytest.mark.parametrize("case", ["tiny noise", "same"])
def test_float64_metrics_equal_numpy(case):
    """float64 runs (the quotients may overflow there: max_rel takes the masked way)."""
    ref = torch.randn(64, 33, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    ref[0, :5] = 0.0
    ref[1, 0] = 1e-300  # a quotient of 1e-7-sized noise over it is ~1e293, finite
    cand = CASES[case](ref).double()
    got = compare(torch, ref, cand, None, None).record()
    want = _numpy_metrics(ref, cand)
    for key in ("max_abs", "max_rel", "mean_abs"):
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=0.0), key
    assert got["cosine"] == pytest.approx(want["cosine"], rel=1e-12)
    assert got["passes"] == _torch_passes(ref, cand)


def test_float64_quotient_that_overflows_is_inf_not_dropped():
    """|c - r| / |r| past float64's range at a nonzero r: max_rel is Inf, as numpy's."""
    ref = torch.tensor([1e-300, 1.0, 0.0], dtype=torch.float64)
    cand = torch.tensor([1e10, 1.0, 0.0], dtype=torch.float64)
    with np.errstate(over="ignore"):
        want = _numpy_metrics(ref, cand)
    assert want["max_rel"] == math.inf
    assert compare(torch, ref, cand, None, None).record()["max_rel"] == want["max_rel"]


def test_a_tensor_of_several_chunks_equals_numpy():
    """Large tensors are measured a chunk at a time: sums and maxima across chunks (the
    largest error in the last, partial chunk) are still numpy's over the whole."""
    from inspector.jobs.numerics_compare import CHUNK

    ref = torch.randn(3 * CHUNK + 5, generator=torch.Generator().manual_seed(4))
    ref[CHUNK + 1] = 0.0
    cand = ref.to(torch.bfloat16)
    cand[-1] = ref[-1] + 100.0
    got = _compared_like_numpy(ref, cand)
    assert got["passes"] == _torch_passes(ref, cand)


def test_one_tensor_in_both_runs_and_its_transpose_over_the_same_storage():
    """The CPU self-check hands both runs the very same weight tensors: compared with
    itself it is numpy's zero error; its transpose starts at the same address and
    (square) has the same shape, but pairs other elements: numpy's errors of x vs x.T."""
    x = torch.randn(48, 48, generator=torch.Generator().manual_seed(5))
    x[0, 1] = 0.0
    same = _compared_like_numpy(x, x)
    assert same["max_abs"] == 0.0 and same["passes"]
    assert x.T.data_ptr() == x.data_ptr() and x.T.shape == x.shape
    crossed = _compared_like_numpy(x, x.T)
    assert crossed["max_abs"] > 0.0
    assert crossed["passes"] == _torch_passes(x, x.T)
