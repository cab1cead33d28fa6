"""The selection model of a window: where the user is, what is lit up and why.

`workspace.selection` is one Selection. Every view reads it and writes to it:

- a listing (the archive tab) publishes its cursor (`move_to`) and obeys requests
  (`select_node`, `select_line`, `back`/`forward`): it shows the asked line, and
  publishing that place answers the request;
- a panel follows it: connect `changed` and read `document`, `program`, `line`,
  `node`, `module`, `highlighted()`, `label()`;
- any view asks: `select_node(program, name)`, `highlight(lines, reason, label)`,
  `clear_highlight(reason)`, `select_module(path)`.

One signal, `changed(aspects)`: a frozenset of inspector.core.selection's PLACE,
HIGHLIGHT, MODULE_CHANGED ("module"), REQUEST. The rules (what a move drops)
are inspector.core.selection.SelectionState's; this class only says when it
changed. Qt-free callers and tests use that state directly (`selection.state`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from PySide6.QtCore import QObject, Signal

from inspector.core import selection as core
from inspector.core.selection import Highlight, Place, Request, SelectionState

# re-exported: a panel writes `selection.highlight(lines, FAILING, ...)`
SEARCH, USERS, MODULE, SOURCE_LINE, DIFF, FAILING = (
    core.SEARCH, core.USERS, core.MODULE, core.SOURCE_LINE, core.DIFF, core.FAILING)
PLACE, HIGHLIGHT, MODULE_CHANGED, REQUEST = (
    core.PLACE, core.HIGHLIGHT, core.MODULE_CHANGED, core.REQUEST)

__all__ = ["Selection", "Highlight", "Place", "Request", "SEARCH", "USERS", "MODULE",
           "SOURCE_LINE", "DIFF", "FAILING", "PLACE", "HIGHLIGHT", "MODULE_CHANGED", "REQUEST"]


class Selection(QObject):
    changed = Signal(object)  # frozenset[str] of the aspects that changed

    def __init__(self, workspace=None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.state = SelectionState()
        self._workspace = workspace  # the default document of a request: its current one

    # -- reading --
    @property
    def document(self):  # inspector.ui.workspace.Document | None
        return self.state.document

    @property
    def program(self) -> str | None:
        return self.state.program

    @property
    def line(self) -> int:
        return self.state.line

    @property
    def node(self) -> str | None:
        return self.state.node

    @property
    def module(self) -> str | None:
        return self.state.module

    @property
    def request(self) -> Request | None:
        return self.state.request

    @property
    def highlights(self) -> dict[str, Highlight]:
        return dict(self.state.highlights)

    def highlighted(self, document=None, program: str | None = None,
                    exclude: Iterable[str] = (SEARCH,)) -> set[int]:
        return self.state.highlighted(document, program, tuple(exclude))

    def label(self) -> str:
        return self.state.label()

    def place(self) -> Place:
        return self.state.place()

    # -- a listing publishes --
    def move_to(self, document, program: str | None, line: int, node: str | None = None) -> None:
        self._emit(self.state.move_to(document, program, line, node))

    def record_jump(self, document, program: str | None, old: int, new: int) -> None:
        self.state.record_jump(document, program, old, new)

    def touch(self) -> None:
        """What the current place shows changed (its program was just viewed):
        followers read it again (a PLACE change, the place itself the same)."""
        if self.state.document is not None:
            self.changed.emit(frozenset({PLACE}))

    def drop_request(self, request: Request | None = None) -> None:
        """A listing judged the request whole and could not show it."""
        self._emit(self.state.drop_request(request))

    # -- any view asks --
    def select_node(self, program: str, name: str, document=None) -> None:
        """Show node `name` of `program` (default: in the current document): the
        document's listing shows it, now or once its program is read / its line is
        streamed in (`request` until then)."""
        self._ask(Request(self._doc(document), program, node=name))

    def select_line(self, program: str, line: int, document=None, record: bool = True,
                    within: str | None = None) -> None:
        """Show `line` of `program`. `within`: the reason of a highlight this steps
        through (landing on one of its lines keeps it lit; any other move drops it)."""
        self._ask(Request(self._doc(document), program, line=line, record=record,
                          within=within))

    def back(self) -> bool:
        return self._go(self.state.history.back())

    def forward(self) -> bool:
        return self._go(self.state.history.forward())

    def highlight(self, lines: Iterable[int], reason: str, label: str = "", document=None,
                  program: str | None = None, kept: bool | None = None) -> None:
        self._emit(self.state.highlight(lines, reason, label, document, program, kept))

    def clear_highlight(self, reason: str | None = None) -> None:
        """Drop `reason`'s highlight (None: all but the search matches)."""
        self._emit(self.state.clear_highlight(reason))

    def select_module(self, path: str | None, lines: Iterable[int] = (), label: str = "") -> None:
        self._emit(self.state.select_module(path, lines, label))

    def forget(self, document) -> None:
        """`document` closed."""
        self._emit(self.state.forget(document))

    # --
    def _doc(self, document):
        if document is not None:
            return document
        ws = self._workspace
        current = ws.current if ws is not None else None
        return current if current is not None else self.state.document

    def _ask(self, request: Request) -> None:
        if request.document is None:
            return
        st = self.state
        if request.record and st.document is request.document and st.program is not None \
                and st.line >= 0:
            request = replace(request, origin=st.place())
        self._emit(self.state.ask(request))

    def _go(self, place: Place | None) -> bool:
        if place is None or place.document is None or place.program is None:
            return False
        self._ask(Request(place.document, place.program, line=place.line, record=False))
        return True

    def _emit(self, aspects: set[str]) -> None:
        if aspects:
            self.changed.emit(frozenset(aspects))
