"""Inputs named after builtins in the window (issue 14, item 1): FX prints the
placeholder `input` of an nn.Sequential export as `input_1`; F12 / Ctrl+click
on `input_1` goes to the placeholder, its users are the lines reading it, and
the details pane names and links values as the listing prints them. Real
exports (tests/unit/fidelity_models.py), saved by torch, opened in a window.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from archive_factory import ArchiveFactory
from PySide6.QtCore import QUrl, Qt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from inspector.core.archive import open_archive  # noqa: E402
from inspector.core.listing import render_listing, value_users  # noqa: E402


@pytest.fixture(scope="module")
def archives(archive_factory: ArchiveFactory) -> dict[str, Path]:
    from fidelity_models import builtin_name_builders

    return {name: archive_factory.save(name, build) for name, _group, build in builtin_name_builders()
            if name in ("builtins/sequential", "builtins/many_builtins")}


def _expected(path: Path):
    with open_archive(path) as archive:
        program = archive.program("model")
    listing = render_listing(program)
    return listing, value_users(program, listing)


def _ctrl_click(qtbot, tab, line: int, word: str) -> None:
    view = tab.listing
    column = view.line_text(line).index(word) + 1
    view.ensure_visible(line)
    view.horizontalScrollBar().setValue(0)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     Qt.KeyboardModifier.ControlModifier, view.point_at(line, column))


def test_input_1_links_to_the_placeholder_and_back(qtbot, window, open_wait, archives):
    path = archives["builtins/sequential"]
    listing, users = _expected(path)
    tab = open_wait(path)
    lines = tab.listing
    first_use = next(i for i, t in enumerate(listing.lines) if "(input_1," in t)
    def_line = listing.definitions[("", "input")]
    assert lines.line_text(def_line).lstrip().startswith("def forward(self, ")
    assert ' input: "f32[' in lines.line_text(def_line)
    assert users[("", "input")] == [first_use]

    # Ctrl+click on the printed name: the placeholder's line
    assert tab.view.definition_line("input_1", first_use) == def_line
    _ctrl_click(qtbot, tab, first_use, "input_1")
    assert lines.current_line() == def_line

    # F12 on the statement that reads it (its first input) goes there too
    lines.set_current_line(first_use)
    assert window.go_to_definition()
    assert lines.current_line() == def_line

    # users of input_1 (printed) are the users of the value `input`
    lines.set_current_line(first_use)
    assert window.show_users("input_1") == [first_use]
    assert lines.related_lines() == {first_use}
    assert "1 user of input_1" in window.status_label.text()
    lines.set_current_line(def_line)
    assert window.show_users("input") == [first_use]

    # the details pane of the first use prints and links `input_1`
    lines.set_current_line(first_use)
    html = window.details.browser.toHtml()
    assert "def:input_1" in html and "def:input'" not in html and 'def:input"' not in html
    window.details.browser.anchorClicked.emit(QUrl("def:input_1"))
    assert lines.current_line() == def_line


def test_a_taken_name_moves_on_in_the_window(qtbot, window, open_wait, archives):
    """`input_1` is a user input too: it is printed `input_2`, and the token
    input_1 is the renamed `input`."""
    path = archives["builtins/many_builtins"]
    listing, users = _expected(path)
    tab = open_wait(path)
    sum_line = next(i for i, t in enumerate(listing.lines) if "sum.default(input_2)" in t)
    add_line = next(i for i, t in enumerate(listing.lines) if "(input_1, mul" in t)
    assert window.show_users("input_2") == users[("", "input_1")]
    assert sum_line in window.show_users("input_2")
    assert window.show_users("input_1") == users[("", "input")]
    assert add_line in users[("", "input")] and sum_line not in users[("", "input")]
    # the details pane of the sum names what it reads as the listing does
    tab.listing.set_current_line(sum_line)
    text = window.details.plain_text()
    assert "input_2" in text
    node = tab.view.node_at(sum_line)
    assert node.input_names() == ["input_1"]  # the file's name: not what is shown
    assert "def:input_2" in window.details.browser.toHtml()
