"""core.text.mark_lines: the listing view's marking of invisible characters (bidi,
zero-width, controls), checked against mark_invisible one character at a time."""

from __future__ import annotations

from inspector.core.text import MARKED, mark_invisible, mark_lines


def test_every_marked_character_is_marked_in_a_line() -> None:
    for c in sorted(MARKED):
        line = f"x = 'a{chr(c)}b'"
        assert mark_lines(["clean", line]) == ["clean", mark_invisible(line)], hex(c)
        assert chr(c) not in mark_lines([line])[0]


def test_clean_lines_come_back_as_they_are() -> None:
    lines = ["def f(x):", "\treturn x  # tab and newline are kept", "naïve = 'é'"]
    assert mark_lines(lines) is lines
    assert mark_lines([]) == []
