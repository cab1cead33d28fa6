"""A view over the elements of a pair already compared gets that pair's comparison
(jobs/numerics_views.py): its numbers must be numpy's for the view pair itself, and a
view that pairs other elements, covers other elements, or sees values changed in
place since must not get it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from inspector.jobs.numerics_compare import compare  # noqa: E402
from inspector.jobs.numerics_views import ComparedValues  # noqa: E402

from test_numerics_metrics import _compared_like_numpy  # noqa: E402


def _pair():
    ref = torch.randn(64, 33, generator=torch.Generator().manual_seed(7))
    ref[0, :3] = 0.0
    cand = ref.to(torch.bfloat16)
    cand[5, 5] = float("nan")
    return ref, cand


def _remembered(ref, cand):
    views = ComparedValues(torch)
    views.remember(ref, cand, compare(torch, ref, cand, None, None))
    return views


VIEWS = {
    "flattened": lambda t: t.view(-1),
    "transposed": lambda t: t.t(),
    "unsqueezed": lambda t: t.unsqueeze(0),
    "reshaped": lambda t: t.reshape(33, 64),
}


@pytest.mark.parametrize("how", sorted(VIEWS))
def test_a_view_of_both_runs_gets_numpy_s_numbers_for_the_view(how):
    ref, cand = _pair()
    views = _remembered(ref, cand)
    r, c = VIEWS[how](ref), VIEWS[how](cand)
    got = views.lookup(r, c)
    assert got is not None
    rec = got.record()
    fresh = _compared_like_numpy(r, c)  # the view pair measured itself, against numpy
    assert rec["shape"] == list(r.shape)
    for key in ("max_abs", "max_rel", "tol_ratio", "passes", "nonfinite", "dtype"):
        assert rec[key] == fresh[key], key
    for key in ("mean_abs", "cosine", "rel_l2"):
        assert rec[key] == pytest.approx(fresh[key], rel=1e-12), key


def test_views_that_pair_or_cover_other_elements_are_measured_afresh():
    ref, cand = _pair()
    views = _remembered(ref, cand)
    assert views.lookup(ref[1:], cand[1:]) is None  # starts elsewhere
    assert views.lookup(ref[:-1], cand[:-1]) is None  # same start, fewer elements
    assert views.lookup(ref[:, ::2], cand[:, ::2]) is None  # not dense
    # the runs lay the view out differently: element i is not the same pair
    assert views.lookup(ref.t(), cand.t().contiguous()) is None
    assert views.lookup(ref, cand.clone()) is None  # another candidate tensor
    # square: the reference's transpose starts where the pair did, has its shape, and
    # pairs r[j, i] with c[i, j]
    square = torch.randn(40, 40, generator=torch.Generator().manual_seed(8))
    cand = square.to(torch.bfloat16)
    views = _remembered(square, cand)
    assert views.lookup(square.t(), cand) is None
    assert views.lookup(square.t(), cand.t()) is not None


def test_values_changed_in_place_since_are_measured_afresh():
    ref, cand = _pair()
    views = _remembered(ref, cand)
    assert views.lookup(ref.view(-1), cand.view(-1)) is not None
    cand.view(-1)[0] += 1.0  # through a view: the version counter is shared
    assert views.lookup(ref.view(-1), cand.view(-1)) is None
