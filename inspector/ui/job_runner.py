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
"""

from __future__ import annotations

import collections
import os
import signal
import sys
from collections.abc import Callable, Sequence
from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from inspector.jobs.protocol import ERROR, LOG, PROGRESS, RESULT, SAMPLE, ProtocolError, decode
from inspector.jobs.runner import child_env, job_argv

# SIGTERM first, so the child can remove a half-written file; SIGKILL after this long.
# Well under the 1 s a cancel may take, even when torch sits in C++ and ignores SIGTERM.
KILL_AFTER_MS = 400
STDERR_KEEP_BYTES = 64 * 1024  # the tail of stderr shown as an error's details
MAX_LINE_BYTES = 64 * 1024 * 1024  # a child that never ends a line is broken, not chatty


class _Task:
    """One child process and what we have read from it."""

    def __init__(self, proc: QProcess, job: str,
                 cleanup: Callable[[int], None] | None) -> None:
        self.proc = proc
        self.job = job
        self.cleanup = cleanup
        self.pid = 0
        self.stdout = bytearray()
        self.stderr = collections.deque[bytes]()
        self.stderr_bytes = 0
        self.terminal = False  # a result or error event arrived
        self.error: tuple[str, str] | None = None
        self.cancelled = False

    def stderr_text(self) -> str:
        return b"".join(self.stderr).decode("utf-8", "replace").strip()

    def keep_stderr(self, data: bytes) -> None:
        self.stderr.append(data)
        self.stderr_bytes += len(data)
        while self.stderr_bytes > STDERR_KEEP_BYTES and len(self.stderr) > 1:
            self.stderr_bytes -= len(self.stderr.popleft())

    def signal_group(self, sig: int) -> None:
        """Signal the child's whole process group (it leads its own session), so
        helpers it started (compile workers) go with it."""
        if not self.pid:
            return
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.pid, sig)
            elif sig == getattr(signal, "SIGKILL", None):
                self.proc.kill()
            else:
                self.proc.terminate()
        except (ProcessLookupError, PermissionError):
            pass


class JobRunner(QObject):
    """A panel's job slot. Signals concern the current task only."""

    started = Signal(str)  # job name
    progress = Signal(str, float)  # stage, fraction in [0, 1]
    log = Signal(str, str)  # level, message
    sample = Signal(object)  # the sample event (dict)
    result = Signal(object)  # the result event (dict)
    error = Signal(str, str)  # message, details
    cancelled = Signal()
    finished = Signal()  # after result/error/cancel: the panel may start again

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._task: _Task | None = None
        self._dying: list[_Task] = []  # cancelled children not yet reaped

    # -- state --
    def is_running(self) -> bool:
        return self._task is not None

    def pid(self) -> int:
        return self._task.pid if self._task else 0

    def live_pids(self) -> list[int]:
        """Every child of ours that has not been reaped yet (current and cancelled)."""
        tasks = ([self._task] if self._task else []) + self._dying
        return [t.pid for t in tasks if t.pid and t.proc.state() != QProcess.NotRunning]

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
        proc.readyReadStandardError.connect(
            lambda: task.keep_stderr(proc.readAllStandardError().data()))
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
        if task.proc.state() != QProcess.NotRunning:
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
            if task.proc.state() != QProcess.NotRunning and not task.proc.waitForFinished(
                    KILL_AFTER_MS):
                task.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))
                task.proc.waitForFinished(timeout_ms)
            self._reap(task)

    # -- child I/O --
    def _kill(self, task: _Task) -> None:
        if task in self._dying and task.proc.state() != QProcess.NotRunning:
            task.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))

    def _read_stdout(self, task: _Task) -> None:
        task.stdout += task.proc.readAllStandardOutput().data()
        if task is not self._task:
            task.stdout.clear()  # detached: read to keep the pipe flowing, then drop
            return
        while True:
            end = task.stdout.find(b"\n")
            if end < 0:
                break
            line = bytes(task.stdout[:end])
            del task.stdout[:end + 1]
            self._dispatch(task, line)
            if task is not self._task:  # a handler cancelled or restarted us
                return
        if len(task.stdout) > MAX_LINE_BYTES:
            task.stdout.clear()
            self.log.emit("warning", "the job wrote an over-long line; dropped it")

    def _dispatch(self, task: _Task, line: bytes) -> None:
        if not line.strip():
            return
        try:
            event = decode(line)
        except ProtocolError as exc:  # never fatal: show it, keep reading
            self.log.emit("warning", str(exc))
            return
        kind = event["event"]
        if kind == PROGRESS:
            self.progress.emit(str(event.get("stage", "")), float(event.get("fraction", 0.0)))
        elif kind == LOG:
            self.log.emit(str(event.get("level", "info")), str(event.get("message", "")))
        elif kind == SAMPLE:
            self.sample.emit(event)
        elif kind == RESULT:
            task.terminal = True
            self.result.emit(event)
        elif kind == ERROR:
            # Held until the child exits, so the details can carry all of stderr.
            task.terminal = True
            task.error = (str(event.get("message") or "job failed"),
                          str(event.get("details") or ""))

    def _on_finished(self, task: _Task, code: int, status: QProcess.ExitStatus) -> None:
        try:
            self._finish(task, code, status)
        except RuntimeError:  # the QProcess went with its parent (interpreter teardown)
            pass

    def _finish(self, task: _Task, code: int, status: QProcess.ExitStatus) -> None:
        if task is not self._task:
            self._reap(task)
            return
        task.stdout += task.proc.readAllStandardOutput().data()
        task.keep_stderr(task.proc.readAllStandardError().data())
        if task.stdout.strip():  # a last line without its newline
            self._dispatch(task, bytes(task.stdout))
            task.stdout.clear()
        if task is not self._task:
            return
        self._task = None
        stderr = task.stderr_text()
        if task.error is not None:
            message, details = task.error
            if stderr and stderr not in details:
                details = f"{details}\n\n--- stderr ---\n{stderr}" if details else stderr
            self.error.emit(message, details)
        elif not task.terminal:
            how = " (it crashed or was killed)" if status == QProcess.CrashExit else ""
            self.error.emit(f"job ended unexpectedly (exit code {code}){how}", stderr)
        task.proc.deleteLater()
        self.finished.emit()

    def _on_error(self, task: _Task, err: QProcess.ProcessError) -> None:
        if err != QProcess.FailedToStart or task is not self._task:
            return  # crashes arrive through finished()
        self._task = None
        self.error.emit(f"could not start the {task.job} job ({task.proc.errorString()})",
                        f"{task.proc.program()} {' '.join(task.proc.arguments())}")
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

