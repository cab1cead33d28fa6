"""Issue 17: a big program's listing streams in after its first screen.

The window paints the first chunk of lines, the rest arrives in the background
(the scroll range grows), and the result is render_listing's listing line for line;
a node asked for before its line arrived is shown when it does; closing the tab
stops the stream. The toy decoder is made "big" by lowering the split size."""

from __future__ import annotations

import threading

import pytest

from inspector.core import document, listing as listing_mod
from inspector.core.listing import render_listing


@pytest.fixture
def streamed(monkeypatch):
    monkeypatch.setattr(document, "SPLIT_ABOVE_NODES", 0)
    monkeypatch.setattr(listing_mod, "FIRST_LINES", 40)
    monkeypatch.setattr(listing_mod, "CHUNK_LINES", 60)


def _shown(tab) -> list[str]:
    return [tab.listing.line_text(i) for i in range(tab.listing.line_count())]


def test_the_listing_streams_in_and_a_node_waits_for_its_line(qtbot, window, toy_archive, streamed):
    ws = window.workspace
    counts: list[int] = []
    at_open: dict[str, object] = {}

    def opened(_path: str) -> None:
        tab = window.current_tab()
        at_open.update(lines=tab.listing.line_count(), streaming=tab.view.streaming)
        ws.programGrew.connect(lambda _d, _v: counts.append(tab.listing.line_count()))
        # the top graph's last node: far past the first chunk
        last = tab.view.program.graph.nodes[-1]
        at_open["node"] = last
        at_open["selected"] = window.select_node(tab.view.name, last.name)

    window.archiveOpened.connect(opened)
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    tab = window.current_tab()
    view = tab.view
    whole = render_listing(view.program)
    assert at_open["streaming"] and 40 <= at_open["lines"] < len(whole) // 4
    assert at_open["selected"] is False  # not listed yet: shown once its chunk arrived
    assert view.complete and not view.streaming
    assert _shown(tab) == whole.lines == view.listing.lines
    assert len(counts) >= 3 and counts == sorted(counts) and counts[-1] == len(whole)
    assert tab.listing.current_line() == whole.line_of(at_open["node"])
    assert view.line_graph == document.build_program_view(tab.doc.archive, view.name,
                                                          complete=False).line_graph
    # search runs on the whole listing once it is indexed
    tab.search.set_text(at_open["node"].name)
    qtbot.waitUntil(lambda: tab.match_count() > 0, timeout=5000)
    assert whole.line_of(at_open["node"]) in tab.result.lines


def test_closing_the_tab_stops_the_stream(qtbot, window, toy_archive, streamed, monkeypatch):
    monkeypatch.setattr(listing_mod, "CHUNK_LINES", 1)
    gate = threading.Event()
    grown = [0]
    real = document._grow

    def held(view) -> None:  # the worker waits in its third chunk until the tab closed
        real(view)
        grown[0] += 1
        if grown[0] == 3:
            gate.wait(20)

    monkeypatch.setattr(document, "_grow", held)
    with qtbot.waitSignal(window.workspace.programGrew, timeout=60000):
        window.open_archive(toy_archive)
    tab = window.current_tab()
    view, doc = tab.view, tab.doc
    with qtbot.waitSignal(window.workspace.documentClosed, timeout=5000):
        window.close_tab(window.tabs.indexOf(tab))
    gate.set()
    qtbot.waitUntil(lambda: not doc.tasks.busy(), timeout=20000)
    assert view.streaming and view.index is None  # stopped after that chunk, never indexed
    assert grown[0] <= 4 and view.listed < len(render_listing(view.program))


def test_the_stream_starts_once_the_first_screen_is_painted(qtbot, window, toy_archive, streamed,
                                                            monkeypatch):
    """The background listing would hold the GIL against the painting GUI thread:
    it starts after the listing's first paint (Document.listingPainted); a tab that
    never paints (hidden) starts it after workspace.PAINT_WAIT_MS."""
    from inspector.ui import workspace as ws_mod

    events: list[str] = []
    real = ws_mod._stream_and_index

    def recorded(ctx, view):
        events.append("stream")
        return real(ctx, view)

    monkeypatch.setattr(ws_mod, "_stream_and_index", recorded)
    window.archiveOpened.connect(
        lambda _p: window.current_tab().doc.listingPainted.connect(lambda: events.append("painted")))
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    assert events[:2] == ["painted", "stream"] and window.current_tab().view.complete

    # hidden: no paint, the stream still starts (and the load is counted meanwhile)
    events.clear()
    window.close_tab(window.tabs.indexOf(window.current_tab()))
    window.hide()
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(toy_archive)
    assert events == ["stream"] and window.current_tab().view.complete


def test_search_answers_from_the_lines_so_far_while_the_program_is_indexed(
        qtbot, window, toy_archive, streamed, monkeypatch):
    # the worker waits after its third chunk: a search then finds the matches in
    # the lines shown so far (counted "so far"), field terms wait for the index;
    # let on to its sixth chunk, the search counts the new lines too; once the
    # whole program is indexed it runs again on all of it
    from inspector.ui.window import archive_tab

    monkeypatch.setattr(listing_mod, "CHUNK_LINES", 20)
    monkeypatch.setattr(archive_tab, "SO_FAR_EVERY_S", 0.0)
    gates = {3: threading.Event(), 6: threading.Event()}
    grown = [0]
    real = document._grow

    def held(view) -> None:
        real(view)
        grown[0] += 1
        if grown[0] in gates:
            gates[grown[0]].wait(30)

    def matching(lines: list[str]) -> list[int]:
        return [i for i, t in enumerate(lines) if "aten.add" in t.lower()]

    monkeypatch.setattr(document, "_grow", held)
    try:
        with qtbot.waitSignal(window.workspace.programGrew, timeout=60000):
            window.open_archive(toy_archive)
        tab = window.current_tab()
        view = tab.view
        qtbot.waitUntil(lambda: grown[0] == 3, timeout=20000)
        qtbot.waitUntil(lambda: tab.listing.line_count() == view.listed, timeout=5000)
        shown = _shown(tab)
        assert view.index is None and len(shown) < len(render_listing(view.program))
        tab.search.set_text("aten.add")
        qtbot.waitUntil(lambda: "so far" in tab.search.count.text(), timeout=10000)
        so_far = matching(shown)
        assert so_far and tab.result.lines == so_far
        assert tab.search.count.text() == f"{len(so_far):,} so far…"
        tab.next_match()
        assert tab.listing.current_line() in so_far
        # F3 counts its place among the matches so far, still saying so
        place = so_far.index(tab.listing.current_line()) + 1
        assert tab.search.count.text() == f"{place} of {len(so_far):,} so far…"
        tab.search.set_text("op:arange")
        qtbot.waitUntil(lambda: tab.search.count.text() == "indexing…", timeout=5000)
        tab.search.set_text("aten.add")
        qtbot.waitUntil(lambda: "so far" in tab.search.count.text(), timeout=10000)
        gates[3].set()
        qtbot.waitUntil(lambda: grown[0] == 6, timeout=20000)
        qtbot.waitUntil(lambda: tab.listing.line_count() == view.listed, timeout=5000)
        later = matching(_shown(tab))
        assert len(later) > len(so_far)
        qtbot.waitUntil(lambda: tab.result.lines == later, timeout=10000)
        assert tab.search.count.text() == f"{len(later):,} so far…"
    finally:
        for gate in gates.values():
            gate.set()
    qtbot.waitUntil(lambda: view.index is not None and "so far" not in tab.search.count.text(),
                    timeout=20000)
    whole = matching(view.listing.lines)
    assert len(whole) > len(later) and tab.result.lines == whole
    assert tab.search.count.text() in (f"{len(whole):,} matches", f"1 of {len(whole):,}") or \
        tab.search.count.text().endswith(f"of {len(whole):,}")
