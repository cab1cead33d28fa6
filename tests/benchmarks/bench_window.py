"""Window benchmarks: time to first paint (toy decoder, 100k-node program),
scrolling paint times, and search latency on the 100k-node program.

Run:  QT_QPA_PLATFORM=offscreen .venv/bin/python tests/benchmarks/bench_window.py [--toy T.pt2]

The 100k-node program is built from the real tiny GPT-2 decoder the export job
writes: its nodes are repeated with renamed values (metadata — stack traces,
nn_module_stack — kept as they are), so every node carries real-sized metadata.
Goals (issue 4): open + first paint < 10 s, search < 100 ms per query, no
stutter while scrolling (a page paints well under a 16 ms frame).

Judged side by side, in this run, on CPU time (which a busy machine does not
inflate as it does wall time): first paint of the 100k program against the
floor of reading it (orjson.loads + the program model, measured here on the same
bytes), each search against a plain scan of the listing's lines for the same
text; exit 1 on a miss:
  first paint CPU <= 3x the read floor, and < 10 s;
  every search's CPU <= the plain scan's, and < 100 ms;
  scroll paint p95 CPU < 16.7 ms (one 60 Hz frame).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import orjson

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TARGET_NODES = 100_000


def export_toy(folder: Path) -> Path:
    out = folder / "toy.pt2"
    subprocess.run([sys.executable, "-m", "inspector.jobs", "export", "--preset", "tiny", "-o", str(out)],
                   cwd=ROOT, check=True, capture_output=True)
    return out


def _rename(obj, names: set[str], suffix: str):
    """Rename value references (`name`/`as_name` strings) inside arguments."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ("name", "as_name") and isinstance(v, str) and v in names:
                out[k] = v + suffix
            else:
                out[k] = _rename(v, names, suffix)
        return out
    if isinstance(obj, list):
        return [_rename(v, names, suffix) for v in obj]
    return obj


def _defined(node: dict) -> set[str]:
    found: set[str] = set()

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("name", "as_name") and isinstance(v, str):
                    found.add(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(node.get("outputs"))
    return found


def build_big_archive(toy: Path, out: Path, program: str = "decoder") -> tuple[Path, int, int]:
    """Repeat the toy program's nodes to TARGET_NODES; returns (path, nodes, json bytes)."""
    with zipfile.ZipFile(toy) as zf:
        names = zf.namelist()
        model_name = next(n for n in names if n.endswith(f"models/{program}.json"))
        doc = orjson.loads(zf.read(model_name))
        graph = doc["graph_module"]["graph"]
        nodes = graph["nodes"]
        defined: set[str] = set()
        for n in nodes:
            defined |= _defined(n)
        copies = -(-TARGET_NODES // len(nodes))
        new_nodes, tv, si = [], dict(graph["tensor_values"]), dict(graph.get("sym_int_values", {}))
        for j in range(copies):
            suffix = "" if j == 0 else f"_r{j}"
            for n in nodes:
                if len(new_nodes) >= TARGET_NODES:
                    break
                m = _rename(n, defined, suffix) if suffix else n
                if suffix and m.get("name"):
                    m["name"] = m["name"] + suffix
                new_nodes.append(m)
            if suffix:
                for k, v in graph["tensor_values"].items():
                    if k in defined:
                        tv[k + suffix] = v
                for k, v in graph.get("sym_int_values", {}).items():
                    if k in defined:
                        si[k + suffix] = v
        graph["nodes"] = new_nodes
        graph["tensor_values"] = tv
        graph["sym_int_values"] = si
        data = orjson.dumps(doc)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for n in names:
                dst.writestr(n, data if n == model_name else zf.read(n))
    return out, len(new_nodes), len(data)


def first_paint(app, window, path: Path) -> tuple[float, float, object, float]:
    """Seconds to the listing's first paint, to the search index being ready, the
    tab, and the process's CPU seconds to the first paint (all threads)."""
    from PySide6.QtCore import QEventLoop, QTimer

    t0, c0 = time.perf_counter(), time.process_time()
    loop = QEventLoop()
    window.archiveOpened.connect(loop.quit)
    QTimer.singleShot(300_000, loop.quit)
    window.open_archive(path)
    loop.exec()
    window.archiveOpened.disconnect(loop.quit)
    tab = window.current_tab()
    tab.listing.viewport().repaint()
    app.processEvents()
    painted, painted_cpu = time.perf_counter() - t0, time.process_time() - c0
    if window.is_loading():
        window.loadsFinished.connect(loop.quit)
        loop.exec()
        window.loadsFinished.disconnect(loop.quit)
    return painted, time.perf_counter() - t0, tab, painted_cpu


def paint_times(app, tab, moves: list[int], idle_s: float = 0.0) -> tuple[list[float], list[float]]:
    """Paint time per scroll step: (wall ms, CPU ms of the GUI thread). With
    `idle_s`, the event loop runs between steps as it does between key repeats
    (that is when the view shapes the next pages ahead)."""
    wall, cpu = [], []
    view = tab.listing
    for line in moves:
        view.verticalScrollBar().setValue(line)
        t, c = time.perf_counter(), time.thread_time()
        view.viewport().repaint()
        wall.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
        end = time.perf_counter() + idle_s
        while time.perf_counter() < end:
            app.processEvents()
    return wall, cpu


def search_times(index, queries: list[tuple[str, bool]], repeats: int = 5):
    """(query, regex, matches, median wall ms, median CPU ms of this thread)."""
    from inspector.core.search import parse_query

    rows = []
    for q, regex in queries:
        wall, cpu, count = [], [], 0
        for _ in range(repeats):
            t, c = time.perf_counter(), time.thread_time()
            count = len(index.search(parse_query(q, regex=regex)))
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.thread_time() - c) * 1000)
        rows.append((q, regex, count, statistics.median(wall), statistics.median(cpu)))
    return rows


def read_floor(path: Path) -> float:
    """CPU seconds to read the archive's program JSON and build the program model:
    what any viewer of this file must spend before it can paint."""
    from inspector.core.program import parse_program

    with zipfile.ZipFile(path) as z:
        # the 100k-node program: the biggest program record
        info = max((i for i in z.infolist() if "/models/" in i.filename
                    and i.filename.endswith(".json")), key=lambda i: i.file_size)
        name, data = info.filename, z.read(info.filename)
    c = time.process_time()
    parse_program(orjson.loads(data), Path(name).stem)
    return time.process_time() - c


def scan_cpu_ms(lines: list[str], needle: str, regex: bool, repeats: int = 3) -> float:
    """Median CPU ms of the naive search: every line scanned for the text."""
    import re

    pattern = re.compile(needle if regex else re.escape(needle), re.IGNORECASE)
    times = []
    for _ in range(repeats):
        c = time.thread_time()
        _ = [i for i, line in enumerate(lines) if pattern.search(line)]
        times.append((time.thread_time() - c) * 1000)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toy", type=Path, help="toy archive (default: export one now)")
    args = ap.parse_args()
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    tmp = Path(tempfile.mkdtemp(prefix="bench-window-"))
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp / "settings"))
    toy = args.toy or export_toy(tmp)
    t = time.perf_counter()
    big, n_nodes, n_bytes = build_big_archive(toy, tmp / "big.pt2")
    print(f"built {big.name}: {n_nodes:,} nodes, {n_bytes / 1e6:.0f} MB of program JSON "
          f"({time.perf_counter() - t:.1f} s)")

    app = QApplication.instance() or QApplication([])
    from inspector.ui.window.main_window import MainWindow

    window = MainWindow()
    window.resize(1500, 900)
    window.show()
    app.processEvents()

    cpu0 = time.process_time()
    toy_s, toy_ready, toy_tab, _ = first_paint(app, window, toy)
    print(f"toy decoder: first paint {toy_s * 1000:.0f} ms "
          f"({toy_tab.view.node_count:,} nodes; read+listing {toy_tab.view.seconds * 1000:.0f} ms, "
          f"index {toy_tab.view.index_seconds * 1000:.0f} ms)")
    cpu1 = time.process_time()
    big_s, big_ready, tab, paint_cpu = first_paint(app, window, big)
    big_cpu = time.process_time() - cpu1
    # CPU to first paint only (the index is built after it, in a worker thread)
    floor = read_floor(big)
    v = tab.view
    print(f"100k program: first paint {big_s:.2f} s (goal < 10 s: {big_s / 10:.2f} of budget); "
          f"read+listing {v.seconds:.2f} s; search index ready at {big_ready:.2f} s "
          f"(+{v.index_seconds:.2f} s, in the background); {len(v.listing):,} lines; "
          f"ratio to toy {big_s / toy_s:.0f}x for {v.node_count / toy_tab.view.node_count:.0f}x nodes")
    print(f"100k program: CPU time of the process until the index was ready {big_cpu:.1f} s "
          f"(wall {big_ready:.1f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: "
          f"wall ≫ CPU means the machine was busy)")
    del cpu0
    print(f"100k program: read floor (orjson + program model) {floor:.2f} s CPU; first paint "
          f"{paint_cpu:.2f} s CPU = {paint_cpu / floor:.2f}x the floor (goal <= 3x, < 10 s)")
    misses: list[str] = []
    if paint_cpu / floor > 3 or paint_cpu >= 10:
        misses.append(f"first paint {paint_cpu:.2f} s CPU = {paint_cpu / floor:.2f}x the read floor")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MB")

    rows = tab.listing._visible_rows()
    n = len(v.listing)
    pages = list(range(0, min(n, 150 * rows), rows))
    jumps = [random.Random(1).randrange(n) for _ in range(100)]
    for label, moves, idle in (("page-down, 30 ms between keys", pages, 0.03),
                               ("page-down, no pause (held key, cold)", [p + 50_000 for p in pages], 0.0),
                               ("random jumps (cold)", jumps, 0.0),
                               ("page-down again (cached)", pages, 0.0)):
        wall, cpu = paint_times(app, tab, moves, idle)
        wall.sort()
        cpu.sort()
        p95_cpu = cpu[int(len(cpu) * 0.95) - 1]
        print(f"scroll paint, {label}: median {statistics.median(wall):.1f} ms wall / "
              f"{statistics.median(cpu):.1f} ms CPU, p95 {wall[int(len(wall) * 0.95) - 1]:.1f} ms wall "
              f"/ {p95_cpu:.1f} ms CPU (a 60 Hz frame is 16.7 ms)")
        if p95_cpu >= 16.7:
            misses.append(f"scroll paint ({label}) p95 {p95_cpu:.1f} ms CPU")

    queries = [("cpu", False), ("CPU device", False), ("op:arange", False), ("device:cpu", False),
               ("module:decoder.transformer.h.0", False), ("file:modeling_gpt2.py", False),
               ("file:modeling_gpt2.py:573", False), ("target:aten.to", False), ("name:add_", False),
               ("op:arange cpu", False), ("zzz_not_there", False), (r"arange_\d+", True),
               (r"device\(type='cpu'\)", True)]
    worst_wall = worst_cpu = 0.0
    lines = list(v.listing.lines)
    for q, regex, count, wall_ms, cpu_ms in search_times(v.index, queries):
        worst_wall, worst_cpu = max(worst_wall, wall_ms), max(worst_cpu, cpu_ms)
        kind = "regex" if regex else "query"
        # the plain scan looks for the query's free text (a field query's value)
        scan = scan_cpu_ms(lines, q.split(":", 1)[-1] if not regex else q, regex)
        print(f"search {kind} {q!r:36} {count:>8,} lines  median {wall_ms:6.1f} ms wall, "
              f"{cpu_ms:6.1f} ms CPU; plain scan {scan:6.1f} ms CPU ({cpu_ms / scan:.2f}x)")
        if cpu_ms > scan or cpu_ms >= 100:
            misses.append(f"search {q!r} {cpu_ms:.1f} ms CPU vs scan {scan:.1f} ms")
    print(f"worst search: {worst_wall:.1f} ms wall, {worst_cpu:.1f} ms CPU "
          f"(goal < 100 ms: {worst_wall / 100:.2f} / {worst_cpu / 100:.2f} of budget); "
          f"load average during the run {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    window.close()
    print("MISS: " + "; ".join(misses) if misses else "all goals met")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())
