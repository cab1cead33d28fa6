"""One node's reference value against its candidate value: the numerics job's metrics.

Floating tensors are compared in float64 over the elements finite in both runs:
- max_abs  max |c - r|
- max_rel  max |c - r| / |r| over the elements where r != 0
- mean_abs mean |c - r|
- cosine   <c, r> / (|c| |r|) (1.0 when both are all zeros, 0.0 when one is)
- rel_l2   |c - r| / |r| (2-norms; what the module rollup's amplification divides)
- tol_ratio max |c - r| / (atol + rtol |r|): 1.0 is the tolerance (the window's chart)
- passes   torch.isclose(c, r, rtol, atol, equal_nan=True) everywhere, in the two
           dtypes' promoted dtype: what `torch.testing.assert_close(c, r,
           check_dtype=False, equal_nan=True)` accepts. rtol/atol default to
           assert_close's for the two dtypes (the looser of the two).
NaN and Inf are counted per run. A NaN at the same place in both runs passes (it
is the same computation); where only one run has it, it fails.
Integer and bool tensors, ints, SymInts and bools must be equal (their errors are
still measured, as numbers). Tuples and lists are compared element by element and
summed up (max of maxima, means weighted by element counts, the cosine of the
concatenation). A shape, dtype kind or structure that differs fails, with a note.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

# torch.testing.assert_close's defaults (torch/testing/_comparison.py), by dtype name
DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def default_tolerances(*dtypes: Any) -> tuple[float, float]:
    """(rtol, atol) as assert_close picks them: the loosest of the dtypes' defaults."""
    rtols, atols = [0.0], [0.0]
    for dtype in dtypes:
        rtol, atol = DEFAULT_TOLERANCES.get(str(dtype).removeprefix("torch."), (0.0, 0.0))
        rtols.append(rtol)
        atols.append(atol)
    return max(rtols), max(atols)


@dataclass
class Comparison:
    """The running totals of one node's comparison (several tensors for a tuple)."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    sum_abs: float = 0.0
    count: int = 0
    dot: float = 0.0
    ref_sq: float = 0.0
    cand_sq: float = 0.0
    diff_sq: float = 0.0
    floating: bool = False
    passes: bool = True
    nan_ref: int = 0
    nan_cand: int = 0
    inf_ref: int = 0
    inf_cand: int = 0
    compared: int = 0  # values compared (tensors and scalars)
    rtol: float = 0.0
    atol: float = 0.0
    tol_ratio: float = 0.0  # max |c - r| / (atol + rtol |r|)
    dtypes: list[str] = field(default_factory=list)
    shape: list[int] | None = None
    notes: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        mean = self.sum_abs / self.count if self.count else 0.0
        if not self.floating:
            cosine = None
        elif self.ref_sq == 0.0 and self.cand_sq == 0.0:
            cosine = 1.0
        elif self.ref_sq == 0.0 or self.cand_sq == 0.0:
            cosine = 0.0
        else:
            cosine = self.dot / math.sqrt(self.ref_sq * self.cand_sq)
        if self.ref_sq > 0:
            rel_l2 = math.sqrt(self.diff_sq / self.ref_sq)
        else:
            rel_l2 = 0.0 if self.diff_sq == 0 else math.inf
        return {
            "max_abs": self.max_abs, "max_rel": self.max_rel if self.floating else None,
            "mean_abs": mean, "cosine": cosine, "rel_l2": rel_l2 if self.floating else None,
            "passes": self.passes, "tol_ratio": self.tol_ratio if self.floating else None,
            "nan": bool(self.nan_ref or self.nan_cand),
            "inf": bool(self.inf_ref or self.inf_cand),
            "nonfinite": {"reference": {"nan": self.nan_ref, "inf": self.inf_ref},
                          "candidate": {"nan": self.nan_cand, "inf": self.inf_cand}},
            "rtol": self.rtol, "atol": self.atol, "dtype": self.dtypes, "shape": self.shape,
            "notes": self.notes,
        }


def compare(torch: Any, ref: Any, cand: Any, rtol: float | None, atol: float | None,
            device: Any = None) -> Comparison | None:
    """The comparison of two node values, or None when neither holds a number
    (None outputs, an assert's result, opaque objects)."""
    out = Comparison()
    _compare(torch, ref, cand, rtol, atol, device, out)
    return out if out.compared else None


def _compare(torch: Any, ref: Any, cand: Any, rtol: float | None, atol: float | None,
             device: Any, out: Comparison) -> None:
    if isinstance(ref, torch.Tensor) or isinstance(cand, torch.Tensor):
        if not (isinstance(ref, torch.Tensor) and isinstance(cand, torch.Tensor)):
            out.compared += 1
            out.passes = False
            out.notes.append(f"a {type(ref).__name__} against a {type(cand).__name__}")
            return
        _tensors(torch, ref, cand, rtol, atol, device, out)
    elif isinstance(ref, (tuple, list)) and isinstance(cand, (tuple, list)):
        if len(ref) != len(cand):
            out.compared += 1
            out.passes = False
            out.notes.append(f"{len(ref)} values against {len(cand)}")
            return
        for r, c in zip(ref, cand):
            _compare(torch, r, c, rtol, atol, device, out)
    elif _is_number(torch, ref) and _is_number(torch, cand):
        _scalars(ref, cand, out)
    elif isinstance(ref, (tuple, list)) or isinstance(cand, (tuple, list)):
        out.compared += 1
        out.passes = False
        out.notes.append(f"a {type(ref).__name__} against a {type(cand).__name__}")


def _is_number(torch: Any, value: Any) -> bool:
    return isinstance(value, (bool, int, float, torch.SymInt, torch.SymFloat, torch.SymBool))


def _scalars(ref: Any, cand: Any, out: Comparison) -> None:
    """ints, SymInts, bools: equal or not; floats within the tolerance of float64."""
    r, c = ref, cand
    out.compared += 1
    if isinstance(r, float) or isinstance(c, float):
        r, c = float(r), float(c)
        if math.isnan(r) or math.isnan(c):
            out.nan_ref += math.isnan(r)
            out.nan_cand += math.isnan(c)
            out.passes &= math.isnan(r) and math.isnan(c)
            return
        diff = abs(c - r) if r != c else 0.0
        out.passes &= diff <= 1e-7 + 1e-7 * abs(r)
    else:
        r, c = int(r), int(c)
        diff = float(abs(c - r))
        out.passes &= r == c
    out.max_abs = max(out.max_abs, diff)
    out.sum_abs += diff
    out.count += 1


def unwrap(torch: Any, value: Any) -> Any:
    """The plain tensor under functorch's wrappers: a node between a vmap's
    increment and decrement of its nesting level makes BatchedTensors, which have no
    storage to read; the batch dimension is the unwrapped tensor's own."""
    functorch = torch._C._functorch
    while functorch.is_batchedtensor(value) or functorch.is_gradtrackingtensor(value):
        value = functorch.get_unwrapped(value)
    return value


def _tensors(torch: Any, ref: Any, cand: Any, rtol: float | None, atol: float | None,
             device: Any, out: Comparison) -> None:
    out.compared += 1
    ref, cand = unwrap(torch, ref), unwrap(torch, cand)
    out.dtypes = [str(ref.dtype).removeprefix("torch."), str(cand.dtype).removeprefix("torch.")]
    if out.shape is None:
        out.shape = list(ref.shape)
    if ref.shape != cand.shape:
        out.passes = False
        out.notes.append(f"shape {list(ref.shape)} against {list(cand.shape)}")
        return
    if ref.is_meta or cand.is_meta:  # no data: shape and dtype are all there is
        out.notes.append("meta tensors (no values)")
        out.passes &= ref.is_meta == cand.is_meta and ref.dtype == cand.dtype
        return
    if device is not None:
        ref, cand = ref.to(device), cand.to(device)
    elif ref.device != cand.device:
        cand = cand.to(ref.device)
    if ref.is_complex() or cand.is_complex():
        ref, cand = torch.view_as_real(ref.resolve_conj()), torch.view_as_real(cand.resolve_conj())
    floating = ref.is_floating_point() or cand.is_floating_point()
    if not floating:
        _exact(torch, ref, cand, out)
        return
    out.floating = True
    d_rtol, d_atol = default_tolerances(ref.dtype, cand.dtype)
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    out.rtol, out.atol = max(out.rtol, rtol), max(out.atol, atol)
    if ref.numel() == 0:
        return
    if (ref.dtype == cand.dtype and (_same_tensor(torch, ref, cand) or torch.equal(ref, cand))
            and _identical(torch, ref, out)):
        return
    stats = _finite_stats(torch, ref, cand, rtol, atol)
    if stats is not None:  # every value finite in both runs
        total_v, n = stats[0], ref.numel()
        stats = stats[1:]
        out.passes &= _all_close(torch, ref, cand, rtol, atol, stats[6])
    else:
        r64, c64 = ref.double(), cand.double()
        diff = torch.sub(c64, r64).abs_()
        common = torch.promote_types(ref.dtype, cand.dtype)
        out.passes &= bool(torch.isclose(cand.to(common), ref.to(common), rtol=rtol,
                                         atol=atol, equal_nan=True).all())
        nan_r, nan_c = torch.isnan(r64), torch.isnan(c64)
        inf_r, inf_c = torch.isinf(r64), torch.isinf(c64)
        counts = torch.stack([nan_r.sum(), nan_c.sum(), inf_r.sum(), inf_c.sum()]).tolist()
        out.nan_ref += int(counts[0])
        out.nan_cand += int(counts[1])
        out.inf_ref += int(counts[2])
        out.inf_cand += int(counts[3])
        finite = ~(nan_r | nan_c | inf_r | inf_c)
        diff, r64, c64 = diff[finite], r64[finite], c64[finite]
        n = diff.numel()
        if n == 0:
            return
        total_v = float(diff.sum())
        abs_r = r64.abs()
        rel = torch.where(abs_r > 0, diff / abs_r, torch.zeros((), dtype=diff.dtype,
                                                                 device=diff.device))
        stats = torch.stack([diff.max(), rel.max(), (c64 * r64).sum(), (r64 * r64).sum(),
                             (c64 * c64).sum(), (diff * diff).sum(),
                             _tolerance_ratio(torch, diff, abs_r, rtol, atol)]).tolist()
    max_abs, max_rel, dot, rsq, csq, dsq, ratio = stats
    out.tol_ratio = max(out.tol_ratio, ratio)
    out.max_abs = max(out.max_abs, max_abs)
    out.max_rel = max(out.max_rel, max_rel)
    out.sum_abs += total_v
    out.count += n
    out.dot += dot
    out.ref_sq += rsq
    out.cand_sq += csq
    out.diff_sq += dsq


# elements: a chunk's float64 rows (5 of them, 2.6 MB) stay in cache; per chunk ~20
# torch calls and their Python: 2^16 took 0.59 s CPU for GPT-2 25M's bf16 candidate
# (59M values), 2^15 0.75 s, 2^14 1.03 s, 2^17 0.56 s, 2^18 0.72 s
CHUNK = 1 << 16
_ROWS = 5  # r, c, |c - r|, the quotient |c - r| / |r|, |r| (then the tolerance bound)
_cpu_rows: Any = None  # the CPU's scratch rows, made once: no allocation per chunk or node


def _scratch(torch: Any, device: Any, width: int) -> Any:
    """_ROWS float64 rows of `width` elements to compute a chunk in. On the CPU one
    block of CHUNK-wide rows, reused by every chunk of every node (fresh buffers were
    an allocation, and for large ones page faults, per chunk); elsewhere made per
    call (one chunk is the whole tensor there, and a kept block would hold memory)."""
    global _cpu_rows
    if device.type != "cpu":
        return torch.empty((_ROWS, width), dtype=torch.float64, device=device)
    if _cpu_rows is None or _cpu_rows.shape[1] != CHUNK:
        _cpu_rows = torch.empty((_ROWS, CHUNK), dtype=torch.float64)
    return _cpu_rows


def _finite_stats(torch: Any, ref: Any, cand: Any, rtol: float, atol: float) -> list[float] | None:
    """[sum |c - r|, max |c - r|, max_rel, <c, r>, |r|^2, |c|^2, |c - r|^2, tol_ratio]
    in float64, CHUNK elements at a time (each chunk's passes run in cache, in
    reused rows, not over fresh float64 copies of the whole tensor); each chunk's
    reductions are written into one table, read with one .tolist() at the end. None
    when a value is not finite (a sum is then nan/inf: the caller's masked way counts
    them)."""
    fr_all, fc_all = ref.reshape(-1), cand.reshape(-1)
    n = fr_all.numel()
    # an accelerator: one chunk (its passes are launches, not cache misses)
    step = CHUNK if fr_all.device.type == "cpu" else max(n, 1)
    rows = _scratch(torch, fr_all.device, step)
    table = torch.empty((-(-n // step), 8), dtype=torch.float64, device=fr_all.device)
    wide = torch.float64 in (ref.dtype, cand.dtype)
    for out, start in zip(table.unbind(0), range(0, n, step)):
        width = min(step, n - start)
        r, c, d, q, bound = rows[:, :width]
        out = out.unbind(0)
        r.copy_(fr_all[start:start + width])
        c.copy_(fc_all[start:start + width])
        torch.sub(c, r, out=d).abs_()
        torch.sum(d, 0, out=out[0])
        torch.amax(d, 0, out=out[1])
        torch.abs(r, out=bound)
        _max_rel(torch, d, bound, q, wide, out[2])
        torch.dot(c, r, out=out[3])
        torch.dot(r, r, out=out[4])
        torch.dot(c, c, out=out[5])
        torch.dot(d, d, out=out[6])
        # |r| is not needed after this: the bound is made in its place
        out[7].copy_(_tolerance_ratio(torch, d, bound, rtol, atol, in_place=True))
    sums, maxes = table[:, [0, 3, 4, 5, 6]].sum(0), table[:, [1, 2, 7]].amax(0)
    total, dot, rsq, csq, dsq = sums.tolist()
    if not math.isfinite(total):
        return None
    max_abs, max_rel, ratio = maxes.tolist()
    return [total, max_abs, max_rel, dot, rsq, csq, dsq, ratio]


def _all_close(torch: Any, ref: Any, cand: Any, rtol: float, atol: float, ratio: float) -> bool:
    """What torch.isclose(c, r, rtol, atol) says everywhere, for finite values: the
    float64 tolerance ratio decides when it is far from 1 (rounding in the common
    dtype moves a ratio by ~1e-7, not by 2x); near 1, torch.isclose itself, in the
    two dtypes' promoted dtype, as assert_close compares."""
    if ratio <= 0.5:
        return True
    if ratio >= 2.0:
        return False
    common = torch.promote_types(ref.dtype, cand.dtype)
    return bool(torch.isclose(cand.to(common), ref.to(common), rtol=rtol, atol=atol,
                              equal_nan=True).all())


def _identical(torch: Any, ref: Any, out: Comparison) -> bool:
    """Both runs made the same tensor (torch.equal, one dtype): every error is 0 and
    the dot products are |r|^2, one fused float64 norm (no float64 copy of the
    tensor: for a weight, that copy's allocation was most of the cost) instead of
    the full comparison. False (nothing recorded) when |r|^2 is not finite: an Inf
    (or a float64 overflow) goes the general way, which counts and masks it."""
    if ref.dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        rsq = float(torch.linalg.vector_norm(ref, dtype=torch.float64)) ** 2
    else:  # float8: the norm does not promote those, a float64 copy does
        r64 = ref.double().reshape(-1)
        rsq = float(torch.dot(r64, r64))
    if not math.isfinite(rsq):
        return False
    out.count += ref.numel()
    out.dot += rsq
    out.ref_sq += rsq
    out.cand_sq += rsq
    return True


def _same_tensor(torch: Any, ref: Any, cand: Any) -> bool:
    """One tensor in both runs (the CPU self-check's weights and inputs are the
    reference's own), or views of the same elements: equal without reading them,
    where torch.equal would."""
    if ref is cand:
        return True
    return (ref.layout == torch.strided and cand.layout == torch.strided
            and ref.data_ptr() == cand.data_ptr() and ref.shape == cand.shape
            and ref.stride() == cand.stride())


def _max_rel(torch: Any, diff: Any, abs_r: Any, quotient: Any, wide: bool, out: Any) -> None:
    """max |c - r| / |r| over r != 0, for finite values, into `out` (`quotient`:
    scratch). Below float64 (not `wide`), values' quotients cannot overflow a float64
    (the largest over the smallest subnormal is < 1e84), so an Inf or NaN quotient is
    exactly a zero |r|: one division and an in-place nan_to_num instead of a mask."""
    torch.div(diff, abs_r, out=quotient)
    if wide:
        quotient.masked_fill_(abs_r == 0, 0.0)
    else:
        quotient.nan_to_num_(nan=0.0, posinf=0.0)
    torch.amax(quotient, 0, out=out)


def _tolerance_ratio(torch: Any, diff: Any, abs_r: Any, rtol: float, atol: float,
                     in_place: bool = False) -> Any:
    """max |c - r| / (atol + rtol |r|): 1.0 is the tolerance (the chart's line).
    `in_place`: abs_r is the caller's scratch, the bound may overwrite it."""
    if atol > 0:  # the bound is positive everywhere: one division, no masks
        bound = abs_r.mul_(rtol) if in_place else abs_r.mul(rtol)
        return torch.div(diff, bound.add_(atol), out=bound).max()
    bound = atol + rtol * abs_r
    zero = torch.zeros((), dtype=diff.dtype, device=diff.device)
    over = torch.where(diff > 0, torch.full((), math.inf, dtype=diff.dtype,
                                            device=diff.device), zero)
    return torch.where(bound > 0, diff / bound.clamp_min(1e-300), over).max()


def _exact(torch: Any, ref: Any, cand: Any, out: Comparison) -> None:
    if ref.numel() == 0:
        return
    if ref.dtype == torch.bool or cand.dtype == torch.bool:
        r, c = ref.to(torch.int64), cand.to(torch.int64)
    else:
        r, c = ref.to(torch.int64), cand.to(torch.int64)
    diff = (c - r).abs()
    stats = torch.stack([diff.max(), diff.sum()]).tolist()
    out.passes &= stats[0] == 0
    out.max_abs = max(out.max_abs, float(stats[0]))
    out.sum_abs += float(stats[1])
    out.count += ref.numel()
