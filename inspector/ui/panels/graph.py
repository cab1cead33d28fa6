"""The Graph panel: the dataflow picture of the program the listing shows, one module
level at a time, groups opening in place (core/graph_model.py, graph_picture.py; the
same layout as `pt2-inspector graph`).

It follows the current document and the program its tab shows, and paints what the
window knows about nodes on their boxes (core/graph_overlay.py: the audit's and a
check's marks as outlines, the newest heat — profile time, memory bytes, numeric
error — as a tint), redone when a panel publishes annotations. Clicking a node's box
selects the node through the Workspace (the listing moves there); `show_node` does
the other way: the picture opens the groups holding a node and centres on it. Every
layout runs on the document's tasks (core code on the thread pool: `dot` runs there
as a child process), so the GUI thread only builds the scene; a newer request drops
an older one's result. Nothing is computed while the panel is hidden.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from PySide6.QtWidgets import (QComboBox, QDockWidget, QHBoxLayout, QToolButton,
                               QVBoxLayout, QWidget)

from inspector.core.graph_model import MODULE, SUBGRAPH, ProgramGraphs
from inspector.core.graph_overlay import Overlay, lit_boxes, overlay
from inspector.core.graph_picture import GraphPicture, Picture
from inspector.ui.plain import ElidedLabel, shown
from inspector.ui.selection import HIGHLIGHT, MODULE_CHANGED, PLACE
from inspector.ui.widgets.graph_view import GraphView
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.widgets.theme import is_dark
from inspector.ui.workspace import Document, Workspace

TASK_KEY = "graph-layout"
OVERLAY_TASK_KEY = "graph-overlay"
LIT_TASK_KEY = "graph-lit"


@dataclass
class _State:
    """Where the picture of one program stands (kept per program while its document
    is open, so switching back shows it as it was)."""

    graphs: ProgramGraphs
    painters: dict[str, GraphPicture] = field(default_factory=dict)
    graph: str = ""  # "" the top graph, else a control-flow subgraph
    opened: frozenset[str] = frozenset()
    started: bool = False  # the first picture opened the sole children
    # one layout of a program at a time: a cancelled task may still be running when
    # the next starts, and both would fill the same caches
    lock: threading.Lock = field(default_factory=threading.Lock)

    def painter(self, graph: str) -> GraphPicture:
        p = self.painters.get(graph)
        if p is None:
            p = self.painters[graph] = GraphPicture(self.graphs.model(graph))
        return p


def _overlay(state: _State, pic: Picture, layers: list, line_of) -> tuple[Picture, Overlay]:
    """On the pool: the picture's boxes with the annotations (a big program's profile
    names every node)."""
    return pic, overlay(pic, state.graphs.model(pic.graph), layers, line_of)


def _lit(state: _State, pic: Picture, lines: list[int], node_at) -> tuple[Picture, set[str]]:
    """On the pool: the boxes drawing the highlighted lines (a search can light
    100,000 of them)."""
    return pic, lit_boxes(pic, state.graphs.model(pic.graph), map(node_at, lines))


def _lay_out(state: _State, graph: str, opened: frozenset[str] | None,
             node: str | None = None) -> tuple | None:
    """On the pool: the picture of `graph` with `opened` groups open (None: the first
    picture, the sole children open); with `node`: the picture that shows that node
    (its graph, the groups holding it opened too); None when no graph has it. Finding
    a node indexes the names once, building a graph's model reads all its nodes: both
    too slow for the GUI thread on a big program."""
    with state.lock:
        return _lay_out_locked(state, graph, opened, node)


def _lay_out_locked(state: _State, graph: str, opened: frozenset[str] | None,
                    node: str | None) -> tuple | None:
    if node is not None:
        found = state.graphs.find_node(node)
        if found is None:
            return None
        where, chain = found
        opened = (opened if where == graph and opened is not None else frozenset()) | set(chain)
        graph = where
    painter = state.painter(graph)
    if opened is None:
        opened = painter.sole_children()
    return graph, frozenset(opened), painter.picture("", opened)


class GraphPanel(QWidget):
    def __init__(self, workspace: Workspace | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("graphPanel")
        self.workspace = workspace if workspace is not None else Workspace(self)
        self.doc: Document | None = None
        self.program: str | None = None
        self._states: dict[tuple[int, str], _State] = {}
        self._pending_box: str | None = None  # to select once the picture is there
        self.overlay: Overlay | None = None  # what the boxes on screen show
        self._dock: QDockWidget | None = None
        self._dock_shown = True
        self._build()
        ws = self.workspace
        ws.currentChanged.connect(self._follow)
        ws.documentClosed.connect(self._closed)
        ws.programLoaded.connect(self._loaded)
        ws.marksChanged.connect(self._marks_changed)
        self.selection = ws.selection
        self.selection.changed.connect(self._selection_changed)
        self._follow(ws.current)

    def _build(self) -> None:
        self.programs = QComboBox()
        self.programs.setObjectName("graphProgram")
        self.programs.setToolTip("program of the current archive")
        # a long program name elides instead of widening the dock
        self.programs.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.programs.setMinimumContentsLength(8)
        self.programs.currentTextChanged.connect(self._program_picked)
        self.top_button = QToolButton()
        self.top_button.setText("Top")
        self.top_button.setToolTip("back to the program's top graph, every group closed")
        self.top_button.clicked.connect(self.go_top)
        self.fit_button = QToolButton()
        self.fit_button.setText("Fit")
        self.fit_button.setToolTip("the whole picture in view")
        self.fit_button.clicked.connect(lambda: self.view.fit())
        self.where = ElidedLabel()
        self.where.setObjectName("graphWhere")
        self.view = GraphView()
        self.view.boxActivated.connect(self._box_activated)
        self.view.openRequested.connect(self.open_box)
        self.view.closeRequested.connect(self.close_box)
        self.status_area = StatusArea()
        top = QHBoxLayout()
        top.addWidget(self.programs, 1)
        top.addWidget(self.top_button)
        top.addWidget(self.fit_button)
        box = QVBoxLayout(self)
        box.setContentsMargins(2, 2, 2, 2)
        box.addLayout(top)
        box.addWidget(self.where)
        box.addWidget(self.view, 1)
        box.addWidget(self.status_area)
        self.where.setText("Open an archive to see its graph.")

    # --- following the workspace ------------------------------------------------------

    def _follow(self, doc: Document | None) -> None:
        if doc is self.doc:
            return
        if self.doc is not None:
            try:
                self.doc.programShown.disconnect(self._shown)
            except (RuntimeError, TypeError):
                pass
        self.doc = doc
        self.program = None
        self.programs.blockSignals(True)
        self.programs.clear()
        if doc is not None:
            self.programs.addItems(doc.program_names)
            doc.programShown.connect(self._shown)
        self.programs.blockSignals(False)
        self.view.show_picture(None)
        if doc is None:
            self.where.setText("Open an archive to see its graph.")
            return
        self._shown(doc.shown_program or (doc.program_names[0] if doc.program_names else ""))

    def _closed(self, doc: Document) -> None:
        for key in [k for k in self._states if k[0] == id(doc)]:
            del self._states[key]
        if doc is self.doc:
            self._follow(self.workspace.current)

    def _loaded(self, doc: Document, view) -> None:
        if doc is self.doc and view.name == self.program:
            self._refresh()

    def _marks_changed(self, doc: Document, program: str) -> None:
        if doc is self.doc and program == self.program and self.view.picture is not None:
            self._annotate(self.view.picture)

    def _annotate(self, pic: Picture) -> None:
        """Recompute the overlay of the picture on screen from the document's layers."""
        st, doc, program = self.state(), self.doc, self.program
        if st is None or doc is None or not program:
            return
        layers = doc.annotations.layers(program)
        if not layers:
            self._show_overlay(pic, Overlay())
            return
        view = doc.view(program)
        line_of = view.listing.line_of if view is not None else None
        doc.tasks.start(_overlay, st, pic, layers, line_of, key=OVERLAY_TASK_KEY,
                        on_done=lambda result: self._show_overlay(*result),
                        on_fail=self._failed)

    def _show_overlay(self, pic: Picture, result: Overlay) -> None:
        if pic is not self.view.picture:
            return  # a newer picture is on screen: its own overlay follows
        self.overlay = result
        self.view.set_overlay(result.boxes)
        self._describe(pic)

    def _light(self, pic: Picture) -> None:
        """Light the boxes of the listing's highlighted lines (search matches, the
        module's nodes, a source line's, a diff's, failing ones), as the listing does."""
        st, doc, program = self.state(), self.doc, self.program
        if st is None or doc is None or not program:
            return
        lines = sorted(self.selection.highlighted(doc, program, exclude=()))
        view = doc.view(program)
        if not lines or view is None:
            self._show_lit(pic, set())
            return
        doc.tasks.start(_lit, st, pic, lines, view.listing.node_at, key=LIT_TASK_KEY,
                        on_done=lambda result: self._show_lit(*result), on_fail=self._failed)

    def _show_lit(self, pic: Picture, boxes: set[str]) -> None:
        if pic is self.view.picture:
            self.view.set_lit(boxes)

    def _selection_changed(self, aspects: frozenset[str]) -> None:
        """The listing moved (or a module was picked): the picture follows, when shown."""
        sel = self.selection
        if HIGHLIGHT in aspects and self.view.picture is not None:
            self._light(self.view.picture)
        if sel.document is not self.doc or sel.program != self.program or not self.is_shown():
            return
        if PLACE in aspects and sel.node and f"n:{sel.node}" != self.view.selected:
            self.show_node(sel.node)
        elif MODULE_CHANGED in aspects and sel.module:
            self.show_module(sel.module)

    def _shown(self, program: str) -> None:
        if program and self.programs.findText(program) >= 0:
            self.programs.blockSignals(True)
            self.programs.setCurrentText(program)
            self.programs.blockSignals(False)
            self._program_picked(program)

    def _program_picked(self, program: str) -> None:
        if not program or program == self.program:
            return
        self.program = program
        self.view.show_picture(None)
        self._refresh()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self._watch_dock()
        self._refresh()

    def _watch_dock(self) -> None:
        if self._dock is not None:
            return
        w = self.parentWidget()
        while w is not None and not isinstance(w, QDockWidget):
            w = w.parentWidget()
        if w is not None:
            self._dock = w
            self._dock_shown = not w.visibleRegion().isEmpty()
            w.visibilityChanged.connect(self._dock_visibility)

    def _dock_visibility(self, shown_now: bool) -> None:
        self._dock_shown = shown_now
        if shown_now:
            self._refresh()

    def is_shown(self) -> bool:
        return self.isVisible() and self._dock_shown

    # --- the picture ------------------------------------------------------------------

    def state(self) -> _State | None:
        """The current program's state (made once its view is loaded)."""
        doc, program = self.doc, self.program
        if doc is None or not program:
            return None
        key = (id(doc), program)
        st = self._states.get(key)
        if st is None:
            view = doc.view(program)
            if view is None:
                return None
            st = self._states[key] = _State(ProgramGraphs(view.program, view.listing.printed_name))
        return st

    def _refresh(self) -> None:
        if self.view.picture is None and self.is_shown():
            st = self.state()
            if st is None:
                if self.program:
                    self.where.setText(f"{self.program}: reading…")
                return
            self._lay_out(st.graph, st.opened if st.started else None)

    def _lay_out(self, graph: str, opened: frozenset[str] | None, node: str | None = None) -> None:
        st, doc = self.state(), self.doc
        if st is None or doc is None:
            return
        self.status_area.set_status("laying out…")
        program = self.program
        doc.tasks.start(_lay_out, st, graph, opened, node, key=TASK_KEY,
                        on_done=lambda result, d=doc, p=program: self._laid_out(d, p, result),
                        on_fail=self._failed)

    def _laid_out(self, doc: Document, program: str | None, result: tuple) -> None:
        if doc is not self.doc or program != self.program:
            return  # the panel moved on meanwhile
        st = self.state()
        if st is None or result is None:
            self.status_area.clear()
            self._pending_box = None
            return
        graph, opened, pic = result
        keep = self.view.picture is not None and st.graph == graph
        st.graph, st.opened, st.started = graph, opened, True
        self.view.value_text = st.graphs.model(graph).value_text
        self.view.show_picture(pic, is_dark(), keep_view=keep)
        self._annotate(pic)
        self._light(pic)
        if not keep:
            self.view.fit()
        self._describe(pic)
        self.status_area.clear()
        if self._pending_box is not None:
            box_id, self._pending_box = self._pending_box, None
            self.view.select(box_id)

    def _failed(self, message: str, details: str) -> None:
        self.status_area.set_status(message, error=True, details=details)

    def _describe(self, pic: Picture) -> None:
        where = f"subgraph {pic.graph}" if pic.graph else "top graph"
        opened = sum(1 for b in pic.boxes if b.open)
        legend = self.overlay.legend() if self.overlay is not None else ""
        text = (f"{self.program}: {where} · {len(pic.boxes)} boxes, {opened} groups open · "
                + (f"{legend} · " if legend else "") + "Enter opens, Backspace closes")
        self.where.setText(shown(text, 300))

    def picture(self) -> Picture | None:
        return self.view.picture

    # --- actions ----------------------------------------------------------------------

    def go_top(self) -> None:
        st = self.state()
        if st is not None:
            self._lay_out("", frozenset())

    def open_box(self, box_id: str) -> None:
        st, pic = self.state(), self.view.picture
        box = pic.box(box_id) if pic is not None else None
        if st is None or box is None:
            return
        if box.kind == MODULE and box.box.module and not box.open:
            self._lay_out(st.graph, st.opened | {box.box.module})
        elif box.kind == SUBGRAPH and box.box.graph:
            self._lay_out(box.box.graph, frozenset())

    def close_box(self, box_id: str) -> None:
        """Close the open group `box_id` is (or the one holding it)."""
        st, pic = self.state(), self.view.picture
        box = pic.box(box_id) if pic is not None else None
        if st is None or box is None:
            return
        group = box if box.open else (pic.box(box.parent) if box.parent else None)
        if group is None or not group.box.module:
            if st.graph:  # at a subgraph's top: back to the top graph
                self._lay_out("", frozenset())
            return
        path = group.box.module
        keep = frozenset(p for p in st.opened
                         if not st.graphs.model(st.graph).inside_module(p, path))
        self.view.selected = group.id
        self._lay_out(st.graph, keep)

    def _box_activated(self, box_id: str) -> None:
        pic = self.view.picture
        box = pic.box(box_id) if pic is not None else None
        if box is not None and box.box.node and self.doc is not None and self.program:
            self.workspace.select_node(self.program, box.box.node, self.doc)

    def show_module(self, path: str) -> None:
        """A module was picked (module tree, Details): open what holds it, select its box."""
        st = self.state()
        if st is None:
            return
        model = st.graphs.model("")
        info = model.modules.get(path)
        if info is None:
            return
        chain = set()
        up = info.parent
        while up:
            chain.add(up)
            up = model.modules[up].parent
        self._pending_box = f"m:{path}"
        self._lay_out("", (st.opened if st.graph == "" else frozenset()) | chain)

    def show_node(self, node: str) -> None:
        """The listing is at `node`: open the groups holding it and centre on it."""
        st = self.state()
        if st is None:
            return
        box_id = f"n:{node}"
        if box_id in self.view.items_by_id:  # on the picture already
            self.view.select(box_id)
            return
        self._pending_box = box_id
        self._lay_out(st.graph, st.opened, node)
