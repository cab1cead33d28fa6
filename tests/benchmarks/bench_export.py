"""Benchmark (issue 3): exporting through the job vs the same export in a bare script.

Whole processes, interleaved, side by side in one run:
  bare  this file with --bare: build the toy model, torch.export both programs,
        package_pt2 to a file. No events, no spec checks, no atomic rename.
  job   `python -m inspector.jobs export` (what the CLI and the window start).
Targets (issue 3, seed preset): job wall <= 1.10x bare, job peak RSS <= 1.2x bare;
cancel ends the child within 1 s.

    python tests/benchmarks/bench_export.py [--preset tiny|seed] [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT))
from common import measure  # noqa: E402


def bare(preset: str, out: str) -> None:
    """The seed blog's steps, nothing else."""
    import torch
    from torch.export import Dim
    from torch.export.pt2_archive._package import package_pt2

    from inspector.jobs import toy

    config = toy.build_config(preset)
    model = toy.model_from_config(config, 0)
    enc_args, dec_args = toy.example_inputs(config, 2, 8, False)
    batch, seq = Dim("batch", min=1, max=64), Dim("seq_len", min=2, max=256)
    with torch.no_grad():
        enc = torch.export.export(model.encoder, enc_args, dynamic_shapes=({0: batch},),
                                  strict=False)
        dec = torch.export.export(toy.DecoderWrapper(model), dec_args,
                                  dynamic_shapes=({0: batch, 1: seq}, {0: batch}), strict=False)
    package_pt2(out, exported_programs={"encoder": enc, "decoder": dec})


def cancel_latency(out: Path, stage: str) -> float:
    """Seconds from SIGTERM to the child's exit, cancelled on reaching `stage`;
    the child must end through its handler (exit 130), not the SIGKILL fallback."""
    from inspector.jobs.__main__ import EXIT_CANCELLED
    from inspector.jobs.runner import Job

    child = Job("export", ["-o", str(out)])
    for event in child.events():
        if event["event"] == "error":
            raise SystemExit(f"the export failed before {stage!r}: {event['message']}")
        if event["event"] == "progress" and event["stage"] == stage:
            break
    else:
        raise SystemExit(f"the export ended before {stage!r}")
    t0 = time.perf_counter()
    code = child.cancel()
    elapsed = time.perf_counter() - t0
    if code != EXIT_CANCELLED:
        raise SystemExit(f"cancel at {stage!r}: exit {code}, not {EXIT_CANCELLED}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", choices=("tiny", "seed"), default="tiny")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bare", metavar="OUT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        bare(args.preset, args.bare)
        return 0

    from inspector.jobs.runner import child_env

    env = child_env()
    tmp = Path(tempfile.mkdtemp(prefix="bench-export-"))
    bare_cmd = [sys.executable, __file__, "--preset", args.preset, "--bare", str(tmp / "bare.pt2")]
    job_cmd = [sys.executable, "-m", "inspector.jobs", "export", "--preset", args.preset,
               "-o", str(tmp / "job.pt2")]
    import os

    os.environ.update(env)  # measure() inherits it: the job child finds our package
    bares, jobs = [], []
    for _ in range(args.repeats):  # interleaved, so drift hits both alike
        bares.append(measure(bare_cmd))
        jobs.append(measure(job_cmd))
    b_wall = statistics.median(m.wall_s for m in bares)
    j_wall = statistics.median(m.wall_s for m in jobs)
    b_rss = statistics.median(m.peak_rss_mb for m in bares)
    j_rss = statistics.median(m.peak_rss_mb for m in jobs)
    cancels = [cancel_latency(tmp / "cancel.pt2", stage)
               for stage in ("export decoder", "save") for _ in range(2)]
    print(f"preset {args.preset}, {args.repeats} interleaved runs each (medians)")
    print(f"  bare script : {b_wall:7.2f} s  peak RSS {b_rss:7.0f} MB")
    print(f"  export job  : {j_wall:7.2f} s  peak RSS {j_rss:7.0f} MB")
    print(f"  ratio job/bare: wall {j_wall / b_wall:.3f}x (target <= 1.10), "
          f"RSS {j_rss / b_rss:.3f}x (target <= 1.2)")
    print(f"  cancel during 'export decoder' and 'save': {max(cancels) * 1000:.0f} ms worst "
          f"of {len(cancels)} (target < 1000 ms)")
    print(f"  archive sizes: bare {(tmp / 'bare.pt2').stat().st_size / 1e6:.1f} MB, "
          f"job {(tmp / 'job.pt2').stat().st_size / 1e6:.1f} MB")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    misses = [what for what, ok in (("wall ratio", j_wall / b_wall <= 1.10),
                                    ("RSS ratio", j_rss / b_rss <= 1.2),
                                    ("cancel latency", max(cancels) < 1.0)) if not ok]
    print("MISS: " + ", ".join(misses) if misses else "all targets met")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
