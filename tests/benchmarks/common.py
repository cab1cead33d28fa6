"""Shared by the benchmarks: run a whole process, measure wall time and peak RSS."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("PT2I_BENCH_CACHE", Path.home() / ".cache" / "pt2-inspector-bench"))


@dataclass
class Measured:
    wall_s: float
    peak_rss_mb: float
    returncode: int


def measure(argv: list[str], stdout=subprocess.DEVNULL) -> Measured:
    """Wall time and peak resident memory of one child process (os.wait4 gives
    that child's own rusage, not the sum over all children)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{argv} failed ({proc.returncode}):\n{err[-2000:]}")
    return Measured(wall, usage.ru_maxrss / 1024, proc.returncode)


def best_process(argv: list[str], runs: int, env: dict[str, str] | None = None
                 ) -> tuple[float, float]:
    """Best wall and best CPU (user + system) seconds of `runs` runs of a child
    process with its stdout discarded: the least disturbed runs on a shared machine."""
    walls, cpus = [], []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        cpus.append(usage.ru_utime + usage.ru_stime)
        if os.waitstatus_to_exitcode(status) != 0:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise SystemExit(f"{argv} failed:\n{err[-2000:]}")
    return min(walls), min(cpus)


def seed_decoder_archive() -> Path:
    """The full-size toy decoder (the blog's recipe: ViT-base + GPT-2, 465 MB),
    exported once through our own export command and cached."""
    CACHE.mkdir(parents=True, exist_ok=True)
    base = CACHE / "seed.pt2"
    decoder = CACHE / "seed-decoder.pt2"
    if not decoder.exists():
        print(f"exporting the seed preset to {CACHE} (once; about a minute) ...", flush=True)
        subprocess.run([sys.executable, "-m", "inspector", "export", "--preset", "seed",
                        "--separate", "-o", str(base)], check=True)
    return decoder
