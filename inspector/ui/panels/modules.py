"""The Modules panel: the module tree of the selected program, following the selection.

A registered panel (panels/registry.py, "modules", area "left"). It shows the
modules of the program the selection is in (their heat column from the document's
annotations: a profile's time, the memory plan's peak); a click selects the module
in the selection model (`select_module`: its nodes light up, the cursor goes to the
first), and a module selected elsewhere (the Details pane's link) is selected here.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from inspector.ui.selection import MODULE, MODULE_CHANGED, PLACE
from inspector.ui.widgets.module_tree import ModuleTree
from inspector.ui.workspace import Workspace


def select_module(workspace: Workspace, path: str) -> list[int]:
    """Select module `path` of the selected program: its nodes' lines light up
    (MODULE) and the cursor jumps to the first. Returns the lines."""
    doc, view = workspace.selected_view()
    if view is None:
        return []
    lines = view.module_lines(path)
    sel = workspace.selection
    sel.select_module(path, lines, f"module {path or '(root)'}: {len(lines):,} nodes selected")
    if lines:
        sel.select_line(view.name, lines[0], doc, within=MODULE)
    return lines


class ModulesPanel(ModuleTree):
    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        self.moduleSelected.connect(lambda path: select_module(workspace, path))
        workspace.selection.changed.connect(self._selection_changed)
        workspace.marksChanged.connect(self._marks_changed)
        workspace.programIndexed.connect(lambda _doc, _view: self.follow())

    def _selection_changed(self, aspects: frozenset) -> None:
        if PLACE in aspects:
            self.follow()
        if MODULE_CHANGED in aspects:
            self._show_module()

    def follow(self) -> None:
        """The tree of the selected program (and its heat)."""
        doc, view = self.workspace.selected_view()
        if view is self._view and view is not None:
            return
        self.set_view(view)
        if doc is not None and view is not None:
            self.set_heat(doc.annotations.module_heat(view.name),
                          doc.annotations.module_heat_title(view.name))
        self._show_module()

    def _marks_changed(self, doc, program: str) -> None:
        sel = self.workspace.selection
        if doc is sel.document and program == sel.program:
            self.set_heat(doc.annotations.module_heat(program),
                          doc.annotations.module_heat_title(program))

    def _show_module(self) -> None:
        """The selection's module selected in the tree (none: nothing selected),
        without selecting it again."""
        path = self.workspace.selection.module
        self.tree.blockSignals(True)
        try:
            if path is None or not self.select_path(path):
                self.tree.clearSelection()
        finally:
            self.tree.blockSignals(False)
