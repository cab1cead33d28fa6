"""Statistics and histograms of one weight, streamed over WeightReader blocks.

Statistics: min, max, mean and std (Bessel-corrected, as torch's `Tensor.std()`)
of the *finite* values, and the counts of NaN, Inf and zeros (-0.0 is a zero,
as `t == 0` says). Reporting NaN for the mean of a weight with one NaN would
hide what the user wants to know; the counts say how many were left out.
Integers and bools are taken as numbers (mean of a bool = the fraction True);
complex values give min/max None, the mean as (real, imag) and the std of the
complex values (sqrt(sum |x - mean|^2 / (n - 1)), as torch computes it).

Speed: every block (~128K values, inside the L2 cache) is read from memory
once and then swept by a few vectorised numpy reductions. The sum and the sum
of squares are BLAS dot products (the cheapest full pass numpy has); when the
mean is large against the spread, the one-pass variance would cancel, so that
block is redone shifted by its mean (LayerNorm weights near 1, for instance).
Blocks combine with Chan's parallel formula, in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from inspector.core import weight_dtypes as wd
from inspector.core.archive import Archive
from inspector.core.errors import InspectorError
from inspector.core.weights import BLOCK_ELEMENTS, WeightError, WeightInfo, WeightReader, list_weights

# Keep the one-pass variance (sum of squares minus n * mean^2) only while the
# squares' mean is at most this many times the variance: float32 dot products
# are good to ~1e-6 relative, so the variance stays good to ~1e-5 (10x under the
# 1e-4 the tests demand); past it the block is redone shifted by its mean.
_CANCELLATION_LIMIT = 16.0


class StatsCancelled(InspectorError):
    """The caller cancelled a statistics or histogram pass."""


@dataclass(slots=True)
class WeightStats:
    count: int  # elements
    finite: int  # elements the min/max/mean/std are over
    min: float | int | bool | None
    max: float | int | bool | None
    mean: float | tuple[float, float] | None  # (real, imag) for complex weights
    std: float | None  # None with fewer than two finite values
    nan: int
    inf: int
    zeros: int

    def as_dict(self) -> dict[str, Any]:
        """The `stats` object of `pt2-inspector weights --json`."""
        mean = list(self.mean) if isinstance(self.mean, tuple) else self.mean
        return {"min": self.min, "max": self.max, "mean": mean, "std": self.std,
                "nan": self.nan, "inf": self.inf, "zeros": self.zeros}


@dataclass(slots=True)
class Histogram:
    edges: np.ndarray  # float64, len(counts) + 1
    counts: np.ndarray  # int64
    of: str  # what was counted: "values" or "magnitudes" (complex)


# --- statistics ---------------------------------------------------------------------

def stats_steps(reader: WeightReader, weight: WeightInfo, *,
                block_elements: int = BLOCK_ELEMENTS) -> Generator[float, None, WeightStats]:
    """Compute a weight's statistics, yielding the fraction done after each block
    (of about `block_elements` values); the generator's return value is the
    WeightStats. Stop iterating to cancel."""
    blocks = reader.blocks(weight, block_elements)  # WeightError now, before any work
    numel = weight.numel or 0
    kind = wd.value_kind(weight.dtype)  # type: ignore[arg-type]
    acc: _Real | _Complex | _Bool = {"complex": _Complex, "bool": _Bool}.get(kind, _Real)(kind)
    done = 0
    for block in blocks:
        with np.errstate(all="ignore"):  # overflow is detected and redone, not warned about
            acc.add(block)
        done += block.size
        yield done / numel if numel else 1.0
    return acc.result()


def compute_stats(reader: WeightReader, weight: WeightInfo, *,
                  should_cancel: Callable[[], bool] | None = None,
                  progress: Callable[[float], None] | None = None,
                  block_elements: int = BLOCK_ELEMENTS) -> WeightStats:
    """Statistics of one weight. `should_cancel` is asked between blocks
    (StatsCancelled); WeightError when the config does not fit its record."""
    steps = stats_steps(reader, weight, block_elements=block_elements)
    try:
        while True:
            fraction = next(steps)
            if progress is not None:
                progress(fraction)
            if should_cancel is not None and should_cancel():
                steps.close()
                raise StatsCancelled(f"statistics of {weight.name} cancelled")
    except StopIteration as stop:
        return stop.value


class _Real:
    """float32/float64 blocks (half, bfloat16 and float8 arrive as float32), and integers."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.count = self.finite = self.nan = self.inf = self.zeros = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.min: Any = None
        self.max: Any = None
        self._scratch: dict[Any, np.ndarray] = {}

    def add(self, x: np.ndarray) -> None:
        self.count += x.size
        if self.kind == "int":
            lo, hi = int(x.min()), int(x.max())
            self.zeros += x.size - int(np.count_nonzero(x))
            self._merge_minmax(lo, hi)
            # float64 is exact below 2**53; past it the mean is an approximation anyway
            self._moments(x.astype(np.float64), lo == hi)
            return
        total = self._dot_sum(x)
        if not math.isfinite(total):
            nans = int(np.count_nonzero(np.isnan(x)))
            keep = np.isfinite(x)
            kept = int(np.count_nonzero(keep))
            self.nan += nans
            self.inf += x.size - kept - nans
            if kept < x.size:
                x = x[keep]
                total = self._dot_sum(x)
            if not x.size:
                return
        lo, hi = np.minimum.reduce(x), np.maximum.reduce(x)
        if lo <= 0 <= hi:
            self.zeros += int(np.count_nonzero(np.equal(x, 0, out=self._buffer(x, np.bool_))))
        self._merge_minmax(float(lo), float(hi))
        self._moments(x, lo == hi, total)

    def _moments(self, x: np.ndarray, constant: bool, s: float | None = None) -> None:
        n = x.size
        if constant:
            mean, m2 = float(x[0]), 0.0
        else:
            s = self._dot_sum(x) if s is None else s
            q = float(np.dot(x, x))
            if not (math.isfinite(s) and math.isfinite(q)):
                # float32 squares overflow past 1.8e19 (and float64's past
                # 1.3e154): redo this block one precision up
                wider = np.float64 if x.dtype == np.float32 else np.longdouble
                s, q = float(np.sum(x, dtype=wider)), float(np.dot(x.astype(wider), x.astype(wider)))
                if not (math.isfinite(s) and math.isfinite(q)):
                    s, q = _exact_moments(x)
            mean = s / n
            m2 = q - s * mean
            if not m2 * _CANCELLATION_LIMIT >= q:  # also catches m2 <= 0 and NaN
                shift = x.dtype.type(mean)
                d = np.subtract(x, shift, out=self._buffer(x, x.dtype))
                ds = self._dot_sum(d)
                m2 = max(float(np.dot(d, d)) - ds * ds / n, 0.0)
                mean = float(shift) + ds / n
        # Chan et al.: combine (count, mean, m2) with the block's
        if self.finite == 0:
            self.finite, self.mean, self.m2 = n, mean, m2
            return
        total = self.finite + n
        delta = mean - self.mean
        self.mean += delta * n / total
        self.m2 += m2 + delta * delta * self.finite * n / total
        self.finite = total

    def _dot_sum(self, x: np.ndarray) -> float:
        if x.dtype not in (np.float32, np.float64):
            return float(np.sum(x, dtype=np.float64))
        return float(np.dot(x, _ones(x.dtype, x.size)))

    def _buffer(self, x: np.ndarray, dtype: Any) -> np.ndarray:
        key = np.dtype(dtype)
        buf = self._scratch.get(key)
        if buf is None or buf.size < x.size:
            buf = self._scratch[key] = np.empty(x.size, key)
        return buf[: x.size]

    def _merge_minmax(self, lo: Any, hi: Any) -> None:
        self.min = lo if self.min is None else min(self.min, lo)
        self.max = hi if self.max is None else max(self.max, hi)

    def result(self) -> WeightStats:
        if self.finite == 0:
            mean = std = None
        else:
            mean = self.mean
            std = math.sqrt(self.m2 / (self.finite - 1)) if self.finite > 1 else None
        return WeightStats(self.count, self.finite, self.min, self.max, mean, std,
                           self.nan, self.inf, self.zeros)


def _ones(dtype: np.dtype, n: int) -> np.ndarray:
    """n float ones, from one shared read-only array per dtype (thread-safe:
    never written after it is made)."""
    ones = _ONES.get(dtype)
    if ones is None or ones.size < n:
        ones = np.ones(max(n, BLOCK_ELEMENTS), dtype)
        ones.flags.writeable = False
        _ONES[dtype] = ones
    return ones[:n]


_ONES: dict[np.dtype, np.ndarray] = {}


def _exact_moments(x: np.ndarray) -> tuple[float, float]:
    """Sum and sum of squares of values near the float range's top, scaled down
    by a power of two (exact) so that nothing overflows, then scaled back (which
    can still be inf: then the variance really is beyond floating point)."""
    big = float(np.max(np.abs(x)))
    exp = math.frexp(big)[1]
    y = np.ldexp(x.astype(np.float64), -exp)
    s, q = float(np.sum(y)), float(np.dot(y, y))
    # each scaled back on its own: squares past float64 (|x| ~1e160) still leave the
    # sum, and so the mean, finite (as torch's mean is); only the variance is inf
    return _scaled_back(s, exp), _scaled_back(q, 2 * exp)


def _scaled_back(value: float, exp: int) -> float:
    try:
        return math.ldexp(value, exp)
    except OverflowError:
        return math.copysign(math.inf, value)


class _Bool:
    def __init__(self, kind: str) -> None:
        self.count = self.true = 0

    def add(self, x: np.ndarray) -> None:
        self.count += x.size
        self.true += int(np.count_nonzero(x))

    def result(self) -> WeightStats:
        n, t = self.count, self.true
        if n == 0:
            return WeightStats(0, 0, None, None, None, None, 0, 0, 0)
        mean = t / n
        std = math.sqrt((t * (1 - mean) ** 2 + (n - t) * mean ** 2) / (n - 1)) if n > 1 else None
        return WeightStats(n, n, t == n, t > 0, mean, std, 0, 0, n - t)


class _Complex:
    """Real and imaginary parts as two real accumulators over the finite values."""

    def __init__(self, kind: str) -> None:
        self.re, self.im = _Real("float"), _Real("float")
        self.count = self.nan = self.inf = self.zeros = 0

    def add(self, x: np.ndarray) -> None:
        self.count += x.size
        self.zeros += int(np.count_nonzero(x == 0))
        finite = np.isfinite(x)
        if not finite.all():
            self.nan += int(np.count_nonzero(np.isnan(x)))
            self.inf += int(np.count_nonzero(np.isinf(x)))
            x = x[finite]
        if x.size:
            self.re.add(np.ascontiguousarray(x.real))
            self.im.add(np.ascontiguousarray(x.imag))

    def result(self) -> WeightStats:
        re, im = self.re.result(), self.im.result()
        n = re.finite
        mean = None if n == 0 else (re.mean, im.mean)
        std = math.sqrt((self.re.m2 + self.im.m2) / (n - 1)) if n > 1 else None
        return WeightStats(self.count, n, None, None, mean, std, self.nan, self.inf, self.zeros)


# --- the table of a program -----------------------------------------------------------

def program_weights(archive: Archive, name: str) -> list[dict[str, Any]]:
    """The `weights` list of one program as `weights --json` prints it (the
    HTML report shows the same rows): every weight, its stats or why not."""
    program = archive.program(name)
    rows = []
    with WeightReader(archive) as reader:
        for weight in list_weights(archive, name, program):
            rows.append(weight_row(reader, weight))
    return rows


def weight_row(reader: WeightReader, weight: WeightInfo) -> dict[str, Any]:
    stats, note = None, weight.note
    if weight.readable:
        try:
            stats = compute_stats(reader, weight).as_dict()
            if reader.record_bytes(weight) == 0 and weight.numel:
                note = "empty record: torch.export.load fills it with zeros"
        except WeightError as exc:
            note = f"error: {exc}"
    return {"name": weight.name, "kind": weight.kind, "dtype": weight.dtype_name,
            "shape": list(weight.sizes), "bytes": weight.nbytes, "stats": stats, "note": note}


# --- histograms ---------------------------------------------------------------------

def histogram(reader: WeightReader, weight: WeightInfo, bins: int = 64, *,
              value_range: tuple[float, float] | None = None,
              stats: WeightStats | None = None,
              should_cancel: Callable[[], bool] | None = None) -> Histogram:
    """Counts of the finite values in `bins` equal bins over `value_range`
    (default: the weight's min..max, from `stats` or a statistics pass).
    Integers with fewer distinct values than bins get one bin per value;
    complex weights count magnitudes."""
    if bins < 1:
        raise ValueError("bins must be at least 1")
    kind = wd.value_kind(weight.dtype)  # type: ignore[arg-type]
    of = "magnitudes" if kind == "complex" else "values"
    if value_range is None:
        if kind == "bool":
            value_range = (0.0, 1.0)
            bins = 2
        else:
            if stats is None:
                stats = compute_stats(reader, weight, should_cancel=should_cancel)
            if kind == "complex":
                value_range = None  # magnitudes: found below
            elif stats.min is None:
                return Histogram(np.linspace(0.0, 1.0, bins + 1), np.zeros(bins, np.int64), of)
            else:
                lo, hi = float(stats.min), float(stats.max)
                if kind == "int" and hi - lo + 1 <= bins:
                    bins = int(hi - lo + 1)
                    lo, hi = lo - 0.5, hi + 0.5
                value_range = (lo, hi)
    if value_range is None:  # complex: one pass for the largest magnitude
        top = 0.0
        for block in reader.blocks(weight):
            _check(should_cancel, weight)
            mags = np.abs(block)
            mags = mags[np.isfinite(mags)]
            if mags.size:
                top = max(top, float(mags.max()))
        value_range = (0.0, top)
    lo, hi = value_range
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"histogram range {value_range} is not finite")
    if hi <= lo:  # one value: a unit-wide bin around it, as numpy does
        lo, hi = lo - 0.5, hi + 0.5
    counts = np.zeros(bins, np.int64)
    for block in reader.blocks(weight):
        _check(should_cancel, weight)
        values = np.abs(block) if kind == "complex" else block
        if kind == "bool":
            values = values.view(np.uint8)
        elif values.dtype.kind == "f":
            values = values[np.isfinite(values)]
        c, _ = np.histogram(values, bins=bins, range=(lo, hi))
        counts += c
    return Histogram(np.linspace(lo, hi, bins + 1), counts, of)


def _check(should_cancel: Callable[[], bool] | None, weight: WeightInfo) -> None:
    if should_cancel is not None and should_cancel():
        raise StatsCancelled(f"histogram of {weight.name} cancelled")
