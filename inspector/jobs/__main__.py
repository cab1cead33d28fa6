"""`python -m inspector.jobs JOB [ARGS]`: run one job in this (child) process.

The parent (CLI or window) reads one JSON event per line from our stdout. To keep that
stream clean, the real stdout is kept for events only and fd 1 is pointed at stderr, so
whatever torch, transformers or C++ code prints lands on stderr.

Cancel: the parent sends SIGTERM (then SIGKILL after a grace period). SIGTERM and
SIGINT raise `JobCancelled`, a BaseException so that no `except Exception` inside torch
swallows it; jobs clean up (no partial files) in `finally` blocks.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import signal
import sys
import traceback
from collections.abc import Sequence

from inspector.core.errors import InspectorError
from inspector.jobs.protocol import CANCELLED, INTERNAL, Emitter, error_code

JOBS = {
    "export": "inspector.jobs.export",
    "run": "inspector.jobs.timed_generation",
    "devices": "inspector.jobs.devices",
    "check": "inspector.jobs.check",
    "profile": "inspector.jobs.profile",
    "numerics": "inspector.jobs.numerics",
}

EXIT_OK = 0
EXIT_FAILED = 1  # an error event was sent
EXIT_CANCELLED = 130


class JobCancelled(BaseException):
    """The parent asked us to stop (SIGTERM) or the user pressed Ctrl+C."""


class _ArgError(InspectorError):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ArgError(f"{self.prog}: {message}")


def _on_signal(signum: int, frame: object) -> None:
    raise JobCancelled(signal.Signals(signum).name)


def _die_with_parent() -> None:
    """Linux: get SIGTERM when the parent dies, so an orphaned export or a GPU run
    does not go on holding memory (best effort, silently skipped elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        # The parent may have died before prctl: compare with the pid it recorded
        # (not with 1: the parent itself may be PID 1 in a container).
        expected = os.environ.get("PT2I_PARENT_PID", "")
        if expected.isdigit() and os.getppid() != int(expected):
            raise JobCancelled("parent gone")
    except OSError:
        pass


def _events_stream():
    """Keep the real stdout for events; send fd 1 (C and Python prints) to stderr."""
    sys.stdout.flush()
    events = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return events


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    emitter = Emitter(_events_stream())
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    if hasattr(signal, "SIGHUP"):  # a closed terminal: cancel and clean up, as SIGTERM
        signal.signal(signal.SIGHUP, _on_signal)
    if hasattr(signal, "pthread_sigmask"):
        # the CLI parent holds SIGINT while it starts us, and a signal mask is
        # inherited across exec: take SIGINT again
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        _die_with_parent()
        if not argv or argv[0] not in JOBS:
            raise _ArgError(
                f"usage: python -m inspector.jobs JOB [ARGS] (JOB: {', '.join(JOBS)})"
            )
        if importlib.util.find_spec("torch") is None:
            # The viewer bundle (packaging/) ships without torch: say so plainly.
            raise _ArgError(
                f"{argv[0]} needs torch, which this installation does not have (the "
                "viewer build leaves it out); install pt2-inspector with torch, or use "
                "the full bundle"
            )
        job = importlib.import_module(JOBS[argv[0]])
        parser = _Parser(prog=f"inspector.jobs {argv[0]}")
        job.add_arguments(parser)
        args = parser.parse_args(argv[1:])
        return job.main(args, emitter)
    except InspectorError as exc:
        details = getattr(exc, "details", "") or traceback.format_exc()
        _safe_emit(emitter, str(exc), details, error_code(exc))
        return EXIT_FAILED
    except JobCancelled:
        _safe_emit(emitter, "cancelled", "", CANCELLED)
        return EXIT_CANCELLED
    except BrokenPipeError:
        return EXIT_CANCELLED  # the parent stopped reading: nobody to tell
    except Exception as exc:  # a bug of ours or torch's: still an event, never a bare trace
        code = error_code(exc)  # torch's OutOfMemoryError -> "oom"
        _safe_emit(emitter, f"internal error: {type(exc).__name__}: {exc}",
                   traceback.format_exc(), INTERNAL if code == "failed" else code)
        return EXIT_FAILED


def _safe_emit(emitter: Emitter, message: str, details: str, code: str) -> None:
    try:
        emitter.error(message, details, code)
    except (BrokenPipeError, ValueError, OSError):
        pass


if __name__ == "__main__":
    code = main()
    try:
        sys.stderr.flush()
    finally:
        # Skip interpreter teardown: torch's atexit work can take seconds and a
        # cancelled child should be gone at once.
        os._exit(code)
