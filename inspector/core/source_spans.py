"""Colour spans of a whole source text, per line: the C++ of an AOTInductor
package, and the Python files the Source pane shows (`python_spans`).

The text is lexed once by pygments, as a whole (a `/* ... */` comment or a raw
string over many lines stays right), and cut into per-line spans with a
category name the window's theme colours (`keyword`, `comment`, ...; the one
map of inspector/core/token_categories.py). Big
generated files are bounded: only the first `limit` characters are lexed, the
rest stays plain. Qt-free: the window runs this off its GUI thread and applies
the spans of the lines it paints.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from pygments.lexer import Lexer

from inspector.core.token_categories import token_category

Span = tuple[int, int, str]  # start column, end column, category

# Lexed characters per file: pygments' C++ lexer did ~0.1 MB/s on a busy
# shared machine (4 MiB in 39 s), so 2 MiB keeps a huge wrapper's colours
# within seconds to tens of seconds of a background thread; beyond, plain text.
MAX_HIGHLIGHT_CHARS = 2 * 1024 * 1024


def lexer_for(path: str) -> Lexer:
    from pygments.lexers import CppLexer, PythonLexer

    if path.endswith(".py"):
        return PythonLexer(stripnl=False, ensurenl=False)
    return CppLexer(stripnl=False, ensurenl=False)


def line_spans(text: str, lexer: Lexer, limit: int = MAX_HIGHLIGHT_CHARS,
               category: Callable[[object], str | None] = token_category,
               cancelled: Callable[[], bool] = lambda: False) -> dict[int, list[Span]]:
    """{0-based line: spans} of the first `limit` characters of `text`.
    `cancelled()` is asked now and then: a closed tab stops the work."""
    head = text[:limit]
    starts = [0]
    find = head.find
    i = find("\n")
    while i >= 0:
        starts.append(i + 1)
        i = find("\n", i + 1)
    spans: dict[int, list[Span]] = {}
    for n, (pos, ttype, value) in enumerate(lexer.get_tokens_unprocessed(head)):
        if n % 4096 == 0 and cancelled():
            break
        cat = category(ttype)
        if not cat or not value:
            continue
        end = pos + len(value)
        line = bisect.bisect_right(starts, pos) - 1
        while pos < end and line < len(starts):
            line_end = starts[line + 1] - 1 if line + 1 < len(starts) else len(head)
            seg_end = min(end, line_end)
            if seg_end > pos:
                row = spans.setdefault(line, [])
                s, e = pos - starts[line], seg_end - starts[line]
                if row and row[-1][2] == cat and row[-1][1] == s:
                    row[-1] = (row[-1][0], e, cat)
                else:
                    row.append((s, e, cat))
            line += 1
            pos = starts[line] if line < len(starts) else end
    return spans


def python_spans(text: str, cancelled: Callable[[], bool] = lambda: False) -> dict[int, list[Span]]:
    """{0-based line: spans} of a Python source file (the Source pane's), lexed whole
    so a multi-line string stays right. Pure Python: run it off the GUI thread."""
    return line_spans(text, lexer_for(".py"), len(text), cancelled=cancelled)
