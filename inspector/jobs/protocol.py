"""The job event protocol: one JSON object per line on the child's stdout.

Shared by the child (which emits) and the parent (CLI or window, which parses).
Kinds:
  progress  {"event": "progress", "stage": str, "fraction": float in [0, 1]}
  log       {"event": "log", "level": "info"|"note"|"warning"|"error", "message": str}
            ("note": a word for the user that is not a problem, e.g. "compiling (first
            call)…"; shown as it is, where a warning is prefixed "warning:")
  sample    {"event": "sample", ...job-specific fields (e.g. token, ms)}
  result    {"event": "result", ...job-specific fields}   (last event of a success)
  error     {"event": "error", "message": str, "details": str, "code": str}
            (last event of a failure; `code` says what kind, so a parent never matches
            message text: see CODES)
A child's stdout carries only events; anything torch prints goes to stderr.

The parent side is `EventStream` (bytes in; events, terminal state, stderr tail and
the final failure out), fed by both parents: the CLI (jobs/runner.py, a pipe) and the
window (ui/job_runner.py, a QProcess). One stderr policy (StderrTail) for both.

Per job (see each job's module for details):
  export   progress stages: import torch, build model, export encoder, export decoder,
           [decompose], save, done. result: paths, programs, bytes, seconds,
           stage_seconds, ranges {batch: [min, max], seq_len: [min, max]},
           range_constraints {program: {symbol: [min, max]}}, spec.
  run      sample per token: repeat, step, ms. result: device, device_name, mode, compile,
           precision, batch, tokens, max_tokens, warmup, repeats, per_token_ms,
           encoder_ms, total_ms, p50_ms, p90_ms, p99_ms, tokens_per_s, runs_total_ms,
           token_ids, torch, timer.
  devices  result: devices [{id, kind, name, memory_bytes, capability?}], torch, cuda.
  check    progress per node batch. result: device, programs [{name, ok, failures [{node,
           target, line, message, frames [{file, line, function, code, user}]}],
           unchecked, inputs, nodes}] (jobs/check.py).
  profile  progress per run. result: device, device_name, precision, warmup, repeats,
           timer, threads, torch, programs [{name, ok, failures, inputs, symbols,
           forward_ms, node_ms, instrumented_ms, runs, nodes [{name, target, ms, share,
           line, module}], modules, ops, sources}] (jobs/profile.py).
  numerics progress per node. result: reference, candidate, torch, programs [{name, ok,
           failures, inputs, nodes [{node, line, module, max_abs, max_rel, mean_abs,
           cosine, passes, nan, inf, ...}], first_over_tolerance, first_nan, first_inf,
           modules, most_amplifying, ...}] (jobs/numerics.py).
Exit codes: 0 result sent, 1 error event sent, 130 cancelled (SIGTERM/SIGINT).
"""

from __future__ import annotations

import collections
import json
import sys
from dataclasses import dataclass, field
from typing import IO, Any

PROGRESS = "progress"
LOG = "log"
SAMPLE = "sample"
RESULT = "result"
ERROR = "error"
KINDS = (PROGRESS, LOG, SAMPLE, RESULT, ERROR)

# Error codes (the "code" of an error event; JobFailure.code on the parent side).
UNTRUSTED = "untrusted"  # the archive would run code when loaded: ask, rerun with --trust
UNSAFE = "unsafe"  # a program's JSON outside the grammar a genuine export produces
SPEC = "spec"  # options that cannot work (a bad range, size, device name)
USAGE = "usage"  # bad job arguments, or torch is not installed
OOM = "oom"  # out of memory (host or device)
DEVICE = "device"  # the device is missing or failed
ARCHIVE = "archive"  # the archive cannot be read
CANCELLED = "cancelled"  # the parent stopped it
CRASHED = "crashed"  # ended without a result or an error event (killed, segfault)
FAILED = "failed"  # any other failure of the job
INTERNAL = "internal"  # a bug of ours (or torch's): details hold the traceback
CODES = (UNTRUSTED, UNSAFE, SPEC, USAGE, OOM, DEVICE, ARCHIVE, CANCELLED, CRASHED, FAILED,
         INTERNAL)

# Exception class name -> code, for the job's own errors (a class may also carry a
# `code` attribute, which wins). By name, so this module imports nothing of the jobs.
_CODE_OF_CLASS = {
    "UntrustedArchiveError": UNTRUSTED, "UnsafeProgramError": UNSAFE,
    "ExportSpecError": SPEC, "RunSpecError": SPEC, "_ArgError": USAGE,
    "ArchiveError": ARCHIVE, "OutOfMemoryError": OOM, "JobCancelled": CANCELLED,
}
STDERR_KEEP_BYTES = 64 * 1024  # the tail of a child's stderr kept for an error's details
MAX_LINE_BYTES = 64 * 1024 * 1024  # a child that never ends a line is broken, not chatty


class ProtocolError(ValueError):
    """A line from a child that is not a valid event."""


def encode(event: dict[str, Any]) -> str:
    if event.get("event") not in KINDS:
        raise ProtocolError(f"unknown event kind {event.get('event')!r}")
    return json.dumps(event, separators=(",", ":"), allow_nan=False) + "\n"


def decode(line: str | bytes) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not a JSON event: {line[:200]!r}") from exc
    if not isinstance(event, dict) or event.get("event") not in KINDS:
        raise ProtocolError(f"not an event: {line[:200]!r}")
    return event


def progress(stage: str, fraction: float) -> dict[str, Any]:
    return {"event": PROGRESS, "stage": stage, "fraction": max(0.0, min(1.0, float(fraction)))}


def log(message: str, level: str = "info") -> dict[str, Any]:
    return {"event": LOG, "level": level, "message": message}


def sample(**fields: Any) -> dict[str, Any]:
    return {"event": SAMPLE, **fields}


def result(**fields: Any) -> dict[str, Any]:
    return {"event": RESULT, **fields}


def error(message: str, details: str = "", code: str = FAILED) -> dict[str, Any]:
    return {"event": ERROR, "message": message, "details": details, "code": code}


def error_code(exc: BaseException) -> str:
    """The code of an error event for `exc` (its class's `code`, else by class name)."""
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code in CODES:
        return code
    for cls in type(exc).__mro__:
        if cls.__name__ in _CODE_OF_CLASS:
            return _CODE_OF_CLASS[cls.__name__]
    text = str(exc).lower()
    if "out of memory" in text:  # torch's allocators raise plain RuntimeErrors too
        return OOM
    return FAILED if isinstance(exc, Exception) and _is_ours(exc) else INTERNAL


def _is_ours(exc: BaseException) -> bool:
    return any(c.__name__ == "InspectorError" for c in type(exc).__mro__)


class Emitter:
    """Writes events to a stream (the child's real stdout), flushing each line
    so the parent sees progress as it happens."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdout

    def emit(self, event: dict[str, Any]) -> None:
        self._stream.write(encode(event))
        self._stream.flush()

    def progress(self, stage: str, fraction: float) -> None:
        self.emit(progress(stage, fraction))

    def log(self, message: str, level: str = "info") -> None:
        self.emit(log(message, level))

    def sample(self, **fields: Any) -> None:
        self.emit(sample(**fields))

    def result(self, **fields: Any) -> None:
        self.emit(result(**fields))

    def error(self, message: str, details: str = "", code: str = FAILED) -> None:
        self.emit(error(message, details, code))


# --- the parent side ------------------------------------------------------------------

@dataclass(frozen=True)
class JobFailure:
    """How a job failed: its error event (message, details, code), or how it died."""

    message: str
    details: str = ""
    code: str = FAILED
    exit_code: int | None = None

    @property
    def untrusted(self) -> bool:
        """The child refused the archive: loading it would run code from it."""
        return self.code == UNTRUSTED


class StderrTail:
    """The last STDERR_KEEP_BYTES of a child's stderr (torch can print megabytes)."""

    def __init__(self, keep: int = STDERR_KEEP_BYTES) -> None:
        self.keep = keep
        self._parts: collections.deque[bytes] = collections.deque()
        self._size = 0

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._parts.append(data)
        self._size += len(data)
        while self._size > self.keep and len(self._parts) > 1:
            self._size -= len(self._parts.popleft())

    def text(self) -> str:
        raw = b"".join(self._parts)[-self.keep:]
        return raw.decode("utf-8", "replace").strip()


@dataclass
class EventStream:
    """Parent-side reading of one child: feed stdout bytes as they come, stderr bytes to
    `stderr`; `finish(exit_code)` once it has exited gives the failure (None: a result).

    Undecodable lines never stop the stream: they come out as warning log events.
    An error event is held as `error` (the failure is known once the child exited, so
    its details can carry the whole stderr tail)."""

    job: str = "job"
    stderr: StderrTail = field(default_factory=StderrTail)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    _buffer: bytearray = field(default_factory=bytearray)

    @property
    def terminal(self) -> bool:
        """A result or an error event arrived."""
        return self.result is not None or self.error is not None

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        events: list[dict[str, Any]] = []
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(self._buffer[:end])
            del self._buffer[:end + 1]
            events.extend(self._line(line))
        if len(self._buffer) > MAX_LINE_BYTES:
            self._buffer.clear()
            events.append(log("the job wrote an over-long line; dropped it", "warning"))
        return events

    def flush(self) -> list[dict[str, Any]]:
        """The last line, when the child ended without its newline."""
        line, self._buffer = bytes(self._buffer), bytearray()
        return self._line(line)

    def _line(self, line: bytes) -> list[dict[str, Any]]:
        if not line.strip():
            return []
        try:
            event = decode(line)
        except ProtocolError as exc:  # never fatal: show it, keep reading
            return [log(str(exc), "warning")]
        if event["event"] == RESULT:
            self.result = event
        elif event["event"] == ERROR:
            self.error = event
        return [event]

    def finish(self, exit_code: int | None, crashed: bool = False) -> JobFailure | None:
        """The outcome once the child has exited: None after a result event."""
        stderr = self.stderr.text()
        if self.error is not None:
            details = str(self.error.get("details") or "")
            if stderr and stderr not in details:
                details = f"{details}\n\n--- stderr ---\n{stderr}" if details else stderr
            code = self.error.get("code")
            return JobFailure(str(self.error.get("message") or "job failed"), details,
                              code if isinstance(code, str) and code in CODES else FAILED,
                              exit_code)
        if self.result is not None:
            return None
        how = " (it crashed or was killed)" if crashed else ""
        return JobFailure(f"the {self.job} job ended without a result (exit code {exit_code})"
                          f"{how}; it may have crashed or run out of memory",
                          stderr, CRASHED, exit_code)
