"""Colour spans of package sources (inspector/core/source_spans.py): whole-text
lexing cut per line, bounded."""

from __future__ import annotations

from inspector.core.source_spans import line_spans, lexer_for


def test_multi_line_tokens_keep_their_colour_on_every_line() -> None:
    text = "/* a comment\nover lines */ int x = 1;\n#include <cpu.h>\n"
    spans = line_spans(text, lexer_for("k.kernel.cpp"))
    assert spans[0] == [(0, len("/* a comment"), "comment")]
    assert spans[1][0] == (0, len("over lines */"), "comment")
    assert (14, 17, "annotation") in spans[1]  # int
    assert spans[2][0][2] == "builtin"  # the preprocessor line


def test_only_the_first_characters_up_to_the_limit_are_lexed() -> None:
    text = "/* a comment\nover lines */ int x = 1;\n" * 50
    spans = line_spans(text, lexer_for("k.kernel.cpp"), limit=30)
    assert set(spans) == {0, 1}
    assert max(e for row in spans.values() for _s, e, _c in row) <= 30 - 13  # columns of line 1 end before the bound
    assert len(line_spans(text, lexer_for("k.kernel.cpp"))) == 100


def test_a_cancelled_task_stops() -> None:
    text = "int x = 1;\n" * 20000
    assert line_spans(text, lexer_for("w.wrapper.cpp"), cancelled=lambda: True) == {}
