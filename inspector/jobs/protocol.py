"""The job event protocol: one JSON object per line on the child's stdout.

Shared by the child (which emits) and the parent (CLI or window, which parses).
Kinds:
  progress  {"event": "progress", "stage": str, "fraction": float in [0, 1]}
  log       {"event": "log", "level": "info"|"warning"|"error", "message": str}
  sample    {"event": "sample", ...job-specific fields (e.g. token, ms)}
  result    {"event": "result", ...job-specific fields}   (last event of a success)
  error     {"event": "error", "message": str, "details": str}  (last event of a failure)
A child's stdout carries only events; anything torch prints goes to stderr.

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
Exit codes: 0 result sent, 1 error event sent, 130 cancelled (SIGTERM/SIGINT).
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

PROGRESS = "progress"
LOG = "log"
SAMPLE = "sample"
RESULT = "result"
ERROR = "error"
KINDS = (PROGRESS, LOG, SAMPLE, RESULT, ERROR)


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


def error(message: str, details: str = "") -> dict[str, Any]:
    return {"event": ERROR, "message": message, "details": details}


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

    def error(self, message: str, details: str = "") -> None:
        self.emit(error(message, details))
