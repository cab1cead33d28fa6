"""What the commands share on the terminal: one JSON style, the progress bar, and the
printer of a job's events (progress, samples, warnings). Commands import this module,
never each other."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import orjson


def write_json(value: Any, stream: Any = None) -> None:
    """The one JSON style of every `--json`: two-space indent, UTF-8, a final newline
    (orjson refuses NaN/inf-free violations the way json.dumps(allow_nan=False) does)."""
    out = stream or sys.stdout
    out.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
              .decode() + "\n")


class ProgressBar:
    """One line on stderr, redrawn in place; only used when stderr is a terminal.
    `delay_s`: drawn only once the work has taken that long (a quick answer stays
    clean; a dry run of minutes shows where it is)."""

    def __init__(self, stream: Any = None, width: int = 30, delay_s: float = 0.0) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.delay_s = delay_s
        self.drawn = False

    def update(self, stage: str, fraction: float) -> None:
        if not self.enabled or time.monotonic() - self.started < self.delay_s:
            return
        self.drawn = True
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r[{bar}] {fraction * 100:3.0f}% {stage:<20}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and (self.drawn or not self.delay_s):
            self.stream.write("\n")
            self.stream.flush()


def event_printer(bar: ProgressBar,
                  sample_text: Callable[[dict[str, Any]], str] | None = None,
                  stream: Any = None) -> Callable[[dict[str, Any]], None]:
    """`on_event` for jobs.runner.run_job: progress (and samples, as `sample_text`
    words them) on the bar, warnings and errors the job logs on stderr (escaped: the
    text may come from an archive)."""
    err = stream or sys.stderr

    def on_event(event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "progress":
            bar.update(str(event.get("stage", "")), float(event.get("fraction", 0.0)))
        elif kind == "sample" and sample_text is not None:
            bar.update(sample_text(event), 1.0)
        elif kind == "log" and event.get("level") == "note":
            err.write(f"{_printable(str(event.get('message', '')))}\n")
        elif kind == "log" and event.get("level") != "info":
            err.write(f"{event.get('level')}: {_printable(str(event.get('message', '')))}\n")

    return on_event


def _printable(text: str) -> str:
    """Control characters (a terminal escape in a message) shown, not obeyed."""
    return "".join(c if c.isprintable() or c in "\t" else repr(c)[1:-1] for c in text)
