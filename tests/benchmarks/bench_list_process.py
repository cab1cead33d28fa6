"""Benchmark (issue 17): `list` of the full-size toy decoder as a whole process, and
where its time goes.

    python tests/benchmarks/bench_list_process.py [ARCHIVE] [--runs N]

Target: `python -m inspector list` (and the `pt2-inspector` console script, when
installed next to this python) at most 0.1 s wall, best of N runs, bytecode cached
as an installed package has it. A busy machine inflates every figure: the load
average is printed, and CPU seconds (user + system) beside the wall time.

The breakdown runs each phase in fresh processes (best of N again), so each figure
is what a cold `list` pays for it: the bare interpreter, importing what `list`
imports, then inside one process the argument parser and the archive's directory,
the program (read, decode, build the model), the listing text. The program's bare
JSON decode (`orjson.loads` of the same bytes, GC off as the archive parses) is
timed after it in the same process, to tell how much of `list` a faster JSON
parser could win at most. The row `import msgspec, orjson, zipfile` is the floor
that any `list` on these libraries pays before a line of its own runs. Exit 1 on
a miss.

Measured 2026-12-01 (third session; 2 shared CPUs, best of 15-25). Wall time
swings with the load, so each change was also counted in instructions
(`valgrind --tool=callgrind`, PYTHONHASHSEED=0), which the load does not move:
  before (argparse parsed every command line): `pt2-inspector list` 94-98 ms
    wall at load 1.2-3 (`-m inspector` the same), 512.7M instructions;
  `list FILE` parsed without argparse (commands/plain.py; no argparse, gettext,
    locale, no gettext catalog lookups) and text.py's pattern compiled on first
    use: 91-92 ms wall at load 1.2, 496.3M instructions (-3.2%).
Where the 496M go: bare interpreter 39M; msgspec + orjson and the stdlib they
import (typing, inspect via typing_extensions and dataclasses, uuid, decimal,
datetime, enum, json) 144M; zipfile and what it imports (pathlib, shutil with
bz2 and lzma, importlib.util, struct) ~35M; our own modules ~20M; opening the
archive 14M; reading the program's JSON 11M; the lean parse 109M; making the
795 nodes 64M; the listing text 70M. What is left to win is the program model
(lean parse + nodes: 35%) and the listing (14%); the imports above ours are the
libraries' own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from common import best_process, seed_decoder_archive  # noqa: E402

TARGET_S = 0.1

# One cold `list`, phase by phase (a child process; prints the phases in ms).
_PHASES = r"""
import gc, time
gc.disable()  # as the console runs `list` (inspector/cli.py console)
t = [time.perf_counter()]
import sys, os
from inspector import cli
from inspector.commands import listing
from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
t.append(time.perf_counter())
args = cli.plain_args(cli._command("list"), [sys.argv[1]])  # as main parses `list FILE`
archive = open_archive(args.file).__enter__()
name = archive.program_names[0]
t.append(time.perf_counter())
program = archive.program(name)
t.append(time.perf_counter())
text = render_listing(program).text()
t.append(time.perf_counter())
import zipfile, orjson
with zipfile.ZipFile(args.file) as z:
    data = z.read(next(n for n in z.namelist() if n.endswith(f"/models/{name}.json")))
t.append(time.perf_counter())
orjson.loads(data)
t.append(time.perf_counter())
print(*(round((b - a) * 1000, 2) for a, b in zip(t, t[1:])), len(text))
os._exit(0)
"""
_PHASE_NAMES = ("imports", "parser + archive directory", "program (read, decode, model)",
                "listing text", "(zip read of the JSON)", "(bare orjson.loads of it)")


def _phases(archive: Path, runs: int, env: dict[str, str]) -> list[float]:
    best: list[float] | None = None
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _PHASES, str(archive)], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
        ms = [float(x) for x in out[:-1]]
        best = ms if best is None else [min(a, b) for a, b in zip(best, ms)]
    assert best is not None
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("archive", nargs="?", type=Path)
    parser.add_argument("--runs", type=int, default=15, help="runs of each (the best counts)")
    args = parser.parse_args()
    archive = (args.archive or seed_decoder_archive()).resolve()
    # `python -m inspector` puts the working directory first on sys.path: run from
    # another checkout (or /work/main), it would time that checkout's code while the
    # console script (PYTHONPATH) times this one.
    os.chdir(ROOT)
    tmp = Path(tempfile.mkdtemp(prefix="bench-list-process-"))
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")  # cached bytecode, as installed
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        py = sys.executable
        lst = [py, "-m", "inspector", "list", str(archive)]
        best_process(lst, 1, env)  # writes the bytecode
        rows = [("bare interpreter (python -c pass)", best_process([py, "-c", "pass"], args.runs, env)),
                # what any `list` built on these libraries pays before its own code
                ("import msgspec, orjson, zipfile", best_process(
                    [py, "-c", "import msgspec, msgspec.json, orjson, zipfile"], args.runs, env)),
                ("imports of list (no work)", best_process(
                    [py, "-c", "import inspector.cli, inspector.commands.listing"], args.runs, env)),
                ("python -m inspector list", best_process(lst, args.runs, env))]
        script = shutil.which("pt2-inspector", path=str(Path(py).parent))
        if script:  # the console script honours PYTHONPATH: it runs this checkout
            rows.append(("pt2-inspector list", best_process([script, "list", str(archive)],
                                                            args.runs, env)))
        phases = _phases(archive, args.runs, env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"archive: {archive} ({archive.stat().st_size / 2**20:.0f} MB); best of {args.runs}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'':36} {'wall':>9} {'CPU':>9}")
    for label, (wall, cpu) in rows:
        print(f"{label:36} {wall * 1000:>6.1f} ms {cpu * 1000:>6.1f} ms")
    print("one cold list, phase by phase (ms, best of each):")
    for label, ms in zip(_PHASE_NAMES, phases):
        print(f"  {label:34} {ms:>6.1f}")
    # shares of one cold list as the phases add up (interpreter + the four phases)
    total = rows[0][1][0] * 1000 + sum(phases[:4])
    print(f"of one cold list ({total:.0f} ms as the phases add up): interpreter "
          f"{rows[0][1][0] * 1000 / total:.0%}, imports {phases[0] / total:.0%}, the program "
          f"{phases[2] / total:.0%} (of which the bare JSON decode {phases[5] / total:.0%}), "
          f"listing text {phases[3] / total:.0%}")
    misses = [f"{label} {wall * 1000:.0f} ms" for label, (wall, _) in rows[3:] if wall > TARGET_S]
    print("MISS: " + "; ".join(misses) + f" (target <= {TARGET_S * 1000:.0f} ms wall)" if misses
          else f"list within {TARGET_S * 1000:.0f} ms wall")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
