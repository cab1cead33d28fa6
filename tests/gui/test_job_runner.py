"""JobRunner against real child processes: small python -c scripts that speak the job
protocol, and the real `python -m inspector.jobs` entry point."""

from __future__ import annotations

import os
import sys
import textwrap

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from _panel_helpers import _alive, no_leaks, wait_gone  # noqa: E402,F401

from inspector.ui.job_runner import JobRunner  # noqa: E402

PY = sys.executable


class Recorder:
    def __init__(self, runner: JobRunner) -> None:
        self.events: list[tuple] = []
        runner.started.connect(lambda job: self.events.append(("started", job)))
        runner.progress.connect(lambda s, f: self.events.append(("progress", s, f)))
        runner.log.connect(lambda lvl, m: self.events.append(("log", lvl, m)))
        runner.sample.connect(lambda e: self.events.append(("sample", e)))
        runner.result.connect(lambda e: self.events.append(("result", e)))
        runner.error.connect(lambda m, d: self.events.append(("error", m, d)))
        runner.cancelled.connect(lambda: self.events.append(("cancelled",)))
        runner.finished.connect(lambda: self.events.append(("finished",)))

    def kinds(self) -> list[str]:
        return [e[0] for e in self.events]

    def of(self, kind: str) -> list[tuple]:
        return [e for e in self.events if e[0] == kind]


def script(body: str) -> list[str]:
    return ["-u", "-c", textwrap.dedent(body)]


@pytest.fixture
def runner(qtbot, no_leaks):
    r = JobRunner()
    yield r
    r.shutdown()


def run_to_end(qtbot, runner: JobRunner, args: list[str], timeout: int = 10000) -> Recorder:
    rec = Recorder(runner)
    with qtbot.waitSignal(runner.finished, timeout=timeout):
        runner.start_command(PY, args, job="test")
    return rec


def test_events_arrive_in_order(qtbot, runner):
    rec = run_to_end(qtbot, runner, script("""
        import json, sys
        def emit(**e): print(json.dumps(e), flush=True)
        emit(event="progress", stage="load", fraction=0.25)
        emit(event="log", level="info", message="hello")
        for i in range(50):
            emit(event="sample", step=i, ms=1.0 + i)
        # half a line, flushed, then the rest: the runner must join them
        sys.stdout.write('{"event": "progress", "stage": "sa'); sys.stdout.flush()
        import time; time.sleep(0.05)
        sys.stdout.write('ve", "fraction": 0.9}\\n'); sys.stdout.flush()
        emit(event="result", total=42)
    """))
    kinds = rec.kinds()
    assert kinds[0] == "started" and kinds[-1] == "finished"
    assert rec.of("progress") == [("progress", "load", 0.25), ("progress", "save", 0.9)]
    assert rec.of("log") == [("log", "info", "hello")]
    assert [e[1]["step"] for e in rec.of("sample")] == list(range(50))
    assert rec.of("result")[0][1]["total"] == 42
    assert kinds.index("result") > max(i for i, k in enumerate(kinds) if k == "sample")
    assert not rec.of("error")
    assert not runner.is_running()


def test_error_event_carries_stderr_in_details(qtbot, runner):
    rec = run_to_end(qtbot, runner, script("""
        import json, sys
        sys.stderr.write("torch said: Suggested fixes: seq_len = 8\\n"); sys.stderr.flush()
        print(json.dumps({"event": "error", "message": "export failed", "details": "trace"}))
        sys.exit(1)
    """))
    (err,) = rec.of("error")
    assert err[1] == "export failed"
    assert "trace" in err[2] and "Suggested fixes: seq_len = 8" in err[2]
    assert not rec.of("result")


def test_child_dying_without_result_is_an_error(qtbot, runner):
    rec = run_to_end(qtbot, runner, script("""
        import json, sys
        print(json.dumps({"event": "progress", "stage": "x", "fraction": 0.1}))
        sys.stderr.write("Segmentation fault (pretend)\\n")
        sys.exit(3)
    """))
    (err,) = rec.of("error")
    assert err[1].startswith("the test job ended without a result (exit code 3)")
    assert "Segmentation fault (pretend)" in err[2]


def test_garbage_line_is_a_warning_not_fatal(qtbot, runner):
    rec = run_to_end(qtbot, runner, script("""
        import json
        print("this is not json")
        print(json.dumps({"event": "result", "ok": True}))
    """))
    assert any(lvl == "warning" and "not a JSON event" in m for _, lvl, m in rec.of("log"))
    assert rec.of("result") and not rec.of("error")


def test_real_jobs_entry_point_reports_bad_usage(qtbot, runner):
    rec = Recorder(runner)
    with qtbot.waitSignal(runner.finished, timeout=20000):
        runner.start("no-such-job")
    (err,) = rec.of("error")
    assert "usage: python -m inspector.jobs JOB" in err[1]


def test_cancel_kills_child_and_its_group(qtbot, runner, tmp_path):
    """How fast is bench_ui_jobs.py's to measure; here: cancel returns at once, and the
    SIGKILL that follows a SIGTERM reaches a child that ignores it, and its group."""
    pidfile = tmp_path / "grandchild.pid"
    rec = Recorder(runner)
    cleaned: list[int] = []
    # A child that ignores SIGTERM (like torch deep in C++) and has a grandchild.
    with qtbot.waitSignal(runner.progress, timeout=10000):
        runner.start_command(PY, script(f"""
            import json, signal, subprocess, sys, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pidfile)!r}, "w").write(str(g.pid))
            print(json.dumps({{"event": "progress", "stage": "busy", "fraction": 0.5}}), flush=True)
            time.sleep(600)
        """), job="test", cleanup=cleaned.append)
    child = runner.pid()
    grandchild = int(pidfile.read_text())
    assert _alive(child) and _alive(grandchild)
    assert runner.cancel()
    # Detached at once: the panel may start again before the child is gone.
    assert not runner.is_running()
    assert rec.kinds()[-2:] == ["cancelled", "finished"]
    assert _alive(child)  # SIGTERM is ignored: only the SIGKILL after it can end the child
    # Both would sleep ten minutes: gone means killed, and the grandchild with the group.
    qtbot.waitUntil(lambda: not _alive(child) and not _alive(grandchild), timeout=60_000)
    qtbot.waitUntil(lambda: cleaned == [child], timeout=60_000)
    assert not rec.of("error")  # a cancel is not an error


def test_new_start_detaches_the_old_task(qtbot, runner):
    rec = Recorder(runner)
    # The old task sleeps ten minutes, unless stopped; stopped, it writes a late result,
    # which must never reach the runner.
    slow = script("""
        import json, signal, sys, time
        def late(*_):
            print(json.dumps({"event": "result", "who": "old"}), flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, late)
        print(json.dumps({"event": "progress", "stage": "old", "fraction": 0.1}), flush=True)
        time.sleep(600)
    """)
    with qtbot.waitSignal(runner.progress, timeout=10000):
        runner.start_command(PY, slow, job="old")
    old_pid = runner.pid()
    with qtbot.waitSignal(runner.result, timeout=10000) as blocker:
        runner.start_command(PY, script("""
            import json
            print(json.dumps({"event": "result", "who": "new"}), flush=True)
        """), job="new")
    assert blocker.args[0]["who"] == "new"
    assert not wait_gone({old_pid}, timeout=60.0)  # the new start stopped it
    # Once the old task is reaped, all it wrote has been read (and dropped).
    qtbot.waitUntil(lambda: not runner.reaping(), timeout=60_000)
    assert [e[1]["who"] for e in rec.of("result")] == ["new"]
    assert not rec.of("error")


def test_failures_carry_a_code_not_just_text(qtbot, runner):
    failures = []
    runner.failed.connect(failures.append)
    run_to_end(qtbot, runner, script("""
        import json
        print(json.dumps({"event": "error", "message": "would run code", "details": "",
                          "code": "untrusted"}))
    """))
    run_to_end(qtbot, runner, script("import sys; sys.exit(3)"))
    with qtbot.waitSignal(runner.finished, timeout=20000):
        runner.start("no-such-job")  # the real entry point: a usage error
    assert [f.code for f in failures] == ["untrusted", "crashed", "usage"]
    assert failures[1].exit_code == 3
