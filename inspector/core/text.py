"""Characters from a file that must not reach a person unmarked.

Names, paths, stack traces and versions come from the archive. Printed raw:
- terminal controls (C0 other than tab and newline, DEL, C1) can retitle a
  terminal or, with OSC 52, write its clipboard;
- bidirectional controls (U+202A..U+202E, U+2066..U+2069, the marks U+200E,
  U+200F, U+061C) reorder what is shown, so code reads differently from what it
  is ("Trojan Source", CVE-2021-42574);
- zero-width and invisible characters (U+200B..U+200D, U+2060..U+2064, U+FEFF,
  U+180E, U+00AD, U+034F) make two different names look the same;
- the line and paragraph separators (U+2028, U+2029) break lines in some views.

`mark_invisible` shows each as a visible `\\uXXXX` (or `\\xXX`) escape, the same
text in the terminal and in the window. `ESCAPES` / `JSON_ESCAPES` are the
str.translate tables (JSON's `\\uXXXX` keeps the decoded data identical).
"""

from __future__ import annotations

import functools
import re

# Terminal control characters other than newline and tab.
CONTROLS = frozenset(c for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c not in (0x09, 0x0A))
BIDI = frozenset((0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)))
INVISIBLE = frozenset((0x00AD, 0x034F, 0x180E, 0x200B, 0x200C, 0x200D, *range(0x2060, 0x2065),
                       0xFEFF, 0x2028, 0x2029))
MARKED = CONTROLS | BIDI | INVISIBLE


def _escape(c: int) -> str:
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


ESCAPES: dict[int, str] = {c: _escape(c) for c in sorted(MARKED)}
JSON_ESCAPES: dict[int, str] = {c: f"\\u{c:04x}" for c in sorted(MARKED)}


def mark_invisible(text: str) -> str:
    """`text` with every control, bidi and invisible character shown as an escape."""
    return text.translate(ESCAPES)


def has_invisible(text: str) -> bool:
    return any(ord(ch) in MARKED for ch in text)


def _ranges(codes: frozenset[int]) -> str:
    """A regex character class body of `codes`, as ranges (a class of ranges scans
    faster than one of 100 single characters)."""
    out, run = [], []
    for c in sorted(codes):
        if run and c != run[-1] + 1:
            out.append(run)
            run = []
        run.append(c)
    out.append(run)
    return "".join(re.escape(chr(r[0])) + ("-" + re.escape(chr(r[-1])) if len(r) > 1 else "")
                   for r in out)


@functools.cache
def _marked() -> re.Pattern[str]:
    """The class of MARKED characters, compiled on first use: compiling it takes
    ~0.4 ms, which every command would pay at import (issue 17: `list` imports
    this module for its escape tables, and never needs the pattern)."""
    return re.compile(f"[{_ranges(MARKED)}]")


_PLAIN_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"  # ASCII that is never marked


def mark_lines(lines: list[str]) -> list[str]:
    """`lines` with `mark_invisible` applied; the same list when none needs it.

    A listing of 200,000 lines is checked in ~20 ms when it is ASCII (the common
    case: deleting the plain bytes leaves nothing), line by line otherwise."""
    joined = "\n".join(lines)
    if joined.isascii() and not joined.encode("ascii").translate(None, _PLAIN_ASCII):
        return lines
    search = _marked().search
    if not search(joined):
        return lines
    return [mark_invisible(line) if search(line) else line for line in lines]
