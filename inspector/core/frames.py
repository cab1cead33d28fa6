"""Where a node came from: its stack trace as frames, its nn.Module path.

`stack_trace` is Python traceback text (outermost frame first); node metadata
`nn_module_stack` is `key,path,class` entries joined by `;`. Frames are marked
user code or library code (torch, transformers, anything in site-packages), so
the window can fold library frames and the audit can point at the user's line.
"""

from __future__ import annotations

import re
from functools import lru_cache

from msgspec import Struct  # C-defined records: cheaper to define than dataclasses

_FRAME = re.compile(r'^\s*File "(.+)", line ([0-9]+), in (.+)$')
# Line numbers this long are not real (a file of a billion lines): they come from
# a crafted trace. int() of a 5,000-digit string raises, and 2**64 overflows Qt's
# int: such a frame keeps its place with line 0 ("unknown") for arithmetic, and
# `line_text` keeps the number as recorded for display (cut when absurdly long).
MAX_LINE_DIGITS = 9
MAX_LINE_TEXT = 40
_LIBRARY_MARKERS = ("site-packages/", "dist-packages/", "/lib/python3", "<frozen ",
                    "/torch/", "/transformers/")
_LIBRARY_PREFIXES = ("torch/", "transformers/", "<")


class Frame(Struct, frozen=True):
    file: str
    line: int
    function: str
    code: str  # may be "" when the trace carried no source line
    is_user: bool
    # the line number as the trace wrote it, when `line` cannot hold it (2**64)
    recorded_line: str = ""

    @property
    def line_text(self) -> str:
        """The line number to show: the recorded one, never the 0 of an unreal one."""
        return self.recorded_line or str(self.line)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line_text}"


class ModuleEntry(Struct, frozen=True):
    key: str  # dynamo's key, e.g. L__self___transformer_h_0
    path: str  # module fqn, e.g. transformer.h.0 ("" for the root)
    cls: str  # class qualname, e.g. transformers.models.gpt2.modeling_gpt2.GPT2Block

    @property
    def class_name(self) -> str:
        return self.cls.rsplit(".", 1)[-1]


def is_library_file(path: str) -> bool:
    p = path.replace("\\", "/")
    return any(m in p for m in _LIBRARY_MARKERS) or p.startswith(_LIBRARY_PREFIXES)


def parse_line_number(digits: str) -> int:
    """A trace's line number, or 0 when it is too long to be real."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= MAX_LINE_DIGITS else 0


def recorded_line_text(digits: str) -> str:
    """How an unreal line number is shown: as recorded (leading zeros dropped),
    its middle cut when it is longer than a line of text can sensibly hold."""
    digits = digits.lstrip("0") or "0"
    if len(digits) <= MAX_LINE_DIGITS:
        return ""  # `line` holds it
    if len(digits) <= MAX_LINE_TEXT:
        return digits
    return f"{digits[:16]}…{digits[-8:]} ({len(digits):,} digits)"


@lru_cache(maxsize=8192)
def parse_stack_trace(text: str | None) -> tuple[Frame, ...]:
    """All frames, outermost first (the order the text lists them)."""
    if not text:
        return ()
    lines = text.strip().split("\n")
    frames: list[Frame] = []
    for i, line in enumerate(lines):
        m = _FRAME.match(line.strip())
        if not m:
            continue
        code = ""
        if i + 1 < len(lines) and not _FRAME.match(lines[i + 1].strip()):
            code = lines[i + 1].strip()
        file, digits = m.group(1), m.group(2)
        frames.append(Frame(file, parse_line_number(digits), m.group(3), code,
                            not is_library_file(file), recorded_line_text(digits)))
    return tuple(frames)


def summary_frame(text: str | None) -> tuple[str, str, str, str] | None:
    """The frame print_readable names in its `# File: ...` comment: the innermost
    `File` line that has a line after it (FX's _parse_stack_trace), verbatim."""
    if not text:
        return None
    lines = text.strip().split("\n")
    for idx in range(len(lines) - 2, -1, -1):
        m = _FRAME.match(lines[idx].strip())
        if m:
            return m.group(1), m.group(2), m.group(3), lines[idx + 1].strip()
    return None


def first_user_frame(frames: tuple[Frame, ...]) -> Frame | None:
    """The innermost frame in the user's own code (what the audit points at)."""
    for frame in reversed(frames):
        if frame.is_user:
            return frame
    return None


def _split_entry(item: str) -> list[str]:
    """Split `key,path,class` on commas outside brackets (paths can hold
    `getattr(L['self'].h, '0')`), as torch's deserializer does."""
    if "(" not in item and "[" not in item and ")" not in item and "]" not in item:
        return item.split(",")  # no bracket: every comma splits (at C speed)
    out: list[str] = []
    start = depth = 0
    for end, c in enumerate(item):
        if c in "[(":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(item[start:end])
            start = end + 1
    out.append(item[start:])
    return out


@lru_cache(maxsize=8192)
def parse_module_stack(text: str | None) -> tuple[ModuleEntry, ...]:
    """nn_module_stack text -> entries, outermost module first."""
    if not text:
        return ()
    entries: list[ModuleEntry] = []
    for item in text.split(";"):
        parts = _split_entry(item)
        if len(parts) != 3:
            continue  # torch writes exactly three; skip what we cannot read
        key, path, cls = parts
        if key.startswith("_empty_nn_module_stack"):
            continue
        entries.append(ModuleEntry(key, path, cls))
    return tuple(entries)


def module_path(text: str | None) -> str:
    """The innermost module's fqn, e.g. `transformer.h.0.attn` ("" for root)."""
    entries = parse_module_stack(text)
    return entries[-1].path if entries else ""
