"""One tab per archive: program switcher, search bar and the listing.

Search state lives here (it is per listing); the window's docks (details, source,
module tree, tables) follow whichever tab is current.

The tab is the listing's voice in the selection model (workspace.selection,
inspector/ui/selection.py): while its document is the current one it publishes its
cursor (`publish`), its search matches (SEARCH) and its jumps (Back/Forward); it obeys
the requests for its document (a node by name, a line: now, once the program is
read, or once the line is streamed in) and paints the highlighted lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import bisect
import time

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTabWidget, QVBoxLayout, QWidget

from inspector.core.aoti import has_compiled_models

from inspector.core.search import Query, SearchError, SearchResult, parse_query, scan_lines
from inspector.core.document import ProgramView
from inspector.core.selection import Place, Request, node_line
from inspector.core.shapes import symbol_tooltip
from inspector.ui.plain import ElidedLabel
from inspector.ui.widgets.listing_view import ListingView
from inspector.ui.selection import HIGHLIGHT, REQUEST, SEARCH, Selection
from inspector.ui.widgets.search_bar import SearchBar
from inspector.ui.workspace import Document, FirstScreen

if TYPE_CHECKING:
    from inspector.ui.widgets.compiled_view import CompiledModelView


# How often a search answered from a big program's lines so far is run again as
# more lines stream in (a pass over 700,000 lines is ~0.1 s of a worker's time).
SO_FAR_EVERY_S = 1.5


class ArchiveTab(QWidget):
    programRequested = Signal(str)  # the user picked a program not built yet
    currentLineChanged = Signal(int)
    jumped = Signal(int, int)  # from line, to line (for Back/Forward)
    usersRequested = Signal(str)  # value name (context menu)

    def __init__(self, doc: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.view: ProgramView | None = None
        # a big program's first lines shown while it is read (show_first_screen):
        # the reader waits for their paint
        self._screen: FirstScreen | None = None
        self._screen_program: str | None = None
        self._shown_lines = 0  # lines of the view the listing widget holds
        self.result: SearchResult | None = None
        self._so_far_query: Query | None = None  # the query _search_so_far's worker answers
        self._so_far_at = 0.0  # when its last pass started (time.monotonic)
        self.last_search_ms = 0.0
        ws = doc.workspace
        self.selection: Selection | None = ws.selection if ws is not None else None
        self._obeying = False  # answering a request (its show_view must not answer it again)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        # the program's listing; an AOTInductor package adds a page for its
        # compiled models (and has only that one when it holds no program)
        self.listing_page = QWidget(self)
        lay = QVBoxLayout(self.listing_page)
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
        self.listing.painted.connect(doc.listingPainted)  # what waits for the first screen
        self.listing.painted.connect(self._first_screen_painted)
        self.search.queryChanged.connect(self.run_search)
        self.search.navigate.connect(self.next_match)
        self.search.closed.connect(self._close_search)
        self.listing.currentLineChanged.connect(self.currentLineChanged)
        self.listing.currentLineChanged.connect(lambda _line: self.publish())
        self.listing.currentLineChanged.connect(self._follow_match)
        self.listing.definitionRequested.connect(self.go_to_definition)
        self.listing.usersRequested.connect(lambda word, _line: self.usersRequested.emit(word))
        self.listing.set_definition_test(
            lambda word, line: self.view is not None and self.view.definition_line(word, line) is not None)
        self.listing.set_symbol_tooltips(self._symbol_tooltip)
        self.compiled: CompiledModelView | None = None
        self.pages: QTabWidget | None = None
        if has_compiled_models(doc.archive):
            # imported here: most archives hold no compiled model (and pygments'
            # lexers for C++ are not needed to start the window)
            from inspector.ui.widgets.compiled_view import CompiledModelView

            self.compiled = CompiledModelView(doc, self)
            self.compiled.nodeRequested.connect(self._compiled_node)
            self.compiled.described.connect(self._compiled_described)
            self.pages = QTabWidget(self)
            self.pages.setObjectName("archivePages")
            self.pages.setDocumentMode(True)
            if doc.program_names:
                self.pages.addTab(self.listing_page, "Program listing")
            else:
                self.listing_page.hide()
            self.pages.addTab(self.compiled, "Compiled model (AOTInductor)")
            outer.addWidget(self.pages)
        else:
            outer.addWidget(self.listing_page)
        if self.selection is not None:
            self.selection.changed.connect(self._selection_changed)

    # -- the Tab protocol (ui/window/tabs.py) --
    def set_theme(self, theme) -> None:
        self.listing.set_theme(theme)
        if self.compiled is not None:
            self.compiled.set_theme(theme)

    def shutdown(self) -> None:
        """Its work runs on its document's tasks, which Workspace.close cancels."""
        if self.compiled is not None:
            self.compiled.shutdown()

    # -- the selection model --
    def is_current(self) -> bool:
        """Whether this tab's document is the workspace's current one (the tab whose
        cursor is the selection)."""
        ws = self.doc.workspace
        return ws is not None and ws.current is self.doc and not self.doc.closed

    def publish(self) -> None:
        """Tell the selection where this listing's cursor is (and its search matches),
        when its document is the current one."""
        sel, view = self.selection, self.view
        if sel is None or not self.is_current():
            return
        if view is None:
            sel.move_to(self.doc, self._screen_program, -1, None)
            return
        line = self.listing.current_line()
        node = view.node_at(line)
        sel.move_to(self.doc, view.name, line, node.name if node is not None else None)
        search = sel.state.highlights.get(SEARCH)
        if self.result is not None and (search is None or search.document is not self.doc
                                        or search.program != view.name):
            sel.highlight(self.result.lines, SEARCH, document=self.doc, program=view.name)
        self._paint_highlights()

    def _publish_matches(self) -> None:
        sel, view = self.selection, self.view
        if sel is None or view is None or not self.is_current():
            return
        if self.result is None:
            sel.clear_highlight(SEARCH)
        else:
            sel.highlight(self.result.lines, SEARCH, document=self.doc, program=view.name)

    def _selection_changed(self, aspects: frozenset) -> None:
        if self.doc.closed:
            return
        if REQUEST in aspects:
            self._retry_request()
        if HIGHLIGHT in aspects:
            self._paint_highlights()

    def _paint_highlights(self) -> None:
        sel, view = self.selection, self.view
        if sel is None or view is None:
            return
        lines = sel.highlighted(self.doc, view.name)
        if lines != self.listing.related_lines():
            self.listing.set_related_lines(lines)

    def _retry_request(self) -> None:
        sel = self.selection
        req = sel.request if sel is not None else None
        if req is not None and req.document is self.doc and not self._obeying:
            self._obeying = True
            try:
                self._obey(req)
            finally:
                self._obeying = False

    def _obey(self, req: Request) -> None:
        """Show what `req` asks for, if this listing can now; a request it can never
        answer (the program read whole, no such node) is dropped."""
        sel = self.selection
        view = self.doc.views.get(req.program)
        if view is None:
            if self._screen_program != req.program:
                self.select_program(req.program)  # read it: show_view answers then
            return
        # where the user was, if in another program of this document (Back returns there)
        before = req.origin if req.origin is not None and req.origin.program != req.program \
            else None
        if self.view is not view:
            self.show_view(view)
        shown = self._shown_lines
        if req.node is not None:
            line = node_line(view.listing, req.node, shown)
        else:
            line = req.line if req.line is not None and 0 <= req.line < shown else None
        if line is None:
            if not view.complete or view.streaming:
                return  # not streamed in yet: asked again as lines arrive (view_grew)
            sel.drop_request(req)  # judged whole: it is not there
            return
        if req.record and before is not None:
            self.show_listing_page()
            self.listing.set_current_line(line, center=True)
            sel.state.history.record(before, Place(self.doc, view.name, line))
        elif req.record:
            self.jump_to(line)
        else:
            self.show_listing_page()
            self.listing.set_current_line(line, center=True)
        self.show_statement(line)
        self.publish()
        sel.drop_request(req)  # answered (a graph input's line has no node to match)

    # -- programs --
    def show_first_screen(self, screen: FirstScreen) -> None:
        """A big program's first lines while it is read (no view until show_view,
        which keeps the reader's place in them)."""
        self.view = None
        self.result = None
        self.listing.set_lines(screen.lines)
        self._shown_lines = len(screen.lines)
        self.info.setText(f"its first {len(screen.lines):,} lines · reading the rest…")
        self._screen, self._screen_program = screen, screen.program

    def _first_screen_painted(self) -> None:
        if self._screen is not None:
            self._screen.painted()  # the reader goes on
            self._screen = None

    def show_view(self, view: ProgramView) -> None:
        # the reader's place in this program's first screen, if moved since its paint
        moved = (self.listing.moved_place()
                 if self.view is None and self._screen_program == view.name else None)
        self._screen_program = None
        self.doc.views[view.name] = view
        self.doc.shown_program = view.name
        self.view = view
        self.programs.blockSignals(True)
        self.programs.setCurrentText(view.name)
        self.programs.blockSignals(False)
        # a listing still streamed in: a copy of the lines written so far, which
        # view_grew extends (the worker appends to the listing's own lists)
        self.listing.set_lines(view.listing.lines[:view.listed] if view.streaming
                               else view.listing.lines)
        self._shown_lines = self.listing.line_count()
        self.refresh_annotations()
        self._show_info()
        self.result = None
        if self.search.text():
            self.search.emit_query()
        first = next((i for i, n in enumerate(view.listing.line_nodes) if n is not None), 0)
        self.listing.set_current_line(first)
        # As opened: the top-left of the listing (its `def forward(...)` line), whatever
        # the viewport's size was when the cursor was placed.
        self.listing.verticalScrollBar().setValue(0)
        self.listing.horizontalScrollBar().setValue(0)
        if moved is not None:
            self.listing.go_to_place(moved)
        self.publish()
        self._retry_request()

    def _show_info(self) -> None:
        view = self.view
        if view is None:
            return
        p = view.program
        lines = f"{self._shown_lines:,} lines so far" if view.streaming else f"{len(view.listing):,} lines"
        self.info.setText(f"{p.node_count:,} nodes · {lines} · "
                          f"schema {p.schema_version[0]}.{p.schema_version[1]} · torch {p.torch_version}")

    def view_grew(self, view: ProgramView) -> None:
        """More lines of a streamed listing were written (view.listed of them)."""
        if view is not self.view:
            return
        n = view.listed if view.streaming else len(view.listing.lines)
        if n > self._shown_lines:
            self.listing.append_lines(view.listing.lines[self._shown_lines:n])
            self._shown_lines = n
            self._show_info()
            # a search answered from the lines so far counts the new ones too, now
            # and then (each pass reads every line so far, on a worker)
            query = self._so_far_query
            if query is not None and not self.doc.tasks.busy("search:so-far") and \
                    time.monotonic() - self._so_far_at >= SO_FAR_EVERY_S:
                self._scan_so_far(view, query)
            self._retry_request()

    def view_completed(self, view: ProgramView) -> None:
        """The rest of a big program's listing and its search index arrived after
        its first paint."""
        if view is not self.view:
            return
        self.view_grew(view)
        self.refresh_annotations()  # marks on lines streamed after they were resolved
        self._show_info()
        if self.search.text():
            self.search.emit_query()
        self._retry_request()  # judged whole now: shown, or dropped

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

    # -- compiled models (AOTInductor packages) --
    def summary(self) -> str:
        """The status bar's line while no program is shown (compiled code only)."""
        if self.compiled is not None:
            return f"{self.doc.path.name}: no program · {self.compiled.summary()}"
        return f"{self.doc.path.name}: no program"

    def _compiled_described(self) -> None:
        # a package without a program: its status line is this tab's summary
        ws = self.doc.workspace
        if not self.doc.program_names and ws is not None and ws.current is self.doc:
            ws.status.emit(self.summary())

    def show_listing_page(self) -> None:
        if self.pages is not None and self.pages.indexOf(self.listing_page) >= 0:
            self.pages.setCurrentWidget(self.listing_page)

    def _compiled_node(self, program: str, node: str) -> None:
        """A kernel's source node was clicked: show it in the listing."""
        ws = self.doc.workspace
        if ws is not None and program in self.doc.program_names:
            self.show_listing_page()
            ws.select_node(program, node, self.doc)

    # -- navigation --
    def show_statement(self, line: int, match: tuple[int, int] | None = None) -> None:
        """Scroll sideways so `line`'s statement shows: its value's name and its op
        (`add_3: "f32[s72, 64]" = torch.ops.aten.add.Tensor`), or `match` (columns)
        with the name as far as it fits. A node asked for, a search match far right:
        never past the edge of a narrow listing."""
        text = self.listing.line_text(line)
        if not text:
            return
        name_col = len(text) - len(text.lstrip())
        if match is None:
            eq = text.find(" = ", name_col)
            call = text.find("(", eq) if eq >= 0 else -1
            end = call if call >= 0 else len(text.rstrip())
            match = (name_col, max(end, name_col + 1))
        self.listing.ensure_columns_visible(*match, keep=name_col)

    def jump_to(self, line: int) -> None:
        """Move the cursor to `line` as a jump Back can return from."""
        self.show_listing_page()
        old = self.listing.current_line()
        if old != line and self.selection is not None and self.view is not None:
            self.selection.record_jump(self.doc, self.view.name, old, line)
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
        self._so_far_query = None  # a search so far still running is for an older query
        if self.view is None:
            return
        if self.view.index is None and text:
            self._search_so_far(text, case, regex)
            return  # run again by view_completed()
        if not text:
            self._clear_matches()
            return
        t0 = time.perf_counter()
        try:
            result = self.view.index.search(parse_query(text, case, regex))
        except SearchError as exc:
            self._clear_matches(str(exc))
            return
        self.last_search_ms = (time.perf_counter() - t0) * 1000
        self.result = result
        self.listing.set_matches(result.lines, result.spans)
        self.search.set_status(0, len(result), ms=self.last_search_ms)
        self._publish_matches()
        if result.lines:
            # show the first match at or after the cursor without moving it, sideways too
            cur = max(self.listing.current_line(), 0)
            i = bisect.bisect_left(result.lines, cur)
            first = result.lines[i % len(result.lines)]
            self.listing.ensure_visible(first, center=True)
            spans = result.spans(self.listing.line_text(first)) if result.query.text else None
            if spans:
                self.show_statement(first, spans[0])

    def _so_far(self) -> bool:
        """Whether the result shown is from the lines listed so far (_search_so_far)."""
        return self.result is not None and self.result.query is self._so_far_query

    def _clear_matches(self, error: str | None = None) -> None:
        """No result: the search is empty, or `error` says why its query is invalid."""
        self.result = None
        self.listing.set_matches([], None)
        self.search.set_status(0, 0, error)
        self._publish_matches()

    def _search_so_far(self, text: str, case: bool, regex: bool) -> None:
        """While a big program's index is built: the lines shown so far, searched
        on a worker (scan_lines, ~0.1 s for 700,000 lines) and counted as "so
        far"; a query with field terms waits for the index."""
        view = self.view
        try:
            query = parse_query(text, case, regex)
            nothing = scan_lines([], query)  # (a bad pattern is told here, at once)
        except SearchError as exc:
            self._clear_matches(str(exc))
            return
        if nothing is None:
            self.search.count.setText("indexing…")
            self.search.count.setToolTip("field terms are answered once the program is indexed")
            return
        self._so_far_query = query
        self._scan_so_far(view, query)

    def _scan_so_far(self, view: ProgramView, query: Query) -> None:
        def found(result: SearchResult) -> None:
            # (the index arrived meanwhile: its search has run, or another query was typed)
            if self.view is not view or view.index is not None or self._so_far_query is not query:
                return
            self.result = result
            self.listing.set_matches(result.lines, result.spans)
            self.search.set_status(0, len(result), so_far=True)
            self._publish_matches()

        self._so_far_at = time.monotonic()
        self.doc.tasks.start(scan_lines, view.listing.lines[:self._shown_lines], query,
                             key="search:so-far", on_done=found)

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
        text = self.listing.line_text(lines[i])
        spans = self.result.spans(text)
        if spans and self.result.query.text:
            # the match, as far as the node's name (where the line's text starts) stays
            # in view: a match is only worth reading next to what it belongs to
            name_col = len(text) - len(text.lstrip())
            self.listing.ensure_columns_visible(*spans[0], keep=name_col)
        elif spans:
            self.listing.horizontalScrollBar().setValue(0)
        self.search.set_status(i + 1, len(lines), ms=self.last_search_ms, so_far=self._so_far())

    def _follow_match(self, line: int) -> None:
        """The counter follows the cursor: "3 of 19" on a match (clicked, or reached by
        F3), the total elsewhere; F3 then goes on from there."""
        if not self.result or not self.result.lines:
            return
        lines = self.result.lines
        i = bisect.bisect_left(lines, line)
        on_match = i < len(lines) and lines[i] == line
        self.listing.set_current_match(line if on_match else -1)
        self.search.set_status(i + 1 if on_match else 0, len(lines), ms=self.last_search_ms,
                               so_far=self._so_far())

    def _close_search(self) -> None:
        self.search.set_text("")
        self.listing.setFocus()

    def match_count(self) -> int:
        return len(self.result) if self.result else 0
