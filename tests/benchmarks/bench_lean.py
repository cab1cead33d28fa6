"""Benchmark (issue 17, programs of any size): the lean program model's targets,
side by side in one run.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_lean.py [--toy T.pt2] [--seed S.pt2]
        [--opens N] [--paints N] [--runs N]

Programs are built as bench_window.py builds its 100k-node one: the real tiny GPT-2
decoder's nodes repeated with renamed values, metadata (stack traces, module stacks)
kept as it is. The 400k-node one is written to the zip in pieces, so building it
never holds a 400k-node tree. Every measurement runs in its own child process, so
each peak RSS is that measurement's alone.

Targets (issue 17), exit 1 on a miss:
  window first paint of the 100k program <= 0.5x a bare orjson.loads of its JSON
    (CPU, all threads; wall printed too), at a peak under 800 MB. The loads is
    timed with the cyclic GC off, as the archive parses (with it on, as the issue
    timed it, loads is ~3x slower; that figure is printed too). The first paint
    is the first screen's (FirstScreenTab: lines from the head of the text); the
    whole program's tab, which replaces it, is printed too (and its peak counts);
  the 400k program opens (parse + listing, what the window needs before it paints)
    in <= 4.5x the 100k time (the best of --opens alternated opens of each), under
    3 GB; search (worst query) and audit < 100 ms there;
  `pt2-inspector list` of the full-size toy decoder, whole process, <= 0.1 s wall
    (best of several runs, bytecode cached as an installed package has it; a busy
    machine inflates wall time: the load average is printed).
The "distinct" programs (not targets) are built the same way, each copy's
metadata naming its own layer and call counter, as a real model's layers do.
Before the lean model the paint and 400k targets missed: the 400k program was
refused by the hostile-file limits (MAX_NODES, MAX_JSON_VALUES). Measured
2026-12-01 with the lean model (core/program/lean.py; load ~3 on 2 shared CPUs):
  paint 6.80 s CPU (5.10x a bare loads of 1.33 s), peak 465 MB (was 1.4 GB);
  open 100k 5.36 s CPU / 405 MB, 400k 22.0 s / 1501 MB: 4.10x; search worst
  88 ms at 400k; audit 615 ms at 400k (misses: ~31,000 findings are built).
Paint misses because the listing is still rendered whole before the first
paint: node materialization and the listing text are each ~1.1-1.5 s of the
100k's ~3.3 s of quiet CPU, the lean scan ~0.8 s.
With the streamed listing (the first ~1,000 lines before the paint, the rest in
the background; the weights panel no longer makes every node on the GUI thread):
  paint 2.06 s CPU, 2.98-3.28 s wall (1.62-1.84x a bare loads of 1.12-1.27 s),
  peak 431 MB (load ~2-3); audit (size rule's loop inlined) 188 ms at 100k,
  599 ms at 400k (was 252 / 921 ms in the same conditions).
What is left of the paint is the lean scan itself (quiet: zip read 0.19 s,
msgspec decode 0.45 s, compact copies 0.38 s, records 0.07 s), ~0.1 s for the
first chunk and the window, and the background tasks that start as the tab
shows (the stream, the Run panel's plan_inputs_of, lexing): counted, since the
figure is the CPU of all threads.
With the columnar lean model (one msgspec scan when the top level holds only
torch's keys; nodes kept as columns built by C-level maps: argument texts
joined with their starts, metadata by distinct text; the stored program entry
read in one pread, CRC checked after; the stream started once the listing has
painted, lexing after a 150 ms pause), measured 2026-12-01 (load ~2-4):
  paint 0.83 s CPU, 1.75 s wall (0.88x a bare loads of 0.94 s), peak 419 MB;
  again after merging main: 0.99 s (1.06x a loads of 0.93 s), 423 MB; child
  runs alternated with loads: 0.83-0.96 s vs 0.88-1.07 s (0.81-1.02x), wall
  within a few % of CPU (was 1.4-2x: the stream and lexing held the GIL);
  main's code side by side in the same minutes: 1.32-2.21 s (1.4-2.2x), 434 MB;
  open 100k 3.66 s / 405 MB, 400k 16.1 s / 1449 MB: 4.38x; search worst 88 ms
  and audit 520 ms at 400k (audit belongs to another change).
Quiet split of the paint's ~0.85 s: zip read + CRC 0.15, msgspec scan 0.20,
columns 0.13 (hashing the 121 MB of metadata text to share its 245 distinct
texts is ~0.08 of it), records 0.05, value count + depth + subgraph checks
0.06, first chunk 0.06, window ~0.05, the stream's first moments after the
paint ~0.04. 0.5x (~0.47 s) would need the scan and the read alone: the
compaction (dropping the text, whose budget the hostile-file limits rest on)
would have to wait until after the paint.

Search at 400k (worst of QUERIES, the regex arange_\\d+): 122 ms before (each
query a str.find / re.search over the 80 MB joined text, a Python step per hit);
45 ms with core/line_scan.py (numpy passes over the 50 MB of distinct lines, a
regex run only on the lines holding its required literal "arange_"), 11 ms at
100k. Per query, same program, thread CPU, best of 3 (load ~4 on 2 CPUs; before
-> after): cpu 88 -> 27 ms, name:add_ 63 -> 14, zzz_not_there 37 -> 17,
arange_\\d+ 82 -> 45, Arange_\\d+ 670 -> 52, add 144 -> 53, torch 308 -> 92; the
search index costs ~0.5 s more to build in the background (3.0 -> 3.5 s: finding
the distinct lines, the keys' line arrays).

Audit with its columns (core/audit.py: each graph's device arguments, literal
sizes and op namespaces, made by a program's first audit and kept with its lean
nodes; device-literal texts made once per site, findings made in sorted order;
Finding a msgspec Struct), measured 2026-12-01 (load ~4 on 2 shared CPUs):
  400k: audit 36 ms (was 599-954 ms; the audit is timed after a first one, for
  two targets), the first audit, making the columns, 489 ms (was ~3 s: the
  columns come from one walk of the nodes the listing made, not two regex
  searches of 400,000 texts); 100k: 4 ms, the first 109 ms. Same findings as
  before, byte for byte, on both programs and the fidelity corpus
  (tests/unit/test_audit_columns.py checks the columns against every node).

All four merged (main, 2026-12-01 16:30 UTC, alone on the machine, load 1.0;
`nice python tests/benchmarks/bench_lean.py --runs 5`, two runs):
  paint 0.79 s CPU / 421 MB, 0.80x a bare loads of 0.99 s (MISS; the run
  before read 2.06 s, six runs of --child window after read 0.81-1.00 s);
  400k/100k open 4.29-4.32x, 1448 MB; worst search 41 ms at 400k; audit
  22-28 ms at 400k (the first 399-405 ms); list best 89-92 ms wall.

With the scan bounded as it reads (each node struct counts itself, and charges
its bytes for texts over ~900 MB; tensor records decoded after the scan, counted
first where they could cost much) and metadata kept as shared parts, measured
2026-12-01 19:10 (load ~0.3, but this shared machine ran ~1.4x slower than in
the figures above: a bare interpreter took 16 ms, not 11):
  paints 1.28/1.16/1.27 s CPU beside loads of 1.38/1.21/1.09 s: 1.05x (0.39x a
  GC-on loads), peak 430 MB; open 100k 5.06 s / 416 MB, 400k 19.4 s / 1447 MB:
  3.84x; search worst 50 ms and audit 25 ms at 400k; list 103 ms (bare 16 ms).
  Distinct layers: 100k opens in 7.84 s / 517 MB; 400k is refused by
  MAX_MODEL_VALUES (13.5M values) after a 1363 MB peak (it was refused by the
  scan budget at 1642 MB, its metadata copies 484 MB).
  Side by side with the code before the bounds (539e959), alternated, 4 paints
  each: 1.39-1.52 s before, 1.51-1.68 s after: the bounds cost ~0.15 s of CPU
  (the nodes' counting, the records' second pass).

With the first screen (core/program/head.py: the first 400 nodes, their tensor
records and the text after the records cut from the text by byte searches and
parsed as a small program; ui/window/first_screen_tab.py paints its 778 lines,
then the whole program's tab replaces it in place), measured 2026-12-01 21:00
(`nice python tests/benchmarks/bench_lean.py --runs 7 --paints 3`, load ~1):
  paints 0.18/0.20/0.15 s CPU beside loads of 1.40/0.95/0.98 s: 0.18x (0.04x a
  GC-on loads), 0.18 s wall, peak 416 MB; the whole tab after it 1.02-1.47 s
  (1.11x, as before: the reader waits for the first screen's paint, then parses),
  peak 435 MB. The first screen's ~0.17 s: reading the 201 MB entry ~0.1 s,
  cutting and parsing the head ~0.02 + 0.04 s, the tab and its paint. At 400k
  (805 MB, measured beside a test run): 1.0 s CPU to the first screen (the read
  of the whole text is most of it), 4.6 s to the whole tab.
  Open 100k 4.91 s / 416 MB, 400k 19.8 s / 1444 MB: 4.03x; search worst 45 ms
  and audit 21 ms at 400k; list 102 ms (bare interpreter 14 ms: 89-92 ms on the
  quiet machine of the figures above); 400k-distinct still refused (13.5M values).
Reading a big stored program's two ends only for its first screen (Archive.read_ends:
its first 32 MB, and its end back to its records: 75 MB of the 100k's 201 MB,
224 MB of the 400k's 805 MB), the parse reading it whole after, alternated with
the one-read code (0e5ab4e), 21:30 (a busier machine: loads 1.1-1.5 s): 100k
first screen 0.23-0.26 s vs 0.20-0.31 s (the same); 400k 0.51-0.57 s vs
0.54-0.69 s, its peak at that paint 590 MB vs 918 MB. From a cold disk the read
dominates: the first screen then waits for ~30% of the file, not all of it.
Made nodes sharing one Argument per tensor value (its producer's output and every
use) and a node's own values re-derived from its measured cost (4 beside its
arguments', was 8), 2026-12-02 00:27 (a slow hour: a bare interpreter took 18 ms,
the 100k open 6.1-7.7 s where it took 3.7 s on a quiet machine; --opens 3):
  paint 0.21x (0.23 s CPU beside a loads of 1.07 s), peak 416 MB; open 100k
  6.08 s / 416 MB, 400k 24.9 s / 1250 MB (was 1444 MB): 4.10x, the best of three
  alternated each (the 400k's three: 31.8, 24.9, 32.5 s); search worst 74 ms and
  audit 48 ms at 400k; the distinct layers' 400k program now opens: 37.6 s,
  1609 MB with its search index (10.8M values, was 12.41M by the old count and
  refused); list 164 ms (bare interpreter 18 ms: the slow hour).
  Made and listed, a node of the 100k program held 1,575 bytes, now 1,080
  (tracemalloc); the 400k-distinct one listed whole 1,328 MB RSS, was 1,536.
  Instructions (callgrind, 10k nodes, PYTHONHASHSEED=0): making and listing
  +3.3% (1,291M -> 1,334M), the parse the same.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import orjson

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_window import _defined, _rename, export_toy  # noqa: E402
from common import CACHE, seed_decoder_archive  # noqa: E402
from common import best_process as whole_process  # noqa: E402

QUERIES = [("cpu", False), ("op:arange", False), ("device:cpu", False),
           ("module:decoder.transformer.h.0", False), ("file:modeling_gpt2.py:573", False),
           ("target:aten.to", False), ("name:add_", False), ("zzz_not_there", False),
           (r"arange_\d+", True)]
_SENTINEL = "@@pt2i-bench-lean-nodes@@"


# --- building programs ---------------------------------------------------------------

def build_program(toy: Path, out: Path, target: int, program: str = "decoder",
                  distinct: bool = False) -> tuple[int, int]:
    """bench_window.build_big_archive's program (same bytes), streamed: the nodes of
    each copy are renamed and written, then dropped. Returns (nodes, JSON bytes).
    distinct=True: each copy's metadata names its own layer (module path) and
    call counter, as a real model's layers do (the copies' metadata is otherwise
    the same bytes, which the lean model holds once)."""
    with zipfile.ZipFile(toy) as zf:
        names = zf.namelist()
        model_name = next(n for n in names if n.endswith(f"models/{program}.json"))
        doc = orjson.loads(zf.read(model_name))
        graph = doc["graph_module"]["graph"]
        nodes = graph["nodes"]
        defined: set[str] = set()
        for n in nodes:
            defined |= _defined(n)
        copies = -(-target // len(nodes))
        tv, si = dict(graph["tensor_values"]), dict(graph.get("sym_int_values", {}))
        for j in range(1, copies):  # values are shared, not copied: cheap at 400k
            suffix = f"_r{j}"
            tv.update({k + suffix: v for k, v in graph["tensor_values"].items() if k in defined})
            si.update({k + suffix: v for k, v in graph.get("sym_int_values", {}).items()
                       if k in defined})
        graph["nodes"], graph["tensor_values"], graph["sym_int_values"] = _SENTINEL, tv, si
        head, tail = orjson.dumps(doc).split(orjson.dumps(_SENTINEL))
        written, size = 0, len(head) + len(tail) + 2
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for n in names:
                if n != model_name:
                    dst.writestr(n, zf.read(n))
            with dst.open(model_name, "w", force_zip64=True) as stream:
                stream.write(head + b"[")
                for j in range(copies):
                    suffix = f"_r{j}"
                    batch = []
                    for n in nodes:
                        if written + len(batch) >= target:
                            break
                        m = _rename(n, defined, suffix) if j else n
                        if distinct and j and isinstance(n.get("metadata"), dict):
                            m["metadata"] = _layer_metadata(n["metadata"], j)
                        if j and m.get("name"):
                            m["name"] = m["name"] + suffix
                        batch.append(m)
                    if not batch:
                        break
                    chunk = orjson.dumps(batch)[1:-1]
                    if written:
                        stream.write(b",")
                        size += 1
                    stream.write(chunk)
                    size += len(chunk)
                    written += len(batch)
                stream.write(b"]" + tail)
    return written, size


def _layer_metadata(meta: dict, layer: int) -> dict:
    out = dict(meta)
    if "nn_module_stack" in out:
        out["nn_module_stack"] += (f";L__self__decoder.layers.{layer},decoder.layers.{layer},"
                                   "transformers.Block")
    if "torch_fn" in out:
        out["torch_fn"] = out["torch_fn"].replace(";", f"_r{layer};", 1)
    return out


# --- children: one measurement each ------------------------------------------------------

def _program_bytes(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        info = max((i for i in z.infolist() if "/models/" in i.filename
                    and i.filename.endswith(".json")), key=lambda i: i.file_size)
        return z.read(info)


def child_loads(path: Path) -> dict:
    """A bare orjson.loads, twice: as the issue timed it (cyclic GC on: it rescans the
    growing tree, ~3x slower), then as the archive parses (GC off: the real floor)."""
    import gc

    data = _program_bytes(path)
    t, c = time.perf_counter(), time.process_time()
    doc = orjson.loads(data)
    out = {"gc_wall": time.perf_counter() - t, "gc_cpu": time.process_time() - c}
    del doc
    gc.collect()
    gc.disable()
    t, c = time.perf_counter(), time.process_time()
    doc = orjson.loads(data)
    out.update(wall=time.perf_counter() - t, cpu=time.process_time() - c, peak_mb=_peak_mb(),
               top_keys=len(doc))  # the tree is alive at the peak reading
    return out


def child_window(path: Path) -> dict:
    """First paint of the listing (as bench_window.first_paint, stopping at the paint:
    the peak is the paint's, not the background search index's): the first screen's
    (FirstScreenTab: the head of the text, painted while the program is parsed),
    and the whole program's tab after it (`open_*`)."""
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                      tempfile.mkdtemp(prefix="bench-lean-settings-"))
    app = QApplication.instance() or QApplication([])
    from inspector.ui.window.main_window import MainWindow

    window = MainWindow()
    window.resize(1500, 900)
    window.show()
    app.processEvents()
    first: dict = {}

    def painted(_path: str) -> None:
        first.setdefault("wall", time.perf_counter() - t)
        first.setdefault("cpu", time.process_time() - c)
        first.setdefault("peak_mb", _peak_mb())
        first.setdefault("lines", window.tabs.currentWidget().listing.line_count())

    window.firstScreenShown.connect(painted)
    t, c = time.perf_counter(), time.process_time()
    loop = QEventLoop()
    window.archiveOpened.connect(loop.quit)
    QTimer.singleShot(300_000, loop.quit)
    window.open_archive(path)
    loop.exec()
    tab = window.current_tab()
    tab.listing.viewport().repaint()
    app.processEvents()
    opened = {"open_wall": time.perf_counter() - t, "open_cpu": time.process_time() - c,
              "nodes": tab.view.node_count, "open_peak_mb": _peak_mb()}
    if not first:  # no first screen: the whole program's tab was the first paint
        painted("")
        first["lines"] = 0
    return {**first, **opened}


def child_core(path: Path) -> dict:
    """Open the program (parse + listing), then build the search index, run each
    query and the audit: CPU of this thread for each."""
    from inspector.core.archive import open_archive
    from inspector.core.audit import audit_program
    from inspector.core.errors import InspectorError
    from inspector.core.listing import render_listing
    from inspector.core.program import Device
    from inspector.core.search import SearchIndex, parse_query

    c = time.process_time()
    try:
        with open_archive(path) as archive:
            program = archive.program("decoder")  # the repeated one
            listing = render_listing(program)
    except InspectorError as exc:
        return {"error": str(exc), "peak_mb": _peak_mb()}
    out = {"open_cpu": time.process_time() - c, "nodes": len(program.graph.nodes)}
    c = time.process_time()
    index = SearchIndex(listing)
    out["index_cpu"] = time.process_time() - c
    out["open_peak_mb"] = _peak_mb()
    worst = ("", 0.0)
    for q, regex in QUERIES:
        best = min(_timed(lambda: index.search(parse_query(q, regex=regex))) for _ in range(3))
        worst = max(worst, (q, best), key=lambda w: w[1])
    out["search_worst"] = worst
    # The first audit of a program makes its columns (core/audit.py: device arguments,
    # literal sizes, op namespaces, kept with the nodes); every audit after, for any
    # target or rules, reads them: that is the query timed, for two targets.
    out["audit_first_cpu"] = _timed(lambda: audit_program(program, listing=listing))
    cuda = Device("cuda")
    out["audit_cpu"] = min(_timed(lambda: audit_program(program, listing=listing, target=t))
                           for t in (None, cuda, None, cuda))
    out["peak_mb"] = _peak_mb()
    return out


def _timed(fn) -> float:
    c = time.thread_time()
    fn()
    return time.thread_time() - c


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def installed_env(tmp: Path) -> dict[str, str]:
    """The children's environment: the package's bytecode compiled once into a
    cache of its own, as an installed package has it (a module imported lazily
    while the window opens, compiled from source, was part of a measurement)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "inspector")],
                   env=env, check=True)
    return env


def _median(results: list[dict]) -> dict:
    """The run of median CPU time (an error, if any run failed)."""
    failed = [r for r in results if "error" in r]
    return failed[0] if failed else sorted(results, key=lambda r: r["cpu"])[len(results) // 2]


def _best(results: list[dict]) -> dict:
    """The open of least CPU time (an error, if any failed)."""
    failed = [r for r in results if "error" in r]
    return failed[0] if failed else min(results, key=lambda r: r["open_cpu"])


def run_child(mode: str, path: Path, env: dict[str, str] | None = None) -> dict:
    """One child process; its result and its own peak RSS (os.wait4)."""
    proc = subprocess.Popen([sys.executable, __file__, "--child", mode, str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    out, err = proc.communicate()  # a line of JSON; stderr is small
    result = orjson.loads(out.splitlines()[-1]) if proc.returncode == 0 and out else {
        "error": f"child {mode} failed ({proc.returncode}): {err.decode(errors='replace')[-800:]}"}
    result.setdefault("peak_mb", 0.0)
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toy", type=Path, help="tiny toy archive (default: the cached one, or export now)")
    ap.add_argument("--seed", type=Path, help="full-size toy decoder (default: the cached one)")
    ap.add_argument("--runs", type=int, default=7, help="runs of `list` (the best counts)")
    ap.add_argument("--opens", type=int, default=3,
                    help="alternated opens of the 100k and 400k programs (the best of each counts)")
    ap.add_argument("--paints", type=int, default=3,
                    help="paints, each beside a bare loads (the medians are compared)")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, path = args.child
        result = {"loads": child_loads, "window": child_window, "core": child_core}[mode](Path(path))
        sys.stdout.write(orjson.dumps(result).decode() + "\n")
        sys.stdout.flush()
        os._exit(0)  # no teardown of a 100k-node window: not what is measured

    tmp = Path(tempfile.mkdtemp(prefix="bench-lean-"))
    try:
        return _bench(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # ~1 GB of built programs


def _bench(args: argparse.Namespace, tmp: Path) -> int:
    misses: list[str] = []
    toy = args.toy or CACHE / "toy-tiny.pt2"
    if not toy.exists():
        toy = export_toy(tmp)
    programs = {}
    for label, target in (("100k", 100_000), ("400k", 400_000), ("100k-distinct", 100_000),
                          ("400k-distinct", 400_000)):
        t = time.perf_counter()
        path = tmp / f"{label}.pt2"
        nodes, size = build_program(toy, path, target, distinct=label.endswith("distinct"))
        programs[label] = path
        print(f"built {label}: {nodes:,} nodes, {size / 1e6:.0f} MB of program JSON "
              f"({time.perf_counter() - t:.1f} s)", flush=True)
    # ~1 GB just written: its write-back would run through the first measurements
    # (the first paint read 1.3-2.1 s, the next ones 1.0 s)
    os.sync()

    env = installed_env(tmp)
    # 1. window paint vs a bare orjson.loads, 100k
    rounds = [(run_child("loads", programs["100k"], env), run_child("window", programs["100k"], env))
              for _ in range(args.paints)]  # alternated: both see the machine as it is
    loads, win = (_median([r[k] for r in rounds]) for k in (0, 1))
    if len(rounds) > 1 and "error" not in win and "error" not in loads:
        print("paints (CPU s, first screen / whole tab, each beside a loads): " + ", ".join(
            f"{w['cpu']:.2f} / {w['open_cpu']:.2f} vs {lo['cpu']:.2f}" for lo, w in rounds))
    if "error" in win or "error" in loads:
        misses.append(f"paint: {win.get('error') or loads.get('error')}")
    else:
        ratio = win["cpu"] / loads["cpu"]
        print(f"100k paint: window {win['cpu']:.2f} s CPU ({win['wall']:.2f} s wall), "
              f"peak {win['peak_mb']:.0f} MB, {win['lines']:,} lines from the head of the text "
              f"(0: none, the whole program's tab was the first paint) | bare orjson.loads "
              f"{loads['cpu']:.2f} s CPU ({loads['wall']:.2f} s wall; with the cyclic GC on, as "
              f"the issue timed it, {loads['gc_cpu']:.2f} s CPU), peak {loads['peak_mb']:.0f} MB | "
              f"ratio {ratio:.2f}x CPU, {win['wall'] / loads['wall']:.2f}x wall; "
              f"{win['cpu'] / loads['gc_cpu']:.2f}x the GC-on loads "
              f"(target <= 0.5x of the GC-off floor, peak < 800 MB)")
        print(f"100k whole program's tab (parsed, first chunk listed, replacing the first "
              f"screen): {win['open_cpu']:.2f} s CPU ({win['open_wall']:.2f} s wall), "
              f"{win['open_cpu'] / loads['cpu']:.2f}x the loads, peak {win['open_peak_mb']:.0f} MB")
        if ratio > 0.5:
            misses.append(f"paint {ratio:.2f}x orjson.loads")
        if win["peak_mb"] >= 800 or win["open_peak_mb"] >= 800:
            misses.append(f"paint peak {max(win['peak_mb'], win['open_peak_mb']):.0f} MB")

    # 2. the 400k program vs the 100k one: open, search, audit
    # The 100k and 400k opens alternate, --opens times: a shared machine's speed
    # swings by a third within minutes (the same 400k open took 22-26 s in one
    # quarter of an hour), and the best of each is the one it slowed least.
    opens: dict[str, list[dict]] = {"100k": [], "400k": []}
    for _ in range(max(1, args.opens)):
        for label in opens:
            opens[label].append(run_child("core", programs[label], env))
    if args.opens > 1:
        print("opens (CPU s, alternated): " + "; ".join(
            f"{label} " + ", ".join(f"{r['open_cpu']:.2f}" if "error" not in r else "error"
                                    for r in runs) for label, runs in opens.items()))
    core = {label: _best(runs) for label, runs in opens.items()}
    core.update({label: run_child("core", path, env) for label, path in programs.items()
                 if label not in core})
    # (the "distinct" programs: not the targets, which repeat a graph as it
    # is; printed to show what layers that differ, as a real model's do, cost)
    for label, r in core.items():
        if "error" in r:
            print(f"{label} open: REFUSED after peak {r['peak_mb']:.0f} MB: {r['error']}")
        else:
            print(f"{label} open (parse + listing): {r['open_cpu']:.2f} s CPU, peak {r['open_peak_mb']:.0f} MB"
                  f" ({r['nodes']:,} nodes); search index +{r['index_cpu']:.2f} s; worst search "
                  f"{r['search_worst'][0]!r} {r['search_worst'][1] * 1000:.0f} ms; audit "
                  f"{r['audit_cpu'] * 1000:.0f} ms (the first, making its columns, "
                  f"{r['audit_first_cpu'] * 1000:.0f} ms); peak {r['peak_mb']:.0f} MB")
    small, big = core["100k"], core["400k"]
    if "error" in big or "error" in small:
        misses.append(f"400k open: {(big.get('error') or small.get('error'))[:120]}")
    else:
        ratio = big["open_cpu"] / small["open_cpu"]
        print(f"400k / 100k open: {ratio:.2f}x, the best of {max(1, args.opens)} each "
              f"(target <= 4.5x, peak < 3 GB)")
        if ratio > 4.5:
            misses.append(f"400k open {ratio:.2f}x the 100k")
        if big["peak_mb"] >= 3072:
            misses.append(f"400k peak {big['peak_mb']:.0f} MB")
        if big["search_worst"][1] >= 0.1:
            misses.append(f"400k search {big['search_worst'][1] * 1000:.0f} ms")
        if big["audit_cpu"] >= 0.1:
            misses.append(f"400k audit {big['audit_cpu'] * 1000:.0f} ms")

    # 3. `list` of the full-size toy decoder, whole process
    seed = args.seed or seed_decoder_archive()
    bare_wall, bare_cpu = whole_process([sys.executable, "-c", "pass"], args.runs, env)
    whole_process([sys.executable, "-m", "inspector", "list", str(seed)], 1, env)  # writes bytecode
    list_wall, list_cpu = whole_process([sys.executable, "-m", "inspector", "list", str(seed)],
                                        args.runs, env)
    print(f"list {seed.name}: best {list_wall * 1000:.0f} ms wall, {list_cpu * 1000:.0f} ms CPU "
          f"| bare interpreter {bare_wall * 1000:.0f} ms wall, {bare_cpu * 1000:.0f} ms CPU "
          f"(target <= 100 ms wall on a quiet machine; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs)")
    if list_wall > 0.1:
        misses.append(f"list {list_wall * 1000:.0f} ms wall")
    print("MISS: " + "; ".join(misses) if misses else "all goals met")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
