"""Benchmark (issues 4 and 6): the window while jobs run.

1. Event-loop stall while an export job runs (goal < 100 ms). The real MainWindow with
   the toy archive open; a QTimer heartbeat every 5 ms; Export pressed in the Export
   panel; the longest gap between heartbeats from the click to the result event, and
   separately the gaps while the new archive opens in its tab. Printed beside the same
   heartbeat over an idle window for as long, which is what the machine itself allows.
2. Charting overhead (goal <= 5%): the same run job timed headless (jobs.runner.run_job,
   no Qt) and from the Run panel drawing its live chart, interleaved, N rounds each;
   the figure is the child's own per-generation time (total_ms), plus the window's time
   spent redrawing.
3. Cancel latency (goal < 1 s): the job runner on a child that ignores SIGTERM, the
   Export panel at "save", the Run panel mid-run, each beside the same cancel headless;
   and the stall while the Run panel starts and charts a run, beside an idle window with
   the same run child headless (goal < 100 ms added).

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_ui_jobs.py [--archive A.pt2]
        [--rounds 3] [--tokens 48] [--repeats 2] [--skip-export] [--skip-run] [--skip-cancel]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
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


class Heartbeat:
    def __init__(self) -> None:
        self.beats: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(lambda: self.beats.append(time.perf_counter()))

    def start(self) -> None:
        self.beats = [time.perf_counter()]
        self.timer.start()

    def stop(self) -> list[float]:
        self.timer.stop()
        self.beats.append(time.perf_counter())
        return [(b - a) * 1000 for a, b in zip(self.beats, self.beats[1:], strict=False)]


def wait(signal, timeout_s: float) -> None:
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    signal.disconnect(loop.quit)


def idle(seconds: float) -> None:
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def summary(gaps: list[float]) -> str:
    if not gaps:
        return "no beats"
    g = sorted(gaps)
    p99 = g[min(len(g) - 1, int(0.99 * len(g)))]
    return f"max {g[-1]:6.1f} ms  p99 {p99:5.1f} ms  ({len(g)} beats)"


def ensure_archive(path: str | None) -> Path:
    if path:
        return Path(path)
    cache = Path.home() / ".cache" / "pt2-inspector-bench"
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / "ui-jobs-tiny.pt2"
    if not out.exists():
        subprocess.run([sys.executable, "-m", "inspector.jobs", "export", "--preset", "tiny",
                        "-o", str(out)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out


def bench_export(app: QApplication, archive: Path) -> list[str]:
    """The misses (empty when every goal is met)."""
    from inspector.ui.window.main_window import MainWindow

    window = MainWindow()
    window.resize(1400, 900)
    window.show()
    window.open_archive(archive)
    if window.is_loading():
        wait(window.loadsFinished, 120)
    panels = window.job_panels
    panels.docks["export"].raise_()
    panel = panels.export
    # Let the window finish what opening started (audit worker, listing prefetch): this
    # measures the export job, not the load.
    idle(3.0)
    stages: list[tuple[float, str]] = []
    panel.runner.progress.connect(lambda st, _f: stages.append((time.perf_counter(), st)))
    hb = Heartbeat()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "toy-tiny.pt2"
        panel.output.setText(str(out))
        panel.batch.set_values(1, 8, 2)
        panel.seq.set_values(2, 64, 8)
        hb.start()
        t0 = time.perf_counter()
        panel.start_export()
        wait(panel.archiveExported, 600)
        job_s = time.perf_counter() - t0
        beats = list(hb.beats)
        during = hb.stop()
        if not out.exists():
            print(f"export failed: {panel.status.text()}")
            window.close()
            return ["the export failed"]
        hb.start()
        if window.is_loading():
            wait(window.loadsFinished, 120)
        opening = hb.stop()
        hb.start()
        idle(min(job_s, 20))
        idle_gaps = hb.stop()
    print(f"export job: {job_s:.1f} s from click to result; window heartbeat every {HEARTBEAT_MS} ms")
    print(f"  stall while the export ran       {summary(during)}   goal < 100 ms")
    if during:
        i = max(range(len(during)), key=during.__getitem__)
        at = beats[i] if i < len(beats) else beats[-1]
        stage = next((st for t, st in reversed(stages) if t <= at), "starting")
        print(f"    longest gap began {at - t0:.2f} s after the click (stage: {stage})")
    print(f"  stall while the new tab opened   {summary(opening)}")
    print(f"  idle window, same machine        {summary(idle_gaps)}")
    window.close()
    # Side by side: the stall the export adds over what this machine gives an idle
    # window in the same run (a loaded CI machine stalls an idle window too).
    worst, idle_worst = max(during, default=0.0), max(idle_gaps, default=0.0)
    print(f"  added stall: {worst - idle_worst:.1f} ms over the idle window's worst "
          "(goal < 100 ms)")
    return [] if worst - idle_worst < 100 else [f"export stalls the window {worst:.0f} ms"]


def bench_run(app: QApplication, archive: Path, rounds: int, tokens: int,
              repeats: int) -> list[str]:
    """The misses (empty when every goal is met)."""
    from inspector.jobs.runner import run_job
    from inspector.jobs.spec import RunSpec
    from inspector.ui.widgets import latency_chart
    from inspector.ui.panels.run import RunPanel

    spec = RunSpec(file=str(archive), batch=1, max_tokens=tokens, warmup=1, repeats=repeats)
    panel = RunPanel()
    panel.resize(1200, 700)
    panel.show()
    panel.set_archive(str(archive))
    panel.batch.setValue(spec.batch)
    panel.max_tokens.setValue(spec.max_tokens)
    panel.warmup.setValue(spec.warmup)
    panel.repeats.setValue(spec.repeats)
    # Time spent drawing in the window process.
    spent = [0.0]
    original = latency_chart.LatencyChart.redraw

    def timed(self, force_hist: bool = False) -> None:
        t = time.perf_counter()
        original(self, force_hist)
        spent[0] += time.perf_counter() - t

    latency_chart.LatencyChart.redraw = timed
    headless: list[float] = []
    drawn: list[float] = []
    child_cpu = {"headless": 0.0, "panel": 0.0}
    gui_cpu = 0.0
    frames = 0
    samples = 0
    for r in range(rounds):
        c0 = _children_cpu()
        res = run_job("run", spec.to_argv())
        child_cpu["headless"] += _children_cpu() - c0
        headless.append(res["total_ms"])
        panel.chart.frames = 0
        c0, g0 = _children_cpu(), time.process_time()
        panel.start_run()
        wait(panel.runner.finished, 900)
        idle(0.2)  # let QProcess reap the child so its CPU time is counted
        gui_cpu += time.process_time() - g0
        child_cpu["panel"] += _children_cpu() - c0
        rec = panel.records[-1]
        if rec.result is None:
            print(f"run failed: {panel.status.text()}")
            latency_chart.LatencyChart.redraw = original
            panel.shutdown()
            return ["the run failed"]
        drawn.append(rec.result["total_ms"])
        frames += panel.chart.frames
        samples += rec.series.n
        print(f"  round {r + 1}: headless {headless[-1]:8.1f} ms/generation   "
              f"panel {drawn[-1]:8.1f} ms/generation")
    latency_chart.LatencyChart.redraw = original
    h, d = statistics.median(headless), statistics.median(drawn)
    print(f"run job, tiny, cpu, batch 1, {tokens} tokens x {repeats} repeats, {rounds} rounds:")
    print(f"  median per generation: headless {h:.1f} ms, with the panel charting {d:.1f} ms "
          f"-> ratio {d / h:.3f} (goal <= 1.05)")
    print(f"  window redraw: {frames} timer frames for {samples} samples, "
          f"{spent[0] * 1000:.1f} ms drawing in all ({spent[0] * 1000 / max(frames, 1):.2f} ms/frame)")
    print(f"  CPU: run child {child_cpu['headless']:.1f} s headless vs {child_cpu['panel']:.1f} s "
          f"under the panel; window process {gui_cpu:.2f} s while charting "
          f"= {100 * gui_cpu / max(child_cpu['panel'], 1e-9):.2f}% of the child's CPU")
    panel.shutdown()
    return [] if d / h <= 1.05 else [f"charting costs the run {d / h:.3f}x"]


def _alive(pid: int) -> bool:
    """Running (a zombie has ended: only the reaping is left)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("utf-8", "replace")
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _until(done, timeout_s: float = 60.0) -> float:
    """Seconds until done() holds, turning the event loop meanwhile (2 ms polls)."""
    app = QApplication.instance()
    t0 = time.perf_counter()
    while not done():
        if time.perf_counter() - t0 > timeout_s:
            raise SystemExit(f"still not done after {timeout_s:.0f} s")
        app.processEvents()
        time.sleep(0.002)
    return time.perf_counter() - t0


CANCEL_GOAL_S = 1.0  # issues 3, 4, 6: Cancel ends the child (and all it spawned) within 1 s


def bench_cancel(app: QApplication, archive: Path, rounds: int) -> list[str]:
    """Cancel as the window does it, beside the same cancel headless (jobs.runner.Job),
    in one run; the goal is the child gone within CANCEL_GOAL_S. The tests check that a
    cancel kills (by event order); how fast is measured here.

    1. JobRunner on a child that ignores SIGTERM and has a grandchild: cancel() to both
       gone (the SIGKILL fallback after KILL_AFTER_S is the whole cost).
    2. Export panel, cancelled on reaching "save": cancel() to the child gone and its
       partial folder removed; headless: bench_export.cancel_latency at "save".
    3. Run panel, stopped after its 16th sample: stop() to the child gone, with the
       longest event-loop stall while it started and charted, beside an idle window's
       while the same child runs headless; headless cancel: bench_run.cancel_latency.
    """
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_export import cancel_latency as headless_export_cancel
    from bench_run import cancel_latency as headless_run_cancel

    from inspector.ui.job_runner import KILL_AFTER_S, JobRunner
    from inspector.ui.panels.export import ExportPanel
    from inspector.ui.panels.run import RunPanel

    misses: list[str] = []
    # 1. a stubborn child and its grandchild
    stubborn: list[float] = []
    runner = JobRunner()  # one for all rounds, as a panel has
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            pidfile = Path(tmp) / "grandchild.pid"
            runner.start_command(sys.executable, ["-u", "-c", (
                "import json, signal, subprocess, sys, time\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
                f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
                "print(json.dumps({'event': 'progress', 'stage': 'busy', 'fraction': 0.5}),"
                " flush=True)\n"
                "time.sleep(600)\n")], job="bench")
            wait(runner.progress, 60)
            child, grandchild = runner.pid(), int(pidfile.read_text())
            t0 = time.perf_counter()
            runner.cancel()
            _until(lambda: not _alive(child) and not _alive(grandchild))
            stubborn.append(time.perf_counter() - t0)
    runner.shutdown()
    worst = max(stubborn)
    print(f"cancel, {rounds} rounds each (worst; goal < {CANCEL_GOAL_S * 1000:.0f} ms):")
    print(f"  job runner, child ignoring SIGTERM + grandchild: {worst * 1000:6.0f} ms "
          f"= {worst / CANCEL_GOAL_S:.2f}x the goal (SIGKILL after {KILL_AFTER_S * 1000:.0f} ms)")
    if worst >= CANCEL_GOAL_S:
        misses.append(f"the job runner's cancel took {worst * 1000:.0f} ms")

    # 2. the export panel at "save", and the same cancel headless, interleaved
    panel_s: list[float] = []
    bare_s: list[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "out"
            folder.mkdir()
            panel = ExportPanel()
            panel.output.setText(str(folder / "toy-tiny.pt2"))
            at: list[tuple[int, float]] = []

            def on_progress(stage: str, _f: float, panel=panel, at=at) -> None:
                if stage == "save" and not at:
                    pid = panel.runner.pid()
                    at.append((pid, time.perf_counter()))
                    panel.cancel()

            panel.runner.progress.connect(on_progress)
            if not panel.start_export():
                raise SystemExit(f"the export did not start: {panel.problems()}")
            _until(lambda at=at: bool(at), 600)
            pid, t0 = at[0]
            _until(lambda: not _alive(pid) and not any(folder.iterdir()))
            panel_s.append(time.perf_counter() - t0)
            panel.shutdown()
            bare_s.append(headless_export_cancel(Path(tmp) / "bare.pt2", "save"))
    p, b = max(panel_s), max(bare_s)
    print(f"  export panel at 'save' (child gone, partial removed): {p * 1000:6.0f} ms; "
          f"headless {b * 1000:6.0f} ms -> ratio {p / b:.2f}, {p / CANCEL_GOAL_S:.2f}x the goal")
    if p >= CANCEL_GOAL_S:
        misses.append(f"the export panel's cancel took {p * 1000:.0f} ms")

    # 3. the run panel mid-run (stall while charting, then stop), and headless
    panel_s, bare_s, stalls, idles = [], [], [], []
    where: list[str] = []
    for _ in range(rounds):
        panel = RunPanel()
        panel.resize(1200, 700)
        panel.show()
        panel.set_archive(str(archive))
        panel.batch.setValue(1)
        panel.max_tokens.setValue(64)
        panel.warmup.setValue(0)
        panel.repeats.setValue(50)
        hb = Heartbeat()
        samples: list[int] = []
        charting = QEventLoop()  # the same kind of loop as idle(): gaps compare alike

        def on_sample(_e, samples=samples, charting=charting) -> None:
            samples.append(1)
            if len(samples) == 16:  # charting for a while
                charting.quit()

        panel.runner.sample.connect(on_sample)
        stages: list[tuple[float, str]] = []  # where the longest gap fell, for the report
        panel.runner.progress.connect(
            lambda st, _f, stages=stages: stages.append((time.perf_counter(), st)))
        panel.runner.sample.connect(
            lambda _e, stages=stages: stages.append((time.perf_counter(), "sampling")))
        QTimer.singleShot(600_000, charting.quit)
        panel.start_run()
        hb.start()
        charting.exec()
        if len(samples) < 16:
            raise SystemExit(f"the run panel got {len(samples)} samples: {panel.status.text()}")
        t_run = time.perf_counter() - hb.beats[0]
        beats = list(hb.beats)
        gaps = hb.stop()
        stalls.append(max(gaps, default=0.0))
        if gaps:
            i = max(range(len(gaps)), key=gaps.__getitem__)
            at = beats[i] if i < len(beats) else beats[-1]
            where.append(next((st for t, st in reversed(stages) if t <= at), "starting"))
        pid = panel.runner.pid()
        t0 = time.perf_counter()
        panel.stop()
        _until(lambda: not _alive(pid))
        panel_s.append(time.perf_counter() - t0)
        spec = panel.spec()
        panel.shutdown()
        # The baseline: the same run child started headless, competing for the same CPUs,
        # beside an idle window for as long; so the figure is what the panel adds.
        from inspector.jobs.runner import Job

        child = Job("run", spec.to_argv())
        hb.start()
        idle(t_run)
        idles.append(max(hb.stop(), default=0.0))
        child.cancel()
        bare_s.append(headless_run_cancel(archive, "cpu"))
    p, b = max(panel_s), max(bare_s)
    print(f"  run panel mid-run (child gone):                     {p * 1000:6.0f} ms; "
          f"headless {b * 1000:6.0f} ms -> ratio {p / b:.2f}, {p / CANCEL_GOAL_S:.2f}x the goal")
    if p >= CANCEL_GOAL_S:
        misses.append(f"the run panel's stop took {p * 1000:.0f} ms")
    added = max(stalls) - max(idles)
    print(f"  stall while the run panel started and charted: worst {max(stalls):.1f} ms; "
          f"idle window beside the same run headless {max(idles):.1f} ms -> added "
          f"{added:.1f} ms (goal < 100 ms); longest gaps began at: {', '.join(where)}")
    if added >= 100:
        misses.append(f"charting a run stalls the window {added:.0f} ms")
    return misses


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--archive")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--skip-export", action="store_true")
    ap.add_argument("--skip-run", action="store_true")
    ap.add_argument("--skip-cancel", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as settings:
        QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, settings)
        app = QApplication.instance() or QApplication([])
        archive = ensure_archive(args.archive)
        print(f"archive {archive}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        misses: list[str] = []
        if not args.skip_export:
            misses += bench_export(app, archive)
        if not args.skip_run:
            misses += bench_run(app, archive, args.rounds, args.tokens, args.repeats)
        if not args.skip_cancel:
            misses += bench_cancel(app, archive, args.rounds)
    print("MISS: " + "; ".join(misses) if misses else "all goals met")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
