"""Pygments highlighting of single lines, cached: the listing view asks only for
the lines it paints, so a 100k-node listing costs what one screen costs."""

from __future__ import annotations

import re

from inspector.core.listing_lexer import ListingLexer  # one set of rules (the report uses it too)
from inspector.core.token_categories import token_category

Span = tuple[int, int, str]  # start, end, category (theme.tokens key, or SYMBOL + name)

SYMBOL = "sym:"  # category prefix of a symbol span: "sym:s70" (theme.symbol_color)
# A symbol inside an annotation's brackets: `"i64[s72, 2*s70 + 1]"`, `"Sym(u0)"`
# (the dtype before the bracket, `f32`, looks like one and is not).
SYMBOL_NAME = re.compile(r"(?<![\w.])([a-z]+\d+)(?![\w.(])")


_LEXER = ListingLexer(stripnl=False, ensurenl=False)


def highlight_line(text: str) -> list[Span]:
    """Coloured spans of one line (uncoloured text is simply not listed)."""
    if not text.strip():
        return []
    spans: list[Span] = []
    for start, ttype, value in _LEXER.get_tokens_unprocessed(text):
        if not value:
            continue
        cat = token_category(ttype, function="target")  # torch.ops.* targets
        if cat:
            end = start + len(value)
            if spans and spans[-1][2] == cat and spans[-1][1] == start:
                spans[-1] = (spans[-1][0], end, cat)
            else:
                spans.append((start, end, cat))
    return _with_symbols(text, spans)


def _with_symbols(text: str, spans: list[Span]) -> list[Span]:
    """Split annotation spans around the symbols inside their brackets."""
    out: list[Span] = []
    for start, end, cat in spans:
        if cat != "annotation":
            out.append((start, end, cat))
            continue
        inner = min((i for i in (text.find("[", start, end), text.find("(", start, end)) if i >= 0),
                    default=-1)
        pos = start
        if inner >= 0:
            for m in SYMBOL_NAME.finditer(text, inner, end):
                if m.start() > pos:
                    out.append((pos, m.start(), cat))
                out.append((m.start(), m.end(), SYMBOL + m.group(1)))
                pos = m.end()
        if pos < end:
            out.append((pos, end, cat))
    return out


def symbol_at(spans: list[Span], column: int) -> str | None:
    """The symbol whose span holds `column`, if any."""
    for start, end, cat in spans:
        if start <= column < end and cat.startswith(SYMBOL):
            return cat[len(SYMBOL):]
    return None


class LineCache:
    """Spans per line index, bounded (cleared when full: cheap and good enough
    because a screen holds < 200 lines)."""

    def __init__(self, lines: list[str], capacity: int = 20000) -> None:
        self.lines = lines
        self.capacity = capacity
        self._cache: dict[int, list[Span]] = {}

    def spans(self, index: int) -> list[Span]:
        got = self._cache.get(index)
        if got is None:
            if len(self._cache) >= self.capacity:
                self._cache.clear()
            got = self._cache[index] = highlight_line(self.lines[index])
        return got
