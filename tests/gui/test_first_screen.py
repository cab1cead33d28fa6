"""Issue 17: a big program's first screen is painted from the head of its text
while the program is parsed (FirstScreenTab), then the archive's tab takes its
place: the same lines, where the user had moved; closing it cancels the open; a
failed open drops it. The toy decoder is made "big" by lowering the size above
which a program gets a first screen, and its head to 30 nodes."""

from __future__ import annotations

import zipfile

import pytest

from inspector.core import first_screen
from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
from inspector.core.program import head
from inspector.ui.window.archive_tab import ArchiveTab
from inspector.ui.window.first_screen_tab import FirstScreenTab


@pytest.fixture
def big(monkeypatch):
    monkeypatch.setattr(first_screen, "FIRST_SCREEN_ABOVE_BYTES", 0)
    monkeypatch.setattr(head, "HEAD_NODES", 30)


def _shown(listing) -> list[str]:
    return [listing.line_text(i) for i in range(listing.line_count())]


def _screen_of_whole(path, program: str) -> list[str]:
    """What the first screen of `program` must show, read off the whole program's
    listing (core, not the window): every line before the line of node #HEAD_NODES,
    the comment above it included (what follows depends on what was cut)."""
    with open_archive(path) as archive:
        whole = archive.program(program)
        listing = render_listing(whole)
        return listing.lines[:listing.line_of(whole.graph.nodes[head.HEAD_NODES - 1])]


def test_the_first_screen_is_painted_then_the_archive_tab_takes_its_place(
        qtbot, window, toy_archive, big):
    seen: dict[str, object] = {}

    def first(path: str) -> None:
        tab = window.tabs.currentWidget()
        seen.update(path=path, tab=tab, lines=_shown(tab.listing), tabs=window.tabs.count(),
                    current=window.current_tab(), docs=list(window.workspace.documents),
                    top=tab.listing.verticalScrollBar().value())
        tab.listing.set_current_line(12)  # the user reads on meanwhile

    window.firstScreenShown.connect(first)
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    assert seen["path"] == str(toy_archive)
    assert isinstance(seen["tab"], FirstScreenTab) and seen["tabs"] == 1
    assert seen["current"] is None and seen["docs"] == []  # no document yet
    assert seen["top"] == 0  # its top-left, where the archive's tab opens too
    tab = window.current_tab()
    assert isinstance(tab, ArchiveTab) and window.tabs.count() == 1
    assert not any(isinstance(window.tabs.widget(i), FirstScreenTab)
                   for i in range(window.tabs.count()))
    lines = seen["lines"]
    assert 20 <= len(lines) < len(tab.view.listing.lines)
    assert lines == _screen_of_whole(toy_archive, tab.view.name)  # all of them, none missing
    assert tab.listing.current_line() == 12  # where the user was
    assert window.tabs.tabText(0) == toy_archive.name


def test_closing_the_first_screen_cancels_the_open(qtbot, window, toy_archive, big):
    opened: list[str] = []
    window.archiveOpened.connect(opened.append)
    def close(_path: str) -> None:
        window.close_tab(window.tabs.currentIndex())

    window.firstScreenShown.connect(close)
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    assert window.tabs.count() == 0 and window.workspace.documents == []
    assert opened == []
    window.firstScreenShown.disconnect(close)
    # and it opens again, as any file
    with qtbot.waitSignal(window.archiveOpened, timeout=60000):
        window.open_archive(toy_archive)
    assert isinstance(window.current_tab(), ArchiveTab)


def test_a_failed_open_drops_the_first_screen(qtbot, window, toy_archive, big, tmp_path):
    # a byte changed inside a string of the decoder's first node: its head reads
    # well, and the parse refuses the file by its CRC
    with zipfile.ZipFile(toy_archive) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("models/decoder.json"))
    raw = bytearray(toy_archive.read_bytes())
    raw[raw.index(b'"torch.ops.', info.header_offset) + 1] = ord("T")
    damaged = tmp_path / "damaged.pt2"
    damaged.write_bytes(bytes(raw))
    shown: list[str] = []
    window.firstScreenShown.connect(shown.append)
    with qtbot.waitSignal(window.workspace.openFailed, timeout=60000):
        window.open_archive(damaged)
    assert shown == [str(damaged)]
    qtbot.waitUntil(lambda: window.tabs.count() == 0, timeout=5000)
    assert window.last_error is not None and "CRC" in window.last_error.text()


def test_unmoved_the_archive_tab_is_placed_as_any_opened_tab(qtbot, window, toy_archive, big):
    shown: list[str] = []
    window.firstScreenShown.connect(shown.append)
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    assert shown  # it had a first screen
    tab = window.current_tab()
    nodes = tab.view.listing.line_nodes
    assert tab.listing.current_line() == next(i for i, n in enumerate(nodes) if n is not None)
    assert tab.listing.horizontalScrollBar().value() == 0


def test_another_big_program_picked_shows_its_first_screen_while_read(
        qtbot, window, toy_archive, big):
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    tab = window.current_tab()
    other = next(n for n in tab.doc.program_names if n != tab.view.name)
    window.workspace.pool.waitForDone(20000)  # what the panels read on open
    tab.doc.archive.forget_program(other)  # (they may have parsed it: read it again)
    seen: dict[str, object] = {}

    def first(doc, screen) -> None:
        seen.update(program=screen.program, view=tab.view, info=tab.info.text())

    def painted() -> None:  # the first screen's lines on screen: the reader moves
        if "program" in seen and "lines" not in seen:
            seen["lines"] = _shown(tab.listing)
            tab.listing.set_current_line(7)

    window.workspace.programFirstScreen.connect(first)
    tab.listing.painted.connect(painted)
    with qtbot.waitSignal(window.workspace.programLoaded, timeout=60000):
        tab.select_program(other)
    assert seen["program"] == other and "reading the rest" in seen["info"]
    assert tab.view is not None and tab.view.name == other
    lines = seen["lines"]
    assert 20 <= len(lines) and lines == _screen_of_whole(toy_archive, other)
    assert tab.listing.current_line() == 7  # where the reader was
