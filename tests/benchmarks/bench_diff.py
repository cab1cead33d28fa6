"""Benchmark (issue 13): `pt2-inspector diff` of two 100,000-node programs in at
most 2x the time it takes to open both.

The big program is bench_window's: the real tiny toy decoder's nodes repeated
with renamed values (stack traces and module stacks kept) to 100,000 nodes. A
is that archive; B is, in turn:

- copy: the same bytes under another name (everything matches by name);
- retarget: A retargeted to cuda (a changed statement per device literal, a
  metadata change on every tensor);
- edit: A with nodes deleted and nodes inserted here and there (renamed nodes,
  gaps to align).

"Open both" is `pt2-inspector info A` plus `pt2-inspector info B`: two processes
that read and parse every program (what opening costs without the window).
"Diff" is one `pt2-inspector diff A B` process, text and `--json`: it opens both,
matches, compares, audits both sides and prints. Each figure is the best of
--repeats runs (a shared machine only ever adds time). Both wall time and CPU
time (user + system of the child) are shown; the verdict is on CPU time, which
other jobs on a shared machine do not inflate (all the work is one thread, so
on an idle machine wall time follows it). Exit 1 when a diff takes more than 2x
the opening.

    python tests/benchmarks/bench_diff.py [--toy T.pt2] [--repeats N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from bench_window import build_big_archive  # noqa: E402
from common import CACHE  # noqa: E402

from inspector.core.archive import open_archive  # noqa: E402

TARGET_RATIO = 2.0
EDITS = 20  # nodes deleted and nodes inserted in the "edit" variant


def tiny_toy(path: Path | None) -> Path:
    if path is not None:
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    toy = CACHE / "toy-tiny.pt2"
    if not toy.exists():
        print(f"exporting the tiny toy model to {toy} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "inspector", "export", "-o", str(toy)],
                       cwd=ROOT, check=True, capture_output=True)
    return toy


def edited_copy(src: Path, out: Path, program: str = "decoder") -> tuple[int, int]:
    """A copy of `src` whose program lost EDITS nodes and gained EDITS copies of
    other nodes under new names, spread over the graph."""
    rng = random.Random(13)
    with zipfile.ZipFile(src) as zf:
        names = zf.namelist()
        model = next(n for n in names if n.endswith(f"models/{program}.json"))
        doc = orjson.loads(zf.read(model))
        nodes = doc["graph_module"]["graph"]["nodes"]
        n = len(nodes)
        drop = set(rng.sample(range(n), EDITS))
        extra = {rng.randrange(n): k for k in range(EDITS)}
        new_nodes = []
        for i, node in enumerate(nodes):
            if i in extra:
                clone = orjson.loads(orjson.dumps(nodes[rng.randrange(n)]))
                clone["name"] = f"inserted_{extra[i]}"
                new_nodes.append(clone)
            if i not in drop:
                new_nodes.append(node)
        doc["graph_module"]["graph"]["nodes"] = new_nodes
        data = orjson.dumps(doc)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for name in names:
                dst.writestr(name, data if name == model else zf.read(name))
    return len(drop), len(extra)


def timed(argv: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS MB, exit status) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{argv} failed ({code}):\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code


def best(argv: list[str], repeats: int, ok: tuple[int, ...] = (0,)) -> tuple[float, float, float, int]:
    runs = [timed(argv, ok) for _ in range(repeats)]
    return (min(r[0] for r in runs), min(r[1] for r in runs), max(r[2] for r in runs),
            runs[-1][3])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toy", type=Path, help="tiny toy archive (default: export one, cached)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="build the archives here and keep them")
    args = ap.parse_args()
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="bench-diff-"))
    tmp.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "inspector"]
    try:
        toy = tiny_toy(args.toy)
        t = time.perf_counter()
        a = tmp / "a.pt2"
        if not a.exists():
            build_big_archive(toy, a)
        with open_archive(a) as arc:
            n_nodes = len(arc.program_json("decoder")["graph_module"]["graph"]["nodes"])
        variants: dict[str, Path] = {}
        variants["copy"] = tmp / "copy.pt2"
        if not variants["copy"].exists():
            shutil.copy(a, variants["copy"])
        variants["retarget"] = tmp / "retarget.pt2"
        if not variants["retarget"].exists():
            from inspector.core.retarget import retarget

            retarget(a, variants["retarget"], "cuda")
        variants["edit"] = tmp / "edit.pt2"
        if not variants["edit"].exists():
            edited_copy(a, variants["edit"])
        print(f"A: {n_nodes:,} decoder nodes, {a.stat().st_size / 1e6:.0f} MB; B variants "
              f"{', '.join(variants)} (ready in {time.perf_counter() - t:.1f} s)", flush=True)

        open_a = best([*cli, "info", str(a)], args.repeats)
        print(f"open A (info): {open_a[0]:.2f} s wall, {open_a[1]:.2f} s CPU, peak "
              f"{open_a[2]:.0f} MB", flush=True)
        misses = 0
        print(f"{'B':9} {'':5} {'open A+B':>9} {'diff':>8} {'ratio':>6} {'--json':>8} {'ratio':>6}")
        for label, b in variants.items():
            open_b = best([*cli, "info", str(b)], args.repeats)
            text = best([*cli, "diff", str(a), str(b)], args.repeats, ok=(0, 1))
            js = best([*cli, "diff", str(a), str(b), "--json"], args.repeats, ok=(0, 1))
            for k, kind in ((0, "wall"), (1, "CPU")):
                opened = open_a[k] + open_b[k]
                worst = max(text[k], js[k]) / opened
                verdict = ""
                if kind == "CPU":
                    misses += worst > TARGET_RATIO
                    verdict = (f"{'within' if worst <= TARGET_RATIO else 'OVER'} "
                               f"{TARGET_RATIO:.0f}x; peak {max(text[2], js[2]):.0f} MB; "
                               f"exit {text[3]}")
                print(f"{label if k == 0 else '':9} {kind:5} {opened:>8.2f}s {text[k]:>7.2f}s "
                      f"{text[k] / opened:>6.2f} {js[k]:>7.2f}s {js[k] / opened:>6.2f}  {verdict}",
                      flush=True)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
              "(wall times grow when the cores are shared)")
        return 1 if misses else 0
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
