"""Issue 16 item 6: listing navigation on the real toy archive.

A fresh archive opens at its top-left; jumping to a search match keeps the node's
name in view; the match counter follows a click; the source pane says why it is
empty on a line without a node instead of keeping the previous node's source."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication


def _name_column(text: str) -> int:
    return len(text) - len(text.lstrip())


def _column_in_view(listing, line: int, column: int) -> bool:
    p = listing.point_at(line, column)
    vp = listing.viewport().rect()
    return listing.gutter_width() <= p.x() < vp.width() and 0 <= p.y() < vp.height()


def test_fresh_archive_opens_at_the_top_left(qtbot, window, open_wait, toy_archive):
    window.resize(1024, 700)
    QApplication.processEvents()
    tab = open_wait(toy_archive)
    listing = tab.listing
    assert listing.first_visible_line() == 0
    assert listing.horizontalScrollBar().value() == 0
    assert listing.line_text(0).startswith("class GraphModule")
    # the cursor is on the first node, and that line is on screen too
    first = next(i for i, n in enumerate(tab.view.listing.line_nodes) if n is not None)
    assert listing.current_line() == first
    assert first in listing.visible_range()
    # another program shows from its top as well
    other = next(n for n in tab.doc.program_names if n != tab.view.name)
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        tab.select_program(other)
    assert tab.view.name == other
    assert listing.first_visible_line() == 0 and listing.horizontalScrollBar().value() == 0


def test_jumping_to_matches_keeps_the_name_in_view(qtbot, window, open_wait, toy_archive):
    window.resize(1024, 700)
    QApplication.processEvents()
    tab = open_wait(toy_archive)
    listing = tab.listing
    tab.search.set_text("device(type")  # the literals sit far right on long lines
    assert tab.match_count() > 5
    scrolled = 0
    for _ in range(tab.match_count()):
        tab.next_match()
        line = listing.current_line()
        text = listing.line_text(line)
        assert line in tab.result.lines
        assert _column_in_view(listing, line, _name_column(text)), (line, text[:60])
        scrolled += listing.horizontalScrollBar().value() > 0
    # the narrow window made some jumps scroll right (else this checked nothing)
    assert scrolled > 0


def test_match_counter_follows_a_click(qtbot, window, toy_tab):
    tab, listing = toy_tab, toy_tab.listing
    tab.search.set_text("cpu")
    lines = tab.result.lines
    assert len(lines) > 3
    total = len(lines)
    assert tab.search.count.text() == f"{total:,} matches"
    target = lines[2]
    listing.ensure_visible(target, center=True)
    qtbot.mouseClick(listing.viewport(), Qt.MouseButton.LeftButton,
                     pos=listing.point_at(target, 10))
    assert listing.current_line() == target
    assert tab.search.count.text() == f"3 of {total:,}"
    # F3 goes on from the clicked match
    tab.next_match()
    assert listing.current_line() == lines[3]
    assert tab.search.count.text() == f"4 of {total:,}"
    # a line that is no match: the total again
    plain = next(ln for ln in range(lines[3] + 1, listing.line_count()) if ln not in lines)
    listing.ensure_visible(plain, center=True)
    qtbot.mouseClick(listing.viewport(), Qt.MouseButton.LeftButton, pos=listing.point_at(plain, 10))
    assert listing.current_line() == plain
    assert tab.search.count.text() == f"{total:,} matches"


def test_source_pane_clears_on_a_line_without_a_node(qtbot, window, toy_tab):
    tab, listing, source = toy_tab, toy_tab.listing, window.source
    window.dock_source.show()
    window.dock_source.raise_()
    QApplication.processEvents()
    nodes = tab.view.listing.line_nodes
    with_node = next(i for i, n in enumerate(nodes) if n is not None and "File:" in listing.line_text(i))
    listing.set_current_line(with_node, center=True)
    assert source.frame is not None
    shown = source.editor.toPlainText()
    assert shown  # the node's file, or the "not on this machine" note
    blank = next(i for i in range(with_node + 1, len(nodes)) if nodes[i] is None)
    listing.ensure_visible(blank, center=True)
    qtbot.mouseClick(listing.viewport(), Qt.MouseButton.LeftButton, pos=listing.point_at(blank, 0))
    assert listing.current_line() == blank
    assert source.frame is None
    assert source.editor.toPlainText() == ""
    # said in plain words, greyed: never markup shown as is (the header is plain text)
    assert source.header.text() == f"Line {blank + 1} has no node, so no source."
    assert not source.header.isEnabled()
    assert window.source_nodes() == []
    # back on a node: its source again
    listing.set_current_line(with_node)
    assert source.frame is not None and source.editor.toPlainText() == shown
    assert source.header.isEnabled()
