"""Benchmark (issue 19, window): the Weights panel's statistics of every weight of the
full-size toy decoder (465 MB), against the same statistics computed bare
(weight_stats.program_weights, no Qt), interleaved, N rounds each; and the longest
event-loop stall while the panel computes (a QTimer heartbeat every 5 ms), beside the
same heartbeat over an idle window for as long.

Goals: panel/bare <= 1.3x (the panel adds only its progress reports and row model),
longest stall < 100 ms. Exit 1 on a miss.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_weights_panel.py [ARCHIVE]
        [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QSettings, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

HEARTBEAT_MS = 5
RATIO_GOAL = 1.3
STALL_GOAL_MS = 100.0
DEFAULT = Path.home() / ".cache" / "pt2-inspector-bench" / "seed-decoder.pt2"


def _wait(signal, timeout_s: float) -> None:
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    signal.disconnect(loop.quit)


def _heartbeat_gaps(run) -> tuple[float, list[float]]:
    beats = [time.perf_counter()]
    timer = QTimer()
    timer.setInterval(HEARTBEAT_MS)
    timer.timeout.connect(lambda: beats.append(time.perf_counter()))
    timer.start()
    t0 = time.perf_counter()
    run()
    seconds = time.perf_counter() - t0
    timer.stop()
    beats.append(time.perf_counter())
    return seconds, [(b - a) * 1000 for a, b in zip(beats, beats[1:], strict=False)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("archive", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not args.archive.is_file():
        print(f"no archive at {args.archive} (run bench_weights.py first: it exports one)")
        return 1
    settings = tempfile.mkdtemp(prefix="pt2i-bench-settings-")
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, settings)
    app = QApplication.instance() or QApplication([])

    from inspector.core.archive import open_archive
    from inspector.core.weight_stats import program_weights
    from inspector.ui.window.main_window import MainWindow

    window = MainWindow(remember=False)
    window.resize(1400, 880)
    window.show()
    panel = window.job_panels["weights"]
    window.open_archive(str(args.archive))
    _wait(panel.statsReady, 600)
    program = panel.program
    print(f"{args.archive.name}: program {program}, {len(panel.model.entries)} weights, "
          f"{args.archive.stat().st_size / 1e6:.0f} MB")

    bare, gui, stalls, idle = [], [], [], []
    with open_archive(args.archive) as archive:
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            program_weights(archive, program)
            bare.append(time.perf_counter() - t0)

            def compute() -> None:
                panel.compute()
                _wait(panel.statsReady, 600)

            seconds, gaps = _heartbeat_gaps(compute)
            gui.append(seconds)
            stalls.append(max(gaps))
            _, idle_gaps = _heartbeat_gaps(lambda s=seconds: _wait(window.loadsFinished, s))
            idle.append(max(idle_gaps))
    window.close()
    app.processEvents()
    ratio = statistics.median(gui) / statistics.median(bare)
    stall = statistics.median(stalls)
    print(f"bare program_weights: {statistics.median(bare):.2f} s (median of {args.rounds}: "
          + ", ".join(f"{b:.2f}" for b in bare) + ")")
    print(f"Weights panel:        {statistics.median(gui):.2f} s ("
          + ", ".join(f"{g:.2f}" for g in gui) + f")  ratio {ratio:.2f}x (goal <= {RATIO_GOAL}x)")
    print(f"longest event-loop stall while computing: {stall:.0f} ms (idle window: "
          f"{statistics.median(idle):.0f} ms; goal < {STALL_GOAL_MS:.0f} ms)")
    ok = ratio <= RATIO_GOAL and stall < STALL_GOAL_MS
    print("OK" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
