"""The Source panel: the source line that made the node under the cursor, and the
nodes a source line made; following the selection model.

A registered panel (panels/registry.py, "source", area "bottom"). On a move it
shows the innermost frame of the selected node (the one the listing's `# File:`
comment names): read and lexed only while the panel is on screen (a panel tabbed
over it waits until it is raised, and then shows the node the cursor is on, not an
old one). A frame picked elsewhere (the Details pane's trace: workspace.show_frame)
is shown as picked. Clicking a source line lights up the nodes it made (SOURCE_LINE)
and ◀ ▶ step through them.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QWidget

from inspector.core.frames import Frame, parse_stack_trace
from inspector.ui.selection import PLACE, SOURCE_LINE
from inspector.ui.widgets.source_pane import SourcePane
from inspector.ui.workspace import Workspace


class SourcePanel(SourcePane):
    def __init__(self, workspace: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace
        self._nodes: list[int] = []  # listing lines of the nodes the shown source line made
        self._auto = False  # showing the cursor's frame: its line's nodes are not lit up
        self._pending: Frame | None = None  # the cursor's frame, while the panel is hidden
        self.sourceLineSelected.connect(self._source_line)
        self.navigateNodes.connect(self._step)
        workspace.selection.changed.connect(
            lambda aspects: self.follow() if PLACE in aspects else None)
        workspace.frameRequested.connect(self.show_picked_frame)

    def source_nodes(self) -> list[int]:
        """Listing lines of the nodes made by the source line shown."""
        return list(self._nodes)

    def follow(self) -> None:
        ws = self.workspace
        sel = ws.selection
        doc, view = ws.selected_view()
        self._pending = None
        if doc is None and self.frame is not None:  # what was selected closed
            self._nodes = []
            self.show_message("No node selected.")
            return
        if view is None:
            if doc is not None and doc.program_names and sel.program is not None:
                self._nodes = []
                self.show_message(f"Reading program {sel.program}…")
            return
        if sel.line < 0:
            return
        lit = sel.highlights.get(SOURCE_LINE)
        if lit is not None and sel.line in lit.lines and sel.line in self._nodes:
            # stepping through the nodes of the source line shown (◀ ▶): it stays
            self.set_node_count(len(self._nodes), self._nodes.index(sel.line) + 1)
            return
        node = view.node_at(sel.line)
        if node is None:
            self._nodes = []
            self.show_message(f"Line {sel.line + 1} has no node, so no source.")
            return
        frames = parse_stack_trace(node.stack_trace)
        if not frames:
            self._nodes = []
            self.show_message(f"{node.name}: no stack trace recorded, so no source.")
        elif self.isVisible():
            self._show_cursor_frame(frames[-1])
        else:
            self._pending = frames[-1]

    def _show_cursor_frame(self, frame: Frame) -> None:
        self._auto = True
        try:
            self.show_frame(frame)
        finally:
            self._auto = False

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self._pending is not None:
            frame, self._pending = self._pending, None
            self._show_cursor_frame(frame)

    def show_picked_frame(self, frame: Frame) -> None:
        """A frame picked by the user (not the cursor's innermost one)."""
        self._pending = None
        self.show_frame(frame)

    def _source_line(self, file: str, line: int) -> None:
        doc, view = self.workspace.selected_view()
        if view is None:
            return
        self._nodes = view.source_lines(file, line)
        n = len(self._nodes)
        if not self._auto:  # the user picked a source line: show its nodes
            self.workspace.selection.highlight(
                self._nodes, SOURCE_LINE,
                f"{Path(file).name}:{line}: {n:,} node{'s' if n != 1 else ''} highlighted",
                document=doc, program=view.name)
        cur = self.workspace.selection.line
        self.set_node_count(n, self._nodes.index(cur) + 1 if cur in self._nodes else 0)

    def _step(self, backwards: bool) -> None:
        doc, view = self.workspace.selected_view()
        lines = self._nodes
        if view is None or not lines:
            return
        cur = self.workspace.selection.line
        if backwards:
            before = [ln for ln in lines if ln < cur]
            target = before[-1] if before else lines[-1]
        else:
            after = [ln for ln in lines if ln > cur]
            target = after[0] if after else lines[0]
        self.workspace.selection.select_line(view.name, target, doc, within=SOURCE_LINE)
        self.set_node_count(len(lines), lines.index(target) + 1)
