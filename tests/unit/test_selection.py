"""The selection model's Qt-free rules (inspector/core/selection.py): what a move
drops, what stays, Back/Forward, requests, and a node's line found by name through
an index, checked against torch's own graph of a real tiny export."""

from __future__ import annotations

import operator

from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
from inspector.core.selection import (
    FAILING,
    HIGHLIGHT,
    MODULE,
    MODULE_CHANGED,
    PLACE,
    REQUEST,
    SEARCH,
    SOURCE_LINE,
    USERS,
    History,
    Place,
    Request,
    SelectionState,
    node_line,
)

DOC, OTHER = object(), object()


def test_a_passing_highlight_goes_when_the_cursor_moves_on():
    s = SelectionState()
    s.move_to(DOC, "p", 10, "a")
    assert s.highlight([20, 30], SOURCE_LINE, "2 nodes") == {HIGHLIGHT}
    assert s.highlighted() == {20, 30} and s.label() == "2 nodes"
    # the line it was made on, published again: kept
    assert HIGHLIGHT not in s.move_to(DOC, "p", 10, "a")
    # its owner stepping through it (a request within it, answered): kept
    s.ask(Request(DOC, "p", line=30, within=SOURCE_LINE))
    assert s.move_to(DOC, "p", 30, "c") == {PLACE, REQUEST}
    assert s.highlighted() == {20, 30}
    # another request, even onto one of its lines: gone
    s.ask(Request(DOC, "p", line=20, within=USERS))
    assert HIGHLIGHT in s.move_to(DOC, "p", 20, "b") and s.highlighted() == set()
    # a plain move onto one of its lines (a click on a tinted node) is the selection
    # moving on (issue 29: a frame tinting 193 nodes was never cleared by clicks)
    s.highlight([20, 30], SOURCE_LINE, "2 nodes")
    assert s.move_to(DOC, "p", 30, "c") == {PLACE, HIGHLIGHT}
    assert s.highlighted() == set() and s.label() == ""
    # anywhere else: gone too, and its label with it
    s.highlight([20, 30], SOURCE_LINE, "2 nodes")
    assert s.move_to(DOC, "p", 11, "b") == {PLACE, HIGHLIGHT}
    assert s.highlighted() == set() and s.label() == ""


def test_kept_highlights_stay_until_their_owner_clears_them():
    s = SelectionState()
    s.move_to(DOC, "p", 0)
    s.highlight([5, 6], SEARCH)
    s.highlight([7], FAILING, "1 node fails")
    s.highlight([8], USERS, "1 user of x")
    s.move_to(DOC, "p", 100)
    assert set(s.highlights) == {SEARCH, FAILING}
    assert s.highlighted() == {7}  # the listing paints search matches itself
    assert s.highlighted(exclude=()) == {5, 6, 7}
    assert s.clear_highlight(FAILING) == {HIGHLIGHT}
    assert s.clear_highlight() == set()  # the search is kept by a bare clear
    assert s.clear_highlight(SEARCH) == {HIGHLIGHT} and not s.highlights


def test_one_passing_highlight_at_a_time_and_the_module_goes_with_its_lines():
    s = SelectionState()
    s.move_to(DOC, "p", 0)
    assert s.select_module("enc.h.0", [3, 4], "module enc.h.0: 2 nodes") == {MODULE_CHANGED, HIGHLIGHT}
    assert s.module == "enc.h.0"
    s.highlight([9], USERS, "1 user of y")  # replaces the module's lines
    assert set(s.highlights) == {USERS} and s.module is None and s.label() == "1 user of y"
    s.select_module("enc", [1, 2])
    assert s.move_to(DOC, "p", 50) == {PLACE, HIGHLIGHT, MODULE_CHANGED}
    assert s.module is None


def test_another_program_or_document_drops_every_highlight():
    s = SelectionState()
    s.move_to(DOC, "p", 0)
    s.highlight([5], SEARCH)
    s.highlight([0, 1], MODULE)
    assert s.move_to(DOC, "q", 0) == {PLACE, HIGHLIGHT}
    assert not s.highlights
    s.highlight([2], FAILING)
    s.move_to(OTHER, "q", 0)
    assert not s.highlights and s.document is OTHER


def test_a_request_is_answered_by_the_move_that_shows_it():
    s = SelectionState()
    req = Request(DOC, "p", node="add_1")
    assert s.ask(req) == {REQUEST}
    assert REQUEST not in s.move_to(DOC, "p", 3, "mul")  # another node: still waiting
    assert s.request is req
    assert REQUEST in s.move_to(DOC, "p", 7, "add_1")
    assert s.request is None
    s.ask(Request(DOC, "p", line=12))
    assert REQUEST in s.move_to(DOC, "p", 12) and s.request is None
    req = Request(DOC, "p", node="gone")
    s.ask(req)
    assert s.drop_request(Request(DOC, "p", node="gone")) == set()  # not that one
    assert s.drop_request(req) == {REQUEST} and s.request is None


def test_history_goes_back_and_forward_and_forgets_a_closed_document():
    h = History()
    assert h.back() is None
    h.record(Place(DOC, "p", 1), Place(DOC, "p", 9))
    h.record(Place(DOC, "p", 9), Place(OTHER, "q", 4))
    assert h.back() == Place(DOC, "p", 9)
    assert h.back() == Place(DOC, "p", 1)
    assert h.back() is None
    assert h.forward() == Place(DOC, "p", 9)
    h.record(Place(DOC, "p", 9), Place(DOC, "p", 2))  # a new jump drops what was ahead
    assert h.forward() is None
    assert [p.line for p in h.places()] == [1, 9, 2]
    s = SelectionState(history=h)
    s.move_to(DOC, "p", 2)
    s.ask(Request(DOC, "p", node="x"))
    assert s.forget(DOC) == {PLACE, MODULE_CHANGED, REQUEST}
    assert s.document is None and s.request is None and h.places() == []


def test_a_nodes_line_by_name_agrees_with_torchs_graph(small_archive):
    import torch

    ep = torch.export.load(str(small_archive))  # the test's own trusted file
    with open_archive(small_archive) as archive:
        program = archive.program(archive.program_names[0])
        listing = render_listing(program)
    names = [n.name for n in ep.graph.nodes if n.op == "call_function"]
    assert len(names) >= 5
    for name in names:  # a node's statement; a getitem torch adds: the line defining it
        line = node_line(listing, name)
        assert line is not None and listing.lines[line].lstrip().split(":")[0].split(" ")[0] \
            == name, name
    assert any(n.target is operator.getitem for n in ep.graph.nodes)
    for n in ep.graph.nodes:
        if n.op == "placeholder":
            line = node_line(listing, n.name)
            assert line is not None and listing.lines[line].lstrip().startswith("def forward(")
    assert node_line(listing, "no_such_node") is None
    # a listing streamed in: only the lines so far count, and growing finds it
    last = names[-1]
    at = node_line(listing, last)
    assert node_line(listing, last, upto=at) is None
    assert node_line(listing, last, upto=at + 1) == at
