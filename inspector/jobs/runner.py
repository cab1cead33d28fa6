"""Parent side of a job: spawn `python -m inspector.jobs JOB ...`, read its events.

Used by the CLI (export, run, devices). The window drives the same child through a
QProcess (ui/job_runner.py) and reuses `job_argv`/`child_env` (and the specs' `to_argv`)
so both start exactly the same command, the same kill policy (`signal_group`: SIGTERM to
the child's process group, SIGKILL to it after KILL_AFTER_S), the same event stream and
stderr tail (protocol.EventStream), and `cleanup_partial` after it had to kill an export.

Never imports torch: the parent stays light and a crash in torch stays in the child.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import inspector
from inspector.core.errors import InspectorError
from inspector.jobs.protocol import ERROR, RESULT, EventStream, JobFailure

# SIGTERM first, so the child can remove a half-written file; SIGKILL after this long.
# Well under the 1 s a cancel may take, even when torch sits in C++ and ignores SIGTERM.
KILL_AFTER_S = 0.4
CANCEL_GRACE_S = KILL_AFTER_S


class JobError(InspectorError):
    """The child reported an error event, or died without a result."""

    def __init__(self, message: str, details: str = "", exit_code: int | None = None,
                 code: str = "failed") -> None:
        super().__init__(message)
        self.details = details
        self.exit_code = exit_code
        self.code = code  # protocol.CODES: "untrusted", "spec", "oom", ...

    @classmethod
    def of(cls, failure: JobFailure) -> JobError:
        return cls(failure.message, failure.details, failure.exit_code, failure.code)


def signal_group(pid: int, sig: int) -> None:
    """Signal a child's whole process group (each job leads its own session), so what
    it spawned (compile workers) goes with it. A group already gone is fine."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(pid, sig)
        else:  # Windows: no groups
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def job_argv(job: str, args: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "inspector.jobs", job, *args]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The parent's environment, with our package importable even when it is run from
    a checkout rather than installed."""
    env = dict(os.environ)
    root = str(Path(inspector.__file__).resolve().parent.parent)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        env["PYTHONPATH"] = os.pathsep.join([root, *parts])
    env.setdefault("PYTHONIOENCODING", "utf-8")
    env["PT2I_PARENT_PID"] = str(os.getpid())  # lets the child notice an early orphaning
    env.update(extra or {})
    return env


def cleanup_partial(output: str | os.PathLike[str], pid: int) -> None:
    """Remove what an export child with `pid` left before it was SIGKILLed."""
    from inspector.jobs.spec import partial_dir

    shutil.rmtree(partial_dir(output, pid), ignore_errors=True)


class Job:
    """One running child. Iterate `events()`; `cancel()` ends it within ~CANCEL_GRACE_S."""

    def __init__(self, job: str, args: Sequence[str] = (), *,
                 env: dict[str, str] | None = None) -> None:
        self.argv = job_argv(job, args)
        self.stream = EventStream(job)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(env),
            # Its own session: Ctrl+C reaches only us, and we cancel the child in order.
            start_new_session=True,
        )
        self.pid = self.proc.pid
        try:
            self._reader = threading.Thread(target=self._drain_stderr, daemon=True)
            self._reader.start()
        except BaseException:  # never leave a child running that nobody holds
            self.proc.kill()
            self.proc.wait()
            raise

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stream.stderr.feed(raw)

    def stderr_tail(self) -> str:
        return self.stream.stderr.text()

    def events(self) -> Iterator[dict[str, Any]]:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            yield from self.stream.feed(raw)
        yield from self.stream.flush()
        self.proc.wait()

    def failure(self) -> JobFailure | None:
        """After the child exited: how it failed (None: it sent a result)."""
        self._reader.join(timeout=1)  # all of stderr is in the tail
        return self.stream.finish(self.proc.wait(), crashed=(self.proc.returncode or 0) < 0)

    def running(self) -> bool:
        return self.proc.poll() is None

    def cancel(self, grace: float = CANCEL_GRACE_S) -> int:
        if self.proc.poll() is None:
            signal_group(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                signal_group(self.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
        code = self.proc.wait()
        self.close()
        return code

    def close(self) -> None:
        for stream in (self.proc.stdout,):
            if stream is not None:
                stream.close()
        self._reader.join(timeout=1)

    def __enter__(self) -> Job:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


def _hold_sigint() -> bool:
    """Block SIGINT in this thread (main thread of a CLI only); True if blocked."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    return True


def _release_sigint(held: bool) -> None:
    if held:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def run_job(job: str, args: Sequence[str] = (), *,
            on_event: Callable[[dict[str, Any]], None] | None = None,
            on_start: Callable[[Job], None] | None = None,
            env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a job to the end; return its result event, raise JobError on its error
    event. On KeyboardInterrupt the child is cancelled before the exception goes on."""
    # A Ctrl+C while the child is being started would otherwise land between
    # fork and `child = ...`, leaving a running child nobody cancels: hold SIGINT
    # until the child is ours, then let it through inside the try below.
    held = _hold_sigint()
    try:
        child = Job(job, args, env=env)
    except BaseException:
        _release_sigint(held)
        raise
    result: dict[str, Any] | None = None
    try:
        if on_start:
            on_start(child)
        _release_sigint(held)  # a Ctrl+C held meanwhile is raised here
        for event in child.events():
            if on_event:
                on_event(event)
            if event["event"] == RESULT:
                result = event
            elif event["event"] == ERROR:
                break  # the error event is the last one; its failure follows
        failure = child.failure()
    finally:
        child.cancel()
    if failure is not None:
        raise JobError.of(failure)
    assert result is not None
    return result
