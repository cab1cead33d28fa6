"""Run one job child (`python -m inspector.jobs JOB ...`) for a panel, through QProcess.

The window never imports torch: exports, runs and the device listing happen in a child
process that writes one JSON event per line on stdout (inspector/jobs/protocol.py).
`JobRunner` turns those lines into Qt signals without blocking the event loop
(QProcess delivers the bytes through the event loop; we only split and decode lines).

One task per panel (orange-widget-base's ConcurrentMixin): `start()` cancels the task
that is running and detaches it first, so nothing from a stale child (a late result, its
"cancelled" error event) ever reaches the panel. `cancel()` sends SIGTERM to the child's
process group (the export job removes its partial file on SIGTERM) and SIGKILL shortly
after, so the child and anything it spawned are gone within a second.

The bytes are read by inspector.jobs.protocol.EventStream, the same parent-side stream
the CLI uses (jobs/runner.py), with the same stderr tail and the same kill policy
(jobs/runner.py's signal_group / KILL_AFTER_S). A failure also comes as `failed`
(a JobFailure with a `code`: "untrusted", "spec", "oom", ...), so panels never match
message text. This module is the window's only way into inspector.jobs.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from inspector.jobs.protocol import (
    LOG,
    PROGRESS,
    RESULT,
    SAMPLE,
    USAGE,
    EventStream,
    JobFailure,
)
from inspector.jobs.runner import KILL_AFTER_S, child_env, job_argv, signal_group

# What panels need of inspector.jobs, re-exported here: the window reaches the jobs only
# through this module (an import contract in pyproject.toml). All of it imports no torch.
from inspector.jobs.protocol import CODES, UNTRUSTED  # noqa: E402,F401
from inspector.jobs.graph_spec import GraphRunSpec, GraphRunSpecError  # noqa: E402,F401
from inspector.jobs.numerics_spec import NumericsSpec  # noqa: E402,F401
from inspector.jobs.runner import cleanup_partial  # noqa: E402,F401
from inspector.jobs.spec import (  # noqa: E402,F401
    BATCH_LIMIT,
    DEFAULT_THREADS,
    MODES,
    PRECISIONS,
    PRESETS,
    SEQ_LEN_LIMIT,
    ExportSpec,
    ExportSpecError,
    RunSpec,
    RunSpecError,
)

KILL_AFTER_MS = int(KILL_AFTER_S * 1000)


def check_export_output(path):  # -> Path
    """The export job's own check of an output path (no torch imported)."""
    from inspector.jobs.export import check_output

    return check_output(path)


class _Task:
    """One child process and the event stream read from it."""

    def __init__(self, proc: QProcess, job: str,
                 cleanup: Callable[[int], None] | None) -> None:
        self.proc = proc
        self.job = job
        self.cleanup = cleanup
        self.pid = 0
        self.stream = EventStream(job)
        self.cancelled = False

    def signal_group(self, sig: int) -> None:
        """Signal the child's whole process group (it leads its own session), so
        helpers it started (compile workers) go with it."""
        if not self.pid:
            return
        if sys.platform == "win32":
            self.proc.kill() if sig == getattr(signal, "SIGKILL", None) else self.proc.terminate()
        else:
            signal_group(self.pid, sig)


class JobRunner(QObject):
    """A panel's job slot. Signals concern the current task only."""

    started = Signal(str)  # job name
    progress = Signal(str, float)  # stage, fraction in [0, 1]
    log = Signal(str, str)  # level, message
    sample = Signal(object)  # the sample event (dict)
    result = Signal(object)  # the result event (dict)
    error = Signal(str, str)  # message, details
    failed = Signal(object)  # JobFailure (message, details, code), just before error
    cancelled = Signal()
    finished = Signal()  # after result/error/cancel: the panel may start again

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._task: _Task | None = None
        self._dying: list[_Task] = []  # cancelled children not yet reaped

    # -- state --
    def reaping(self) -> bool:
        """Whether cancelled children are still being ended and read out."""
        return bool(self._dying)

    def is_running(self) -> bool:
        return self._task is not None

    def pid(self) -> int:
        return self._task.pid if self._task else 0

    # -- control --
    def start(self, job: str, args: Sequence[str] = (), *,
              cleanup: Callable[[int], None] | None = None) -> None:
        """Start `python -m inspector.jobs JOB ARGS`. `cleanup(pid)` runs if the child
        had to be killed (e.g. remove the export's partial folder)."""
        argv = job_argv(job, args)
        self.start_command(argv[0], argv[1:], job=job, cleanup=cleanup)

    def start_command(self, program: str, arguments: Sequence[str], *, job: str = "job",
                      cleanup: Callable[[int], None] | None = None,
                      env: dict[str, str] | None = None) -> None:
        self.cancel()
        proc = QProcess(self)
        proc.setProgram(program)
        proc.setArguments(list(arguments))
        qenv = QProcessEnvironment()
        for key, value in child_env(env).items():
            qenv.insert(key, value)
        proc.setProcessEnvironment(qenv)
        if sys.platform != "win32":
            # Its own session and process group: cancel reaches everything it spawned,
            # and a Ctrl+C in the terminal that started the window does not reach it.
            proc.setUnixProcessParameters(QProcess.UnixProcessFlag.CreateNewSession)
        proc.setStandardInputFile(QProcess.nullDevice())
        task = _Task(proc, job, cleanup)
        self._task = task
        proc.readyReadStandardOutput.connect(lambda: self._read_stdout(task))
        proc.readyReadStandardError.connect(lambda: self._read_stderr(task))
        proc.finished.connect(lambda code, status: self._on_finished(task, code, status))
        proc.errorOccurred.connect(lambda err: self._on_error(task, err))
        proc.start()
        task.pid = int(proc.processId() or 0)
        self.started.emit(job)

    def cancel(self) -> bool:
        """Stop the current task; returns False when none was running. Returns at once:
        the child is detached now and gone within ~KILL_AFTER_MS."""
        task = self._task
        if task is None:
            return False
        self._task = None
        task.cancelled = True
        if task.proc.state() != QProcess.ProcessState.NotRunning:
            self._dying.append(task)
            task.signal_group(signal.SIGTERM)
            QTimer.singleShot(KILL_AFTER_MS, self, lambda: self._kill(task))
        self.cancelled.emit()
        self.finished.emit()
        return True

    def shutdown(self, timeout_ms: int = 1000) -> None:
        """Cancel and wait until every child is reaped (window close, tests)."""
        self.cancel()
        for task in list(self._dying):
            if task.proc.state() != QProcess.ProcessState.NotRunning and not task.proc.waitForFinished(
                    KILL_AFTER_MS):
                task.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))
                task.proc.waitForFinished(timeout_ms)
            self._reap(task)

    # -- child I/O --
    def _kill(self, task: _Task) -> None:
        if task in self._dying and task.proc.state() != QProcess.ProcessState.NotRunning:
            task.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))

    def _read_stdout(self, task: _Task) -> None:
        try:
            data = task.proc.readAllStandardOutput().data()
        except RuntimeError:  # the QProcess went with its parent while it still ran
            return
        if task is not self._task:
            return  # detached: read to keep the pipe flowing, then drop
        self._dispatch(task, task.stream.feed(data))

    def _read_stderr(self, task: _Task) -> None:
        try:
            task.stream.stderr.feed(task.proc.readAllStandardError().data())
        except RuntimeError:  # as in _read_stdout
            pass

    def _dispatch(self, task: _Task, events: list[dict]) -> None:
        for event in events:
            if task is not self._task:  # a handler cancelled or restarted us
                return
            kind = event["event"]
            if kind == PROGRESS:
                self.progress.emit(str(event.get("stage", "")), float(event.get("fraction", 0.0)))
            elif kind == LOG:
                self.log.emit(str(event.get("level", "info")), str(event.get("message", "")))
            elif kind == SAMPLE:
                self.sample.emit(event)
            elif kind == RESULT:
                self.result.emit(event)
            # an error event is held by the stream until the child exits, so the
            # details can carry all of stderr

    def _on_finished(self, task: _Task, code: int, status: QProcess.ExitStatus) -> None:
        try:
            self._finish(task, code, status)
        except RuntimeError:  # the QProcess went with its parent (interpreter teardown)
            pass

    def _finish(self, task: _Task, code: int, status: QProcess.ExitStatus) -> None:
        if task is not self._task:
            self._reap(task)
            return
        self._dispatch(task, task.stream.feed(task.proc.readAllStandardOutput().data()))
        task.stream.stderr.feed(task.proc.readAllStandardError().data())
        if task is self._task:
            self._dispatch(task, task.stream.flush())  # a last line without its newline
        if task is not self._task:
            return
        self._task = None
        failure = task.stream.finish(code, crashed=status == QProcess.ExitStatus.CrashExit)
        if failure is not None:
            self._fail(failure)
        task.proc.deleteLater()
        self.finished.emit()

    def _fail(self, failure: JobFailure) -> None:
        self.failed.emit(failure)
        self.error.emit(failure.message, failure.details)

    def _on_error(self, task: _Task, err: QProcess.ProcessError) -> None:
        if err != QProcess.ProcessError.FailedToStart or task is not self._task:
            return  # crashes arrive through finished()
        self._task = None
        self._fail(JobFailure(f"could not start the {task.job} job ({task.proc.errorString()})",
                              f"{task.proc.program()} {' '.join(task.proc.arguments())}", USAGE))
        task.proc.deleteLater()
        self.finished.emit()

    def _reap(self, task: _Task) -> None:
        if task in self._dying:
            self._dying.remove(task)
        if task.cleanup and task.pid:
            try:
                task.cleanup(task.pid)
            except OSError:
                pass
            task.cleanup = None
        task.proc.deleteLater()

