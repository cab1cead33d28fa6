"""Benchmark (issue 33): which `--threads` default gives the steadiest `run` figures.

For each thread count, `rounds` run jobs on the same archive, interleaved (so a
change in the machine's load falls on every count alike); per count: the median of
the jobs' per-token p50, the spread of those p50s ((max - min) / median), and the
median p90/p50 within a job (spikes). `--load N` adds N busy-looping processes for
the run ("under load"); the load average is printed either way. The default
(jobs/spec.DEFAULT_THREADS) should be the count with the smallest spread; exit 1
when it is not.

    python tests/benchmarks/bench_threads.py [ARCHIVE] [--threads 1,2,0] [--rounds 5]
                                             [--tokens 16] [--load N]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _spin(stop_at: float) -> None:
    while time.time() < stop_at:
        pass


def main() -> int:
    from inspector.core.timing_spread import cpu_count, load_average, relative_range
    from inspector.jobs.runner import run_job
    from inspector.jobs.spec import DEFAULT_THREADS

    parser = argparse.ArgumentParser()
    parser.add_argument("archive", nargs="?", default=str(ROOT / "resources" / "demo" / "toy-tiny.pt2"))
    parser.add_argument("--threads", default="1,2,0", help="thread counts (0: torch's choice)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--load", type=int, default=0, help="busy processes beside the runs")
    args = parser.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    spinners = [multiprocessing.Process(target=_spin, args=(time.time() + 3600,), daemon=True)
                for _ in range(args.load)]
    for p in spinners:
        p.start()
    p50s: dict[int, list[float]] = {t: [] for t in counts}
    tails: dict[int, list[float]] = {t: [] for t in counts}
    loads = []
    try:
        for _ in range(args.rounds):
            for t in counts:
                r = run_job("run", [args.archive, "--batch", "1", "--max-tokens", str(args.tokens),
                                    "--warmup", "1", "--repeats", "3", "--threads", str(t)],
                            # 0: torch's own choice, as without OMP_NUM_THREADS: a core each
                            env={"OMP_NUM_THREADS": str(cpu_count())} if t == 0 else None)
                p50s[t].append(r["p50_ms"])
                tails[t].append(r["p90_ms"] / r["p50_ms"] if r["p50_ms"] else 0.0)
                loads.append(load_average() or 0.0)
    finally:
        for p in spinners:
            p.terminate()
    print(f"run on {args.archive}: {args.rounds} jobs per thread count, {args.tokens} tokens, "
          f"3 timed generations each; {cpu_count()} CPUs, load average "
          f"{min(loads):.1f}-{max(loads):.1f}" + (f", {args.load} busy processes" if args.load else ""))
    print(f"  {'threads':>8} {'p50 ms':>9} {'spread of p50':>14} {'p90/p50':>8}")
    spreads = {}
    for t in counts:
        spreads[t] = relative_range(p50s[t])
        print(f"  {t if t else 'torch':>8} {statistics.median(p50s[t]):9.3f} "
              f"{100 * spreads[t]:13.0f}% {statistics.median(tails[t]):8.2f}")
    best = min(spreads, key=spreads.__getitem__)
    ok = spreads.get(DEFAULT_THREADS, 1e9) <= spreads[best] * 1.10
    print(f"  steadiest: {best if best else 'torch'} thread(s); default {DEFAULT_THREADS}: "
          + ("met" if ok else "MISS"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
