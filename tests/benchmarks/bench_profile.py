"""Benchmark (issue 11): the profile job's per-node times against the uninstrumented
forward, on the tiny toy decoder on the CPU.

One profile child per setting; inside it the uninstrumented forward and the
instrumented run alternate (so a busy machine's drift hits both alike) and medians
are reported. Target: the summed node time within 1.5x of the uninstrumented forward
(either way: 1/1.5 .. 1.5), run by run: a run's node times summed against the same
run's forward, medians over the runs (gated), and minimums. Also printed: the whole instrumented run against the
forward (the interpreter's cost, which the node times leave out).
Gated on --threads 1 (steady on a shared machine); torch's default thread count is
measured and printed beside it.

    python tests/benchmarks/bench_profile.py [ARCHIVE] [--repeats N] [--seq-len N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_check import tiny_decoder_archive  # noqa: E402

TARGET = 1.5


def profile(archive: Path, threads: int, repeats: int, seq_len: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", "profile", str(archive), "--device", "cpu",
         "--input", f"input_ids=1x{seq_len}", "--warmup", "5",
         "--repeats", str(repeats), "--threads", str(threads), "--json"],
        capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("archive", nargs="?", type=Path)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--seq-len", type=int, default=32)
    args = parser.parse_args()
    archive = args.archive or tiny_decoder_archive()
    print(f"archive: {archive}; one decoder step, batch 1, seq len {args.seq_len}, "
          f"median of {args.repeats} runs")
    print("per run: the run's node times summed vs the same run's uninstrumented forward "
          "(median and min over runs); nodes-median: the report's node_ms (sum of per-node "
          "medians) vs forward_ms")
    print(f"{'threads':>8} {'statistic':>13} {'forward':>11} {'nodes sum':>11} {'ratio':>6} "
          f"{'instrumented':>13} {'ratio':>6}")
    ok = True
    for threads in (1, 0):
        result = profile(archive, threads, args.repeats, args.seq_len)
        (p,) = result["programs"]
        runs = p["runs"]
        rows = [
            ("run median", statistics.median(runs["forward_ms"]),
             statistics.median(runs["node_ms"]), statistics.median(runs["instrumented_ms"])),
            ("run min", min(runs["forward_ms"]), min(runs["node_ms"]),
             min(runs["instrumented_ms"])),
            ("nodes-median", p["forward_ms"], p["node_ms"], p["instrumented_ms"]),
        ]
        for label, fwd, nodes, inst in rows:
            print(f"{result['threads']:>8} {label:>13} {fwd:8.3f} ms {nodes:8.3f} ms "
                  f"{nodes / fwd:5.2f}x {inst:10.3f} ms {inst / fwd:5.2f}x"
                  + ("" if threads == 1 else "   (not gated)"))
        if threads == 1:
            ratio = rows[0][2] / rows[0][1]
            ok = 1 / TARGET <= ratio <= TARGET
    print(f"summed node time / forward within 1/{TARGET} .. {TARGET}: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
