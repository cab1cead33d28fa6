"""The Tables panel: the selected program's signature, the archive's records and
the program's ranges, following the selection (a registered panel, "tables",
tabbed with the Source panel)."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from inspector.ui.selection import PLACE
from inspector.ui.widgets.side_tables import SideTables
from inspector.ui.workspace import Document, Workspace


class TablesPanel(SideTables):
    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        self._shown: tuple[object, object] = (None, None)
        workspace.selection.changed.connect(
            lambda aspects: self.follow() if PLACE in aspects else None)

    def follow(self) -> None:
        doc, view = self.workspace.selected_view()
        if doc is not self._shown[0] or view is not self._shown[1] or view is None:
            self._shown = (doc, view)
            # the records are an open archive's: a compared side has none
            self.set_program(doc if view is not None and isinstance(doc, Document) else None,
                             view if isinstance(doc, Document) else None)
