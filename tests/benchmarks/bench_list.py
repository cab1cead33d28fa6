"""Benchmark (issue 2): `pt2-inspector list` vs torch.export.load + print_readable.

Whole processes, side by side in one run, on the full-size toy decoder (~465 MB).
Targets: list at least 20x faster; list's peak memory under 3x the program
JSON's size + 100 MB.

    python tests/benchmarks/bench_list.py [ARCHIVE] [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import measure, seed_decoder_archive  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("archive", nargs="?", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    archive = args.archive or seed_decoder_archive()
    with zipfile.ZipFile(archive) as z:
        json_size = sum(i.file_size for i in z.infolist() if "/models/" in i.filename)
    ours_cmd = [sys.executable, "-m", "inspector", "list", str(archive)]
    torch_cmd = [sys.executable, "-c",
                 "import sys, transformers, torch; "
                 "print(torch.export.load(sys.argv[1]).graph_module.print_readable(print_output=False))",
                 str(archive)]
    ours, theirs = [], []
    for _ in range(args.repeats):  # interleaved, so drift hits both alike
        ours.append(measure(ours_cmd))
        theirs.append(measure(torch_cmd))
    o_wall = statistics.median(m.wall_s for m in ours)
    t_wall = statistics.median(m.wall_s for m in theirs)
    o_rss = max(m.peak_rss_mb for m in ours)
    t_rss = max(m.peak_rss_mb for m in theirs)
    budget = 3 * json_size / 2**20 + 100
    print(f"archive: {archive} ({archive.stat().st_size / 2**20:.0f} MB, program JSON {json_size / 2**20:.1f} MB)")
    print(f"{'':28} {'wall (median)':>14} {'peak RSS':>10}")
    print(f"{'pt2-inspector list':28} {o_wall:>12.3f} s {o_rss:>7.0f} MB")
    print(f"{'torch.export.load + print':28} {t_wall:>12.3f} s {t_rss:>7.0f} MB")
    print(f"speed-up: {t_wall / o_wall:.1f}x (target >= 20x)")
    print(f"list peak memory: {o_rss:.0f} MB, budget 3 x JSON + 100 MB = {budget:.0f} MB "
          f"({'within' if o_rss <= budget else 'OVER'})")
    return 0 if t_wall / o_wall >= 20 and o_rss <= budget else 1


if __name__ == "__main__":
    raise SystemExit(main())
