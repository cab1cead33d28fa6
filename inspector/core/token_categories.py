"""The one map from pygments token types to the theme's colour categories.

Every highlighter of the project reads it: the listing's (core/line_highlight.py,
ListingLexer), the Source pane's Python files and an AOTInductor package's C++
(core/source_spans.py). The theme (ui/widgets/theme.py) colours each category.
The first row whose token type holds the token wins (a preprocessor line is a
Comment in pygments, and reads as `builtin`; `Keyword.Type` before `Keyword`).
"""

from __future__ import annotations

from pygments.token import Comment, Keyword, Name, Number, Operator, String

FUNCTION = "function"  # a function's name; the listing names its op targets "target"

_TABLE = (
    (Comment.Preproc, "builtin"),
    (Comment.PreprocFile, "builtin"),
    (Comment, "comment"),
    (String, "string"),
    (Number, "number"),
    (Keyword.Type, "annotation"),
    (Keyword, "keyword"),
    (Name.Function, FUNCTION),
    (Name.Builtin, "builtin"),
    (Operator, "operator"),
)


def token_category(ttype, function: str = FUNCTION) -> str | None:
    """The theme category of a pygments token type (None: the default colour).
    `function`: the category of function names (the listing: "target")."""
    for parent, category in _TABLE:
        if ttype in parent:
            return function if category == FUNCTION else category
    return None
