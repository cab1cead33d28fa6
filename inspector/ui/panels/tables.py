"""The Tables panel: the selected program's signature, the archive's records and
the program's ranges, following the selection (a registered panel, "tables",
tabbed with the Source panel).

It fills its tables only while it is on screen: at launch it sits behind Source, and
filling them for the first archive was ~20 ms of the 70 ms between the archive being
read and its listing painted (issue 33). Behind another tab (a dock Qt shows, moved
off screen) it notes that it is stale and catches up at its next paint."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import QWidget

from inspector.ui.selection import PLACE
from inspector.ui.widgets.side_tables import SideTables
from inspector.ui.workspace import Document, Workspace


class TablesPanel(SideTables):
    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        self._shown: tuple[object, object] = (None, None)
        self._stale = False
        workspace.selection.changed.connect(
            lambda aspects: self.follow() if PLACE in aspects else None)

    def follow(self) -> None:
        if self.visibleRegion().isEmpty():  # not on screen: at the next paint
            self._stale = True
            return
        self._stale = False
        doc, view = self.workspace.selected_view()
        if doc is not self._shown[0] or view is not self._shown[1] or view is None:
            self._shown = (doc, view)
            # the records are an open archive's: a compared side has none
            self.set_program(doc if view is not None and isinstance(doc, Document) else None,
                             view if isinstance(doc, Document) else None)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        if self._stale:
            self._stale = False
            QTimer.singleShot(0, self, self.follow)  # not inside a paint
        super().paintEvent(event)
