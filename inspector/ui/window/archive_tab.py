"""One tab per archive: program switcher, search bar and the listing.

Search state lives here (it is per listing); the window's docks (details, source,
module tree, tables) follow whichever tab is current.
"""

from __future__ import annotations

import bisect
import time

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from inspector.core.search import SearchError, SearchResult, parse_query
from inspector.core.document import ProgramView
from inspector.core.shapes import symbol_tooltip
from inspector.ui.plain import ElidedLabel
from inspector.ui.widgets.listing_view import ListingView
from inspector.ui.widgets.search_bar import SearchBar
from inspector.ui.workspace import Document


class ArchiveTab(QWidget):
    programRequested = Signal(str)  # the user picked a program not built yet
    currentLineChanged = Signal(int)
    jumped = Signal(int, int)  # from line, to line (for Back/Forward)
    usersRequested = Signal(str)  # value name (context menu)

    def __init__(self, doc: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.view: ProgramView | None = None
        self.result: SearchResult | None = None
        self.last_search_ms = 0.0
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        top = QHBoxLayout()
        top.setContentsMargins(6, 4, 6, 2)
        self.program_label = QLabel("Program:", self)
        self.programs = QComboBox(self)
        self.programs.setObjectName("programSwitcher")
        self.programs.setToolTip("Program in this archive (Ctrl+PgUp / Ctrl+PgDown)")
        self.programs.addItems(doc.program_names)
        self.programs.currentTextChanged.connect(self._program_picked)
        self.info = ElidedLabel("", self)  # plain, elided: torch_version comes from the file
        self.info.setObjectName("programInfo")
        top.addWidget(self.program_label)
        top.addWidget(self.programs)
        top.addSpacing(12)
        top.addWidget(self.info, 1)
        lay.addLayout(top)
        self.search = SearchBar(self)
        lay.addWidget(self.search)
        self.listing = ListingView(self)
        lay.addWidget(self.listing, 1)
        self.search.queryChanged.connect(self.run_search)
        self.search.navigate.connect(self.next_match)
        self.search.closed.connect(self._close_search)
        self.listing.currentLineChanged.connect(self.currentLineChanged)
        self.listing.definitionRequested.connect(self.go_to_definition)
        self.listing.usersRequested.connect(lambda word, _line: self.usersRequested.emit(word))
        self.listing.set_definition_test(
            lambda word, line: self.view is not None and self.view.definition_line(word, line) is not None)
        self.listing.set_symbol_tooltips(self._symbol_tooltip)

    # -- programs --
    def show_view(self, view: ProgramView) -> None:
        self.doc.views[view.name] = view
        self.doc.shown_program = view.name
        self.view = view
        self.programs.blockSignals(True)
        self.programs.setCurrentText(view.name)
        self.programs.blockSignals(False)
        self.listing.set_lines(view.listing.lines)
        self.refresh_annotations()
        p = view.program
        self.info.setText(f"{p.node_count:,} nodes · {len(view.listing):,} lines · "
                          f"schema {p.schema_version[0]}.{p.schema_version[1]} · torch {p.torch_version}")
        self.result = None
        if self.search.text():
            self.search.emit_query()
        first = next((i for i, n in enumerate(view.listing.line_nodes) if n is not None), 0)
        self.listing.set_current_line(first)

    def view_completed(self, view: ProgramView) -> None:
        """The search index of a big program arrived after its first paint."""
        if view is self.view and self.search.text():
            self.search.emit_query()

    def _program_picked(self, name: str) -> None:
        if not name:
            return
        view = self.doc.views.get(name)
        if view is not None:
            self.show_view(view)
        else:
            self.programRequested.emit(name)

    def select_program(self, name: str) -> None:
        if name in self.doc.program_names:
            self.programs.setCurrentText(name)

    def _symbol_tooltip(self, name: str) -> str | None:
        """Range and sources of symbol `name` of the shown program (the shapes are
        computed in the background the first time: the next hover shows them)."""
        if self.view is None:
            return None
        shapes = self.doc.shapes(self.view.name)
        if shapes is None:
            self.doc.request_shapes()
            return None
        return symbol_tooltip(shapes, name)

    # -- annotations (audit findings, profile heat, ...: see core/annotations.py) --
    def refresh_annotations(self, program: str | None = None) -> None:
        """Repaint the gutter from the document's annotations of the shown program."""
        view = self.view
        if view is None or (program is not None and program != view.name):
            return
        self.listing.set_annotations(self.doc.annotations.resolve(view.program, view.listing))

    # -- navigation --
    def jump_to(self, line: int) -> None:
        old = self.listing.current_line()
        self.listing.set_current_line(line, center=True)
        if old != line:
            self.jumped.emit(old, line)

    def go_to_definition(self, word: str, line: int) -> bool:
        if self.view is None:
            return False
        target = self.view.definition_line(word, line)
        if target is None:
            return False
        self.jump_to(target)
        return True

    # -- search --
    def run_search(self, text: str, case: bool, regex: bool) -> None:
        if self.view is None:
            return
        if self.view.index is None and text:
            self.search.count.setText("indexing…")
            return  # run again by view_completed()
        if not text:
            self.result = None
            self.listing.set_matches([], None)
            self.search.set_status(0, 0)
            return
        t0 = time.perf_counter()
        try:
            result = self.view.index.search(parse_query(text, case, regex))
        except SearchError as exc:
            self.result = None
            self.listing.set_matches([], None)
            self.search.set_status(0, 0, str(exc))
            return
        self.last_search_ms = (time.perf_counter() - t0) * 1000
        self.result = result
        self.listing.set_matches(result.lines, result.spans)
        self.search.set_status(0, len(result), ms=self.last_search_ms)
        if result.lines:
            # show the first match at or after the cursor without moving it
            cur = max(self.listing.current_line(), 0)
            i = bisect.bisect_left(result.lines, cur)
            self.listing.ensure_visible(result.lines[i % len(result.lines)], center=True)

    def next_match(self, backwards: bool = False) -> None:
        if not self.result or not self.result.lines:
            return
        lines = self.result.lines
        cur = self.listing.current_line()
        if backwards:
            i = bisect.bisect_left(lines, cur) - 1
        else:
            i = bisect.bisect_right(lines, cur)
        i %= len(lines)
        self.listing.set_current_match(lines[i])
        self.jump_to(lines[i])
        spans = self.result.spans(self.listing.line_text(lines[i]))
        if spans and self.result.query.text:
            self.listing.ensure_columns_visible(*spans[0])
        elif spans:
            self.listing.horizontalScrollBar().setValue(0)
        self.search.set_status(i + 1, len(lines), ms=self.last_search_ms)

    def _close_search(self) -> None:
        self.search.set_text("")
        self.listing.setFocus()

    def match_count(self) -> int:
        return len(self.result) if self.result else 0
