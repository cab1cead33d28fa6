"""Where the user is, Qt-free: the state every view of the window follows.

`SelectionState` holds the current document, program, line and node, the lines
highlighted and why, the selected module, a request waiting for a listing to show
it (a node asked for by name before its program is read or its line streamed in),
and Back/Forward (`History`). The Qt part (inspector/ui/selection.py) wraps one
SelectionState and says when it changed; this module decides what a change means:

- moving to another line drops the passing highlights (users of a value, a
  module's nodes, a source line's nodes) but on the line they were made on, and
  where their owner steps through them (a request `within` their reason: the
  Source pane's ◀ ▶, a module's jump to its first node, a user picked in the
  Details pane): a highlight belongs to what was selected, and a tint that
  outlives it is stale. A click on one of a frame's 193 tinted nodes is a move
  like any other (issue 29: it used to keep them, so nothing cleared them);
- moving to another program or document drops every highlight of the old one;
- kept highlights (search matches, a diff's changes, failing nodes) stay until
  their owner clears them.

A document is any hashable key (the window uses its Document objects); nothing
here reads one. `NodeLines` finds a node's listing line by name through a dict
built once per listing (extended as a streamed listing grows), not a scan.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

# Why lines are highlighted (Highlight.reason). Panels may use their own words too.
SEARCH = "search"  # the search bar's matches (kept)
USERS = "users"  # the lines reading a value (Find Users)
MODULE = "module"  # the nodes of the selected module
SOURCE_LINE = "source line"  # the nodes one source line made
DIFF = "diff"  # a comparison's changed lines (kept)
FAILING = "failing"  # nodes a check or a run says fail (kept)

KEPT_REASONS = frozenset({SEARCH, DIFF, FAILING})

# What a change touched (the Qt signal's argument): clients redo only their part.
PLACE = "place"  # document, program, line or node
HIGHLIGHT = "highlight"
MODULE_CHANGED = "module"
REQUEST = "request"  # a node or line asked for (pending until a listing shows it)


@dataclass(frozen=True)
class Place:
    """A line of a program of a document (Back/Forward's unit)."""

    document: Hashable | None
    program: str | None
    line: int


@dataclass(frozen=True)
class Highlight:
    """Lines of `program` of `document` lit up for `reason`; `label` is the one line
    the status bar says about them ("12 users of add_3"); `origin` the line the
    cursor was on when they were made (moving there keeps a passing highlight)."""

    reason: str
    lines: frozenset[int]
    document: Hashable | None
    program: str | None
    label: str = ""
    origin: int = -1
    kept: bool = False


@dataclass(frozen=True)
class Request:
    """A node (by name) or a line asked for, waiting until the listing of
    `document`'s `program` can show it. `record`: a jump Back can return from
    (Back/Forward themselves do not record) to `origin`, where the user was when
    it was asked (in another program, maybe not read yet). `within`: the reason
    of the highlight this steps through (its lines stay lit when it lands on one)."""

    document: Hashable | None
    program: str
    node: str | None = None
    line: int | None = None
    record: bool = True
    origin: Place | None = None
    within: str | None = None


class History:
    """Back/Forward over places: a jump records where it left and where it went."""

    def __init__(self) -> None:
        self._places: list[Place] = []
        self._pos = -1

    def record(self, old: Place, new: Place) -> None:
        del self._places[self._pos + 1:]
        if not self._places or self._places[-1] != old:
            self._places.append(old)
        self._places.append(new)
        self._pos = len(self._places) - 1

    def back(self) -> Place | None:
        return self._step(-1)

    def forward(self) -> Place | None:
        return self._step(1)

    def _step(self, step: int) -> Place | None:
        pos = self._pos + step
        if not 0 <= pos < len(self._places):
            return None
        self._pos = pos
        return self._places[pos]

    def can_go(self, step: int) -> bool:
        return 0 <= self._pos + step < len(self._places)

    def forget(self, document: Hashable) -> None:
        """Drop the places of a closed document."""
        self._places = [p for p in self._places if p.document is not document]
        self._pos = len(self._places) - 1

    def places(self) -> list[Place]:
        return list(self._places)


@dataclass
class SelectionState:
    """The user's place and what is lit up (see the module docstring for the rules).
    Each mutator returns the set of aspects it changed (empty: nothing)."""

    document: Hashable | None = None
    program: str | None = None
    line: int = -1
    node: str | None = None  # the name of the node on `line` (None: no node there)
    module: str | None = None  # the module selected (module tree, a Details link)
    request: Request | None = None
    highlights: dict[str, Highlight] = field(default_factory=dict)
    history: History = field(default_factory=History)

    # -- the place --
    def move_to(self, document: Hashable | None, program: str | None, line: int,
                node: str | None = None) -> set[str]:
        """The cursor is now on `line` of `program` of `document` (a listing says)."""
        changed: set[str] = set()
        req = self.request
        answers = req is not None and req.document is document and req.program == program and (
            (req.node is not None and req.node == node) or req.line == line)
        if document is not self.document or program != self.program:
            if self.highlights:
                self.highlights = {}
                changed.add(HIGHLIGHT)
            if self.module is not None:
                self.module = None
                changed.add(MODULE_CHANGED)
        else:
            stale = []
            for reason, h in list(self.highlights.items()):
                if h.kept or line == h.origin:
                    continue
                if answers and req.within == reason and line in h.lines:
                    self.highlights[reason] = replace(h, origin=line)  # stepped through it
                    continue
                stale.append(reason)
            for reason in stale:
                del self.highlights[reason]
                changed.add(HIGHLIGHT)
            if MODULE in stale and self.module is not None:
                self.module = None
                changed.add(MODULE_CHANGED)
        if (document, program, line, node) != (self.document, self.program, self.line, self.node) \
                or document is not self.document:
            self.document, self.program, self.line, self.node = document, program, line, node
            changed.add(PLACE)
        if answers:
            self.request = None  # answered
            changed.add(REQUEST)
        return changed

    def place(self) -> Place:
        return Place(self.document, self.program, self.line)

    # -- requests (a listing obeys them) --
    def ask(self, request: Request) -> set[str]:
        self.request = request
        return {REQUEST}

    def drop_request(self, request: Request | None = None) -> set[str]:
        """Forget the request (`request`: only if it is still the one waiting)."""
        if self.request is None or (request is not None and self.request is not request):
            return set()
        self.request = None
        return {REQUEST}

    def record_jump(self, document: Hashable | None, program: str | None,
                    old: int, new: int) -> None:
        self.history.record(Place(document, program, old), Place(document, program, new))

    # -- highlights --
    def highlight(self, lines: Iterable[int], reason: str, label: str = "",
                  document: Hashable | None = None, program: str | None = None,
                  kept: bool | None = None) -> set[str]:
        """Light up `lines` (of the current program unless told) for `reason`,
        replacing that reason's lines. A passing highlight (kept=False; the
        default unless `reason` is in KEPT_REASONS) replaces the other passing ones:
        one set of related lines at a time, and the status bar says its label."""
        kept = reason in KEPT_REASONS if kept is None else kept
        doc = self.document if document is None else document
        prog = self.program if program is None else program
        new = Highlight(reason, frozenset(lines), doc, prog, label,
                        self.line if (doc is self.document and prog == self.program) else -1,
                        kept)
        changed: set[str] = set()
        if not kept:
            for other in [r for r, h in self.highlights.items() if not h.kept and r != reason]:
                del self.highlights[other]
                changed.add(HIGHLIGHT)
                if other == MODULE and self.module is not None:
                    self.module = None
                    changed.add(MODULE_CHANGED)
        old = self.highlights.pop(reason, None)  # re-inserted last: the newest
        self.highlights[reason] = new
        if old != new:
            changed.add(HIGHLIGHT)
        return changed

    def clear_highlight(self, reason: str | None = None) -> set[str]:
        """Drop `reason`'s highlight; None: every highlight but the search's."""
        reasons = [r for r in self.highlights if (r == reason if reason is not None else r != SEARCH)]
        if not reasons:
            return set()
        changed = {HIGHLIGHT}
        for r in reasons:
            del self.highlights[r]
            if r == MODULE and self.module is not None:
                self.module = None
                changed.add(MODULE_CHANGED)
        return changed

    def highlighted(self, document: Hashable | None = None, program: str | None = None,
                    exclude: Sequence[str] = (SEARCH,)) -> set[int]:
        """Lines lit up in `program` of `document` (default: the current ones), but
        for the reasons in `exclude` (the listing paints search matches itself)."""
        doc = self.document if document is None else document
        prog = self.program if program is None else program
        lines: set[int] = set()
        for h in self.highlights.values():
            if h.reason not in exclude and h.document is doc and h.program == prog:
                lines |= h.lines
        return lines

    def label(self) -> str:
        """What the newest highlight with a label says ("" when none)."""
        for h in reversed(list(self.highlights.values())):
            if h.label:
                return h.label
        return ""

    # -- the module --
    def select_module(self, path: str | None, lines: Iterable[int] = (),
                      label: str = "") -> set[str]:
        """Module `path` is selected; its nodes' `lines` light up (MODULE)."""
        changed: set[str] = set()
        if path != self.module:
            self.module = path
            changed.add(MODULE_CHANGED)
        if path is None:
            return changed | self.clear_highlight(MODULE)
        changed |= self.highlight(lines, MODULE, label)
        self.module = path  # highlight() of another passing reason may not drop it
        return changed

    # -- documents --
    def forget(self, document: Hashable) -> set[str]:
        """`document` closed: nothing of it stays selected, lit up, asked for or in history."""
        self.history.forget(document)
        changed: set[str] = set()
        if self.request is not None and self.request.document is document:
            self.request = None
            changed.add(REQUEST)
        gone = [r for r, h in self.highlights.items() if h.document is document]
        for r in gone:
            del self.highlights[r]
        if gone:
            changed.add(HIGHLIGHT)
        if self.document is document:
            self.document, self.program, self.line, self.node = None, None, -1, None
            self.module = None
            changed |= {PLACE, MODULE_CHANGED}
        return changed


class NodeLines:
    """Node name -> its statement's line in one listing, through a dict built as
    far as the lines asked about (a streamed listing is extended, never rescanned).
    The first line wins where nested graphs reuse a name."""

    def __init__(self, listing: Any) -> None:
        self._listing = weakref.ref(listing)
        self._lines: dict[str, int] = {}
        self._scanned = 0

    def line_of(self, name: str, upto: int | None = None) -> int | None:
        """The line of node `name` among the listing's first `upto` lines (default all)."""
        listing = self._listing()
        if listing is None:
            return None
        nodes = listing.line_nodes
        end = len(nodes) if upto is None else min(upto, len(nodes))
        if self._scanned < end:
            lines, line_of = self._lines, listing.line_of
            for i in range(self._scanned, end):
                node = nodes[i]
                if node is not None and node.name not in lines and line_of(node) == i:
                    lines[node.name] = i
            self._scanned = end
        line = self._lines.get(name)
        if line is not None and line < end:
            return line
        line = listing.definitions.get(("", name))  # a graph input (placeholder)
        return line if line is not None and line < end else None


# id(listing) -> its NodeLines, dropped with the listing (a Listing is weak-referable
# but not hashable, so not a WeakKeyDictionary key)
_node_lines: dict[int, NodeLines] = {}


def node_line(listing: Any, name: str, upto: int | None = None) -> int | None:
    """The listing line of node `name` (NodeLines, one per listing, kept while it lives)."""
    key = id(listing)
    index = _node_lines.get(key)
    if index is None or index._listing() is not listing:
        index = _node_lines[key] = NodeLines(listing)
        weakref.finalize(listing, _node_lines.pop, key, None)
    return index.line_of(name, upto)
