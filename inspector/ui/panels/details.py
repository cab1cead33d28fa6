"""The Details panel: the node under the cursor, following the selection model.

A registered panel (panels/registry.py, "details", area "right"), written against
the Workspace only: it reads `workspace.selection` (the document, program and line
the user is on) and writes to it (a link to a value's definition or a listing line
asks for that line; "users" lights up the lines reading a value; "module" selects
the module; a frame of the stack trace goes to the Source panel through
`workspace.show_frame`). Nothing of it is in ui/window/.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from inspector.core.document import ProgramView
from inspector.ui.selection import PLACE, USERS
from inspector.ui.widgets.details_pane import DetailsPane
from inspector.ui.workspace import Workspace

EMPTY = "Open an archive to see its nodes."
COMPILED_ONLY = "This package holds compiled code only: no program to list."


class DetailsPanel(DetailsPane):
    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        self.linkActivated.connect(self._link)
        self.frameSelected.connect(workspace.show_frame)
        workspace.selection.changed.connect(self._selection_changed)
        workspace.marksChanged.connect(self._marks_changed)
        self.follow()

    def _selection_changed(self, aspects: frozenset) -> None:
        if PLACE in aspects:
            self.follow()

    def _marks_changed(self, doc, program: str) -> None:
        sel = self.workspace.selection
        if doc is sel.document and program == sel.program:
            self.follow()  # the node's time, its check failure

    def follow(self) -> None:
        """Show what the selection is on."""
        ws = self.workspace
        sel = ws.selection
        doc, view = ws.selected_view()
        if doc is None:  # nothing open, or what was selected closed
            self.show_message(EMPTY if not ws.documents else "No node selected.")
            return
        if view is None:
            if not doc.program_names:
                self.show_message(COMPILED_ONLY)
            elif sel.program is not None:
                self.show_message(f"Reading program {sel.program}…")
            return
        if sel.line < 0:
            return
        node = view.node_at(sel.line)
        if node is None:
            self.show_message("No node on this line.")
            return
        # keyed by the names the listing prints (`input_1` for the input `input`)
        self.show_node(node, sel.line, view.node_users(node), lambda ln: line_label(view, ln),
                       doc.annotations.layers(view.name), shown=view.shown_namer(node))

    # -- links: requests to the selection --
    def _link(self, kind: str, value: str) -> None:
        doc, view = self.workspace.selected_view()
        if view is None:
            return
        sel = self.workspace.selection
        if kind == "def":
            target = view.definition_line(value, sel.line)
            if target is not None:
                sel.select_line(view.name, target, doc)
        elif kind == "users":
            self.show_users(value)
        elif kind == "line":  # a user of a value (its lines stay lit)
            sel.select_line(view.name, int(value), doc, within=USERS)
        elif kind == "module":
            from inspector.ui.panels.modules import select_module

            select_module(self.workspace, path=value)

    def show_users(self, name: str) -> list[int]:
        """Light up every line reading `name` (as seen from the selected line)."""
        doc, view = self.workspace.selected_view()
        if view is None or not name:
            return []
        users = view.users_of(name, self.workspace.selection.line)
        self.workspace.selection.highlight(
            users, USERS, f"{len(users)} user{'s' if len(users) != 1 else ''} of {name}"
            + (" highlighted (listed in Details)" if users else ""),
            document=doc, program=view.name)
        return users


def line_label(view: ProgramView, line: int) -> str:
    node = view.node_at(line)
    if node is None:
        return f"line {line + 1}"
    return f"{line + 1}: {view.shown_name(node.graph.name, node.name)} = {node.op_name}(…)"
