"""The Shapes panel: why is this dim static? Per program of the current document: each
input's shape, the symbols with their ranges and sources, derived sizes, runtime
assertions, guards and dims that look specialized (inspector/core/shapes.py, the same
model as `pt2-inspector shapes`).

The model is computed once per document off the GUI thread (Document.request_shapes,
on the document's tasks, so closing it cancels the work) and only while the panel is
shown: a hidden panel costs nothing. The panel follows the current document and the
program its tab shows (Document.programShown); its own program box picks another.
Clicking an assertion (or a derived size) selects its node through the Workspace; the
window moves the listing there and the source pane to its line.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QComboBox, QDockWidget, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from inspector.core.shapes import ProgramShapes, shapes_summary
from inspector.ui.widgets.shapes_tables import ShapesTables
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.widgets.theme import current_theme
from inspector.ui.workspace import Document, Workspace


class ShapesPanel(QWidget):
    def __init__(self, workspace: Workspace | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("shapesPanel")
        self.workspace = workspace if workspace is not None else Workspace(self)
        self.doc: Document | None = None
        self.program: str | None = None
        self._dock: QDockWidget | None = None  # the window's dock around us, if any
        self._dock_shown = True
        self._build()
        ws = self.workspace
        ws.currentChanged.connect(self._follow)
        ws.documentClosed.connect(lambda doc: self._follow(ws.current) if doc is self.doc else None)
        # the OS switched light/dark: symbols take the new palette's colours, as the listing's
        # (a bound method: disconnected when the panel is destroyed)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._scheme_changed)
        self._follow(ws.current)

    def _build(self) -> None:
        self.programs = QComboBox()
        self.programs.setObjectName("shapesProgram")
        self.programs.setToolTip("program of the current archive")
        self.programs.currentTextChanged.connect(self._program_picked)
        self.summary = QLabel()
        self.summary.setObjectName("shapesSummary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        self.tables = ShapesTables()
        self.tables.nodeClicked.connect(self._node_clicked)
        self.status_area = StatusArea()
        top = QHBoxLayout()
        label = QLabel("Program")
        label.setTextFormat(Qt.TextFormat.PlainText)
        top.addWidget(label)
        top.addWidget(self.programs, 1)
        box = QVBoxLayout(self)
        box.addLayout(top)
        box.addWidget(self.summary)
        box.addWidget(self.tables, 1)
        box.addWidget(self.status_area)
        self.summary.setText("Open an archive to see its shapes.")

    # -- following the workspace --
    def _follow(self, doc: Document | None) -> None:
        if doc is self.doc:
            return
        if self.doc is not None:
            for signal, slot in ((self.doc.programShown, self._shown),
                                 (self.doc.shapesReady, self._refresh),
                                 (self.doc.shapesFailed, self._failed)):
                try:
                    signal.disconnect(slot)
                except (RuntimeError, TypeError):  # already gone with its document
                    pass
        self.doc = doc
        self.programs.blockSignals(True)
        self.programs.clear()
        if doc is not None:
            self.programs.addItems(doc.program_names)
            doc.programShown.connect(self._shown)
            doc.shapesReady.connect(self._refresh)
            doc.shapesFailed.connect(self._failed)
        self.programs.blockSignals(False)
        self.program = None
        if doc is None:
            self.tables.show_shapes(None)
            self.summary.setText("Open an archive to see its shapes.")
            self.status_area.clear()
            return
        self._shown(doc.shown_program or (doc.program_names[0] if doc.program_names else ""))

    def _shown(self, program: str) -> None:
        """The document's tab shows `program`: so does the panel."""
        if program and self.programs.findText(program) >= 0:
            self.programs.blockSignals(True)
            self.programs.setCurrentText(program)
            self.programs.blockSignals(False)
            self._program_picked(program)

    def _program_picked(self, program: str) -> None:
        if not program or program == self.program and self.tables.shapes is not None:
            return
        self.program = program
        self._refresh()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self._watch_dock()
        self._refresh()  # computed only once someone looks

    def _watch_dock(self) -> None:
        """A dock behind another tab still counts as visible to Qt; its
        visibilityChanged says when its tab is raised (the panel never sees the
        window: it only looks up the widget tree)."""
        if self._dock is not None:
            return
        w = self.parentWidget()
        while w is not None and not isinstance(w, QDockWidget):
            w = w.parentWidget()
        if w is not None:
            self._dock = w
            self._dock_shown = not w.visibleRegion().isEmpty()
            w.visibilityChanged.connect(self._dock_visibility)

    def _dock_visibility(self, shown: bool) -> None:
        self._dock_shown = shown
        if shown:
            self._refresh()

    def is_shown(self) -> bool:
        """Whether someone can see the panel (its dock's tab is the raised one)."""
        return self.isVisible() and self._dock_shown

    # -- content --
    def _refresh(self) -> None:
        doc, program = self.doc, self.program
        if doc is None or not program:
            return
        if not doc.shapes_known():
            self.tables.show_shapes(None)
            self.summary.setText(f"{program}: reading shapes…")
            if self.is_shown():
                doc.request_shapes()
            return
        shapes = doc.shapes(program)
        if shapes is not self.tables.shapes:
            self.tables.set_theme(current_theme())
            self.tables.show_shapes(shapes)
        self.summary.setText(shapes_summary(shapes) if shapes is not None else f"{program}: no shapes")
        self.status_area.clear()

    def _scheme_changed(self, _scheme: object) -> None:
        self.tables.set_theme(current_theme())

    def _failed(self, message: str, details: str) -> None:
        self.summary.setText("")
        self.status_area.set_status(message, error=True, details=details)

    def _node_clicked(self, node: str) -> None:
        if self.doc is not None and self.program:
            self.workspace.select_node(self.program, node, self.doc)

    def current_shapes(self) -> ProgramShapes | None:
        return self.tables.shapes
