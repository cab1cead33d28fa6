"""Issue 29: one selection model (workspace.selection) that every view follows.

A registered panel built on the Workspace alone follows the listing's cursor;
requests (a node by name, in a program not read yet) are shown by the listing
and Back returns across programs; highlights and the status line they set go
when the selection moves on (a frame click lit up every node of its source line
and nothing cleared it)."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QLabel

from inspector.core.frames import parse_stack_trace
from inspector.ui.panels import registry
from inspector.ui.selection import PLACE, SOURCE_LINE


def _line_of_op(tab, op: str) -> int:
    for line, node in enumerate(tab.view.listing.line_nodes):
        if node is not None and node.op_name == op and tab.view.listing.line_of(node) == line:
            return line
    raise AssertionError(f"no {op} node")


class Follower(QLabel):
    """A panel that knows only the Workspace: it says which node the user is on."""

    def __init__(self, ws) -> None:
        super().__init__("")
        self.seen: list[tuple[str | None, int]] = []
        self.selection = ws.selection
        ws.selection.changed.connect(self._changed)

    def _changed(self, aspects) -> None:
        if PLACE in aspects:
            self.seen.append((self.selection.node, self.selection.line))
            self.setText(self.selection.node or "")


def test_a_registered_panel_follows_the_cursor(qtbot, monkeypatch, toy_archive):
    from inspector.ui.window.main_window import MainWindow

    monkeypatch.setattr(registry, "PANELS", [
        *registry.PANELS, registry.PanelSpec("follower", "Follower", lambda ws, _s: Follower(ws))])
    window = MainWindow(remember=False)
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(window.loadsFinished, timeout=60000):
            window.open_archive(toy_archive)
        tab = window.current_tab()
        follower = window.job_panels["follower"]
        line = _line_of_op(tab, "arange")
        tab.listing.set_current_line(line)
        node = tab.view.node_at(line)
        assert follower.text() == node.name and follower.seen[-1] == (node.name, line)
        sel = window.workspace.selection
        assert (sel.document, sel.program, sel.line) == (tab.doc, "decoder", line)
        # a line without a node: the panel hears it too
        tab.listing.set_current_line(0)
        assert follower.seen[-1] == (None, 0) and follower.text() == ""
    finally:
        window.pool.waitForDone(10000)
        window.close()


def test_a_node_asked_for_in_an_unread_program_is_shown_and_back_returns(qtbot, window, toy_tab):
    sel = window.workspace.selection
    start = _line_of_op(toy_tab, "arange")
    toy_tab.listing.set_current_line(start)
    assert "encoder" not in toy_tab.doc.views
    from inspector.core.archive import open_archive

    with open_archive(toy_tab.doc.path) as archive:
        target = next(n.name for n in archive.program("encoder").graph.nodes
                      if n.op_name == "conv2d" or n.op_name == "linear")
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        sel.select_node("encoder", target)
    qtbot.waitUntil(lambda: sel.request is None, timeout=10000)
    assert toy_tab.view.name == "encoder"
    node = toy_tab.view.node_at(toy_tab.listing.current_line())
    assert node is not None and node.name == target
    assert (sel.program, sel.node) == ("encoder", target)
    assert window.go_back()
    assert toy_tab.view.name == "decoder" and toy_tab.listing.current_line() == start
    assert window.go_forward()
    assert toy_tab.view.name == "encoder" and sel.node == target


def test_a_frames_highlight_and_its_status_go_when_the_cursor_moves_on(qtbot, window, toy_tab):
    # the node whose innermost source line made the most nodes: a frame click lights them up
    def spread(line: int) -> int:
        node = toy_tab.view.node_at(line)
        if node is None or toy_tab.view.listing.line_of(node) != line:
            return 0
        frames = parse_stack_trace(node.stack_trace)
        return len(toy_tab.view.index.source_lines(frames[-1].file, frames[-1].line)) if frames else 0

    line = max(range(toy_tab.listing.line_count()), key=spread)
    toy_tab.listing.set_current_line(line)
    summary = window.status_label.text()
    frames = window.details.frames
    window.details.browser.anchorClicked.emit(QUrl(f"frame:{len(frames) - 1}"))  # a click
    lit = toy_tab.listing.related_lines()
    assert len(lit) == spread(line) > 1
    assert window.workspace.selection.highlights[SOURCE_LINE].lines == lit
    assert "highlighted" in window.status_label.text()
    # the Source pane's ▶ steps through them and keeps them, the pane on that line
    shown = window.source.header.text()
    window.source.next_btn.click()
    assert toy_tab.listing.current_line() in lit and toy_tab.listing.current_line() != line
    assert toy_tab.listing.related_lines() == lit and window.source.header.text() == shown
    assert "highlighted" in window.status_label.text()
    # a click on another of them is the selection moving on: they go, and their status
    # text (issue 29: a frame's 193 tinted nodes stayed whatever was clicked)
    toy_tab.listing.set_current_line(next(ln for ln in sorted(lit)
                                          if ln != toy_tab.listing.current_line()))
    assert toy_tab.listing.related_lines() == set()
    assert window.status_label.text() == summary
    # and a line elsewhere, after a new frame click: the same
    toy_tab.listing.set_current_line(line)
    window.details.browser.anchorClicked.emit(QUrl(f"frame:{len(frames) - 1}"))
    assert toy_tab.listing.related_lines() == lit
    elsewhere = next(ln for ln in range(toy_tab.listing.line_count())
                     if ln not in lit and ln != line and toy_tab.view.node_at(ln) is not None)
    toy_tab.listing.set_current_line(elsewhere)
    assert toy_tab.listing.related_lines() == set()
    assert window.status_label.text() == summary
    # Find Users, then a move elsewhere: the same
    users = window.show_users(toy_tab.view.node_at(line).output_names()[0])
    assert users and "user" in window.status_label.text()
    toy_tab.listing.set_current_line(0)
    assert toy_tab.listing.related_lines() == set() and window.status_label.text() == summary


def test_clear_highlights_and_a_module_then_another_program(qtbot, window, toy_tab):
    sel = window.workspace.selection
    assert window.modules.select_path("decoder.transformer.h.0")
    assert sel.module == "decoder.transformer.h.0" and toy_tab.listing.related_lines()
    window.selection.clear_highlight()
    assert sel.module is None and toy_tab.listing.related_lines() == set()
    assert window.modules.select_path("decoder.transformer.h.0")
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        toy_tab.programs.setCurrentText("encoder")
    assert sel.program == "encoder" and sel.module is None and not sel.highlights
