"""Benchmark (issue 19): statistics of every weight vs a bare numpy pass over the same bytes.

On the full-size toy decoder (~465 MB of float32 weights), exported with
`pt2-inspector export --preset seed` into a temporary folder (or ARCHIVE).
Side by side in one process, interleaved so drift hits both alike:
- bare: for every weight, a numpy array over its bytes in the memory-mapped
  archive and one `np.add.reduce` over it (one read of every byte);
- ours: `compute_stats` of every weight through the public API (WeightReader,
  min/max/mean/std/NaN/Inf/zeros).
Each repeat opens a fresh map, so both pay the same page faults.
Target: ours at most 2x bare (median of the repeats); exit 1 on a miss.

    python tests/benchmarks/bench_weights.py [ARCHIVE] [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from inspector.core.archive import open_archive  # noqa: E402
from inspector.core.weight_dtypes import storage_dtype  # noqa: E402
from inspector.core.weight_stats import compute_stats  # noqa: E402
from inspector.core.weights import WeightReader, list_weights  # noqa: E402

TARGET = 2.0


def export_decoder(folder: Path) -> Path:
    print(f"exporting the full-size toy model to {folder} (about a minute) ...", flush=True)
    subprocess.run([sys.executable, "-m", "inspector", "export", "--preset", "seed",
                    "--separate", "-o", str(folder / "seed.pt2")], check=True, cwd=ROOT)
    return folder / "seed-decoder.pt2"


def bare_pass(archive, weights) -> float:
    """One numpy reduction over each weight's bytes, mapped as ours maps them."""
    start = time.perf_counter()
    with WeightReader(archive) as reader:
        for w in weights:
            info = archive.entry(w.record)
            mm = reader._archive_map()  # the same map ours reads through
            begin = reader._data_start(w, info, mm)
            dtype = storage_dtype(w.dtype, reader.byteorder)
            np.add.reduce(np.frombuffer(mm, dtype=dtype, count=w.numel,
                                        offset=begin + w.storage_offset * dtype.itemsize))
    return time.perf_counter() - start


def stats_pass(archive, weights) -> float:
    start = time.perf_counter()
    with WeightReader(archive) as reader:
        for w in weights:
            compute_stats(reader, w)
    return time.perf_counter() - start


def run(path: Path, repeats: int) -> int:
    with open_archive(path) as archive:
        name = archive.program_names[0]
        weights = [w for w in list_weights(archive, name, archive.program(name)) if w.readable]
        contiguous = [w for w in weights if w.strides == _contiguous_strides(w.sizes)]
        if len(contiguous) != len(weights):  # the bare pass reads contiguous runs only
            print(f"note: {len(weights) - len(contiguous)} non-contiguous weights left out of both")
            weights = contiguous
        nbytes = sum(w.nbytes or 0 for w in weights)
        stats_pass(archive, weights)  # warm the page cache for both
        bare, ours = [], []
        for _ in range(repeats):
            bare.append(bare_pass(archive, weights))
            ours.append(stats_pass(archive, weights))
    b, o = statistics.median(bare), statistics.median(ours)
    ratio = o / b
    print(f"archive: {path} ({path.stat().st_size / 2**20:.0f} MB), program {name}: "
          f"{len(weights)} weights, {nbytes / 2**20:.0f} MB")
    print(f"{'':34} {'median':>9} {'min':>9} {'max':>9}   {'GB/s':>6}")
    for label, times in (("bare numpy pass (np.add.reduce)", bare), ("stats of every weight", ours)):
        print(f"{label:34} {statistics.median(times):>8.3f}s {min(times):>8.3f}s {max(times):>8.3f}s"
              f"   {nbytes / statistics.median(times) / 1e9:>6.2f}")
    print(f"ratio per repeat: {' '.join(f'{x / y:.2f}' for x, y in zip(ours, bare))}")
    print(f"stats / bare: {ratio:.2f}x (target <= {TARGET:.1f}x): {'ok' if ratio <= TARGET else 'MISSED'}")
    return 0 if ratio <= TARGET else 1


def _contiguous_strides(sizes) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("archive", nargs="?", type=Path)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    if args.archive:
        return run(args.archive, args.repeats)
    with tempfile.TemporaryDirectory(prefix="bench-weights-") as tmp:
        return run(export_decoder(Path(tmp)), args.repeats)


if __name__ == "__main__":
    raise SystemExit(main())
