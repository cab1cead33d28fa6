"""What differs inside one changed row of a comparison, column by column.

The compare view (ui/widgets/diff_view.py) tints these spans of a changed row's
two texts. Tokens are words, runs of blanks and single characters, so `cpu` ->
`cuda` marks the whole word, not two letters.
"""

from __future__ import annotations

import difflib
import re

_TOKEN = re.compile(r"\w+|\s+|.")  # words, runs of blanks, single characters
Spans = list[tuple[int, int]]


def inline_changes(a: str, b: str) -> tuple[Spans, Spans]:
    """Column spans of `a` and `b` that differ, token by token (a word is one
    token, so `cpu` -> `cuda` marks the whole word, not two letters)."""
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    pa = [0]
    for t in ta:
        pa.append(pa[-1] + len(t))
    pb = [0]
    for t in tb:
        pb.append(pb[-1] + len(t))
    out_a: Spans = []
    out_b: Spans = []
    for tag, i0, i1, j0, j1 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 > i0:
            out_a.append((pa[i0], pa[i1]))
        if j1 > j0:
            out_b.append((pb[j0], pb[j1]))
    return out_a, out_b
