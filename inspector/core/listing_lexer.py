"""A pygments lexer for listings (Qt-free, so the HTML report can use it).

pygments' PythonLexer costs ~4x more a line and knows nothing of the listing's
own tokens; this one colours `"f32[s72, 64]"` annotations and
`torch.ops.aten.x.default` targets on their own. The window's highlighter
(inspector/core/line_highlight.py, which the window paints from) uses it too: one set of rules.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, String, Text, Whitespace


class ListingLexer(RegexLexer):
    name = "pt2 listing"
    aliases = ["pt2-listing"]
    tokens = {
        "root": [
            (r"#.*$", Comment),
            (r'"(?:[a-z]+[0-9]*\w*\[[^"]*\]|Sym\([^"]*\))"', Keyword.Type),
            (r"'[^']*'|\"[^\"]*\"", String),
            (r"torch\.ops\.[\w.]+", Name.Function),
            (r"\b(?:class|def|return|pass|None|True|False|self)\b", Keyword),
            (r"\b(?:device|torch(?:\.[a-z_][\w]*)*)\b", Name.Builtin),
            (r"(?<![\w.])-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?\b", Number),
            (r"[A-Za-z_]\w*", Name),
            (r"\s+", Whitespace),
            (r"[=+\-*/@<>&|^~%]", Operator),
            (r".", Text),
        ],
    }
