"""Two listings side by side: rows of (line in A, line in B, status), aligned
by the matched nodes, and the unified diff the CLI prints from the same rows.

The window's compare view renders the rows and steps through the changes
(F7 / Shift+F7) with `next_change` / `prev_change`; the CLI turns them into
hunks. Both read one alignment, so what the terminal shows as a change is what
the window marks.

How rows are made: each matched node's statement line is an anchor; the
anchors that keep their order on both sides (node_match.increasing_chain) fix
the skeleton, and the lines between two anchors (a node's `# File:` comment,
its getitem lines, blank lines, def/return lines, unmatched nodes) are aligned
within that gap. Nodes that moved are shown where they stand on each side, as
removed and added rows; the summary still counts them as matched.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate

from inspector.core.frames import module_path
from inspector.core.listing import COMMENT, Listing
from inspector.core.node_match import (
    ADDED,
    CHANGED,
    REMOVED,
    SAME,
    NodePair,
    ProgramMatch,
    increasing_chain,
)

# Gaps larger than this many comparisons are not aligned line by line (two
# unrelated programs): their lines become removed rows, then added rows.
_GAP_ALIGN_LIMIT = 4_000_000


@dataclass(eq=False)
class Alignment:
    """Rows of the side-by-side view. a[r] / b[r]: 0-based line of each listing
    on row r, or -1 where that side has no line; status[r]: SAME, CHANGED,
    ADDED (B only) or REMOVED (A only). A row whose node pair is the same is
    SAME even when value names differ (a rename is no change)."""

    a: list[int] = field(default_factory=list)
    b: list[int] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    changes: list[int] = field(default_factory=list)  # first row of each run of changes
    _row_of_a: list[int] = field(default_factory=list, repr=False)
    _row_of_b: list[int] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.status)

    def _add(self, a: int, b: int, status: str) -> None:
        self.a.append(a)
        self.b.append(b)
        self.status.append(status)

    def _finish(self, lines_a: int, lines_b: int) -> None:
        self._row_of_a = [-1] * lines_a
        self._row_of_b = [-1] * lines_b
        prev = SAME
        for r, (a, b, s) in enumerate(zip(self.a, self.b, self.status)):
            if a >= 0:
                self._row_of_a[a] = r
            if b >= 0:
                self._row_of_b[b] = r
            if s != SAME and prev == SAME:
                self.changes.append(r)
            prev = s

    def row_of_a(self, line: int) -> int:
        return self._row_of_a[line]

    def row_of_b(self, line: int) -> int:
        return self._row_of_b[line]

    def next_change(self, row: int) -> int | None:
        """First row of the first change that starts after `row` (F7), or None."""
        k = bisect_right(self.changes, row)
        return self.changes[k] if k < len(self.changes) else None

    def prev_change(self, row: int) -> int | None:
        """First row of the last change that starts before `row` (Shift+F7): from
        inside a change, its own start; from its start, the change before."""
        k = bisect_left(self.changes, row)
        return self.changes[k - 1] if k > 0 else None

    def change_end(self, start: int) -> int:
        """One past the last row of the change starting at `start`."""
        r = start
        while r < len(self.status) and self.status[r] != SAME:
            r += 1
        return r


def align_listings(la: Listing, lb: Listing, match: ProgramMatch) -> Alignment:
    by_a, by_b = match.pair_maps()
    anchors: list[tuple[int, int]] = []
    status_at: dict[int, str] = {}
    for pair in match.pairs():
        ia, ib = la.line_of(pair.a), lb.line_of(pair.b)
        if ia is not None and ib is not None:
            anchors.append((ia, ib))
            status_at[ia] = pair.status
    chain = increasing_chain(anchors)
    out = Alignment()
    bounds = [(-1, -1), *chain, (len(la), len(lb))]
    last = len(bounds) - 1
    for k, ((i0, j0), (i1, j1)) in enumerate(zip(bounds, bounds[1:])):
        _align_gap(out, la, lb, by_a, by_b, range(i0 + 1, i1), range(j0 + 1, j1))
        if k + 1 < last:
            out._add(i1, j1, status_at[i1])
    out._finish(len(la), len(lb))
    return out


def _line_keys(listing: Listing, lines: range, pairs: dict[int, NodePair],
               side: str) -> list[tuple]:
    """What may pair a line with the other side's: the same node pair (and the
    n-th line of that kind of that node), or for lines of no node their kind."""
    keys: list[tuple] = []
    seen: dict[tuple, int] = {}
    nodes, kinds = listing.line_nodes, listing.kinds
    for i in lines:
        node, kind = nodes[i], kinds[i]
        if node is None:
            base: tuple = ("s", kind)
        else:
            pair = pairs.get(id(node))
            if pair is None:
                keys.append(("u", side, i))  # an unmatched node: never pairs
                continue
            base = ("c" if kind == COMMENT else "n", id(pair), kind)
        n = seen.get(base, 0)
        seen[base] = n + 1
        keys.append((*base, n))
    return keys


def _align_gap(out: Alignment, la: Listing, lb: Listing, by_a: dict[int, NodePair],
               by_b: dict[int, NodePair], ra: range, rb: range) -> None:
    if not ra and not rb:
        return
    if not ra or not rb or len(ra) * len(rb) > _GAP_ALIGN_LIMIT:
        for i in ra:
            out._add(i, -1, REMOVED)
        for j in rb:
            out._add(-1, j, ADDED)
        return
    ka, kb = _line_keys(la, ra, by_a, "a"), _line_keys(lb, rb, by_b, "b")
    if ka == kb:  # the common gap: a blank line and a comment on both sides
        opcodes = [("equal", 0, len(ka), 0, len(kb))]
    else:
        opcodes = difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes()
    for tag, x0, x1, y0, y1 in opcodes:
        if tag == "equal":
            for x, y in zip(range(x0, x1), range(y0, y1)):
                i, j = ra[x], rb[y]
                key = ka[x]
                if key[0] == "n":
                    status = by_a[id(la.line_nodes[i])].status
                else:
                    status = SAME if la.lines[i].strip() == lb.lines[j].strip() else CHANGED
                out._add(i, j, status)
        else:
            for x in range(x0, x1):
                out._add(ra[x], -1, REMOVED)
            for y in range(y0, y1):
                out._add(-1, rb[y], ADDED)


# --- unified diff -------------------------------------------------------------

def _module_of(al: Alignment, la: Listing, lb: Listing, row: int) -> str:
    """The module path of the node on `row`, or of the nearest node above."""
    for r in range(row, max(-1, row - 200), -1):
        for listing, line in ((la, al.a[r]), (lb, al.b[r])):
            node = listing.node_at(line) if line >= 0 else None
            if node is not None:
                return module_path(node.nn_module_stack) or "<root module>"
    return ""


def unified_diff(al: Alignment, la: Listing, lb: Listing, label_a: str, label_b: str,
                 context: int = 3) -> Iterator[str]:
    """Unified-diff lines (no newlines) of the two listings, aligned by the
    matched nodes; each hunk header names the module of its first change.
    Lines of a same pair are context lines in B's text, renamed values and all."""
    if not al.changes:
        return
    n = len(al)
    count_a = [0, *accumulate(1 if x >= 0 else 0 for x in al.a)]  # A lines before row r
    count_b = [0, *accumulate(1 if x >= 0 else 0 for x in al.b)]
    hunks: list[list[int]] = []  # [first row, end row, first change row]
    for start in al.changes:
        end = al.change_end(start)
        lo, hi = max(0, start - context), min(n, end + context)
        if hunks and lo <= hunks[-1][1]:
            hunks[-1][1] = hi
        else:
            hunks.append([lo, hi, start])
    yield f"--- {label_a}"
    yield f"+++ {label_b}"
    for lo, hi, first in hunks:
        na, nb = count_a[hi] - count_a[lo], count_b[hi] - count_b[lo]
        sa = count_a[lo] + (1 if na else 0)
        sb = count_b[lo] + (1 if nb else 0)
        module = _module_of(al, la, lb, first)
        yield f"@@ -{sa},{na} +{sb},{nb} @@" + (f" {module}" if module else "")
        r = lo
        while r < hi:
            if al.status[r] == SAME:
                yield " " + lb.lines[al.b[r]]
                r += 1
                continue
            end = r
            while end < hi and al.status[end] != SAME:
                end += 1
            for x in range(r, end):
                if al.a[x] >= 0:
                    yield "-" + la.lines[al.a[x]]
            for x in range(r, end):
                if al.b[x] >= 0:
                    yield "+" + lb.lines[al.b[x]]
            r = end


def one_sided(lines: int, side: str) -> Alignment:
    """The rows of a program only one archive has: every line of it added (side
    "b") or removed (side "a"), facing filler rows."""
    out = Alignment()
    for i in range(lines):
        if side == "a":
            out._add(i, -1, REMOVED)
        else:
            out._add(-1, i, ADDED)
    out._finish(lines if side == "a" else 0, lines if side == "b" else 0)
    return out
