"""Colours for the listing and panes, light and dark, following the OS scheme."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QGuiApplication


@dataclass(frozen=True)
class Theme:
    dark: bool
    background: QColor
    text: QColor
    gutter_bg: QColor
    gutter_text: QColor
    current_line: QColor
    related_line: QColor  # module selection, users of a value, nodes of a source line
    match_bg: QColor
    current_match_bg: QColor
    match_line: QColor
    link: QColor
    tokens: dict[str, QColor]  # pygments-derived categories -> colour
    severity: dict[str, QColor]
    heat: QColor  # the listing's heat column (alpha follows the value)
    # symbols (s70, u0, ...): one colour each, the same in the listing and the Shapes
    # panel (symbol_color picks one by name, so no view has to agree with another)
    symbols: tuple[QColor, ...]
    specialized_bg: QColor  # a dim torch made constant (Shapes panel)


def _c(hex_: str) -> QColor:
    return QColor(hex_)


LIGHT = Theme(
    dark=False,
    background=_c("#ffffff"), text=_c("#1f2328"),
    gutter_bg=_c("#f6f8fa"), gutter_text=_c("#8c959f"),
    current_line=_c("#e8f0fe"), related_line=_c("#fff4d6"),
    match_bg=_c("#ffe08a"), current_match_bg=_c("#ff9d3d"), match_line=_c("#fffbea"),
    link=_c("#0969da"),
    tokens={
        "keyword": _c("#cf222e"), "builtin": _c("#8250df"), "string": _c("#0a3069"),
        "number": _c("#0550ae"), "comment": _c("#6e7781"), "operator": _c("#1f2328"),
        "function": _c("#8250df"), "name": _c("#1f2328"), "target": _c("#953800"),
        "annotation": _c("#116329"),
    },
    severity={"error": _c("#cf222e"), "warning": _c("#bf8700"), "info": _c("#0969da")},
    heat=_c("#fb8f44"),
    # dark, saturated hues that read on white and differ from the token colours
    symbols=tuple(_c(h) for h in ("#1a7f37", "#b35900", "#0a7ea4", "#a40e26", "#6639ba",
                                  "#7d4e00", "#bf3989", "#116d6e", "#4b5fc0", "#8a6d00")),
    specialized_bg=_c("#fff1c2"),
)

DARK = Theme(
    dark=True,
    background=_c("#1e1f22"), text=_c("#d4d4d4"),
    gutter_bg=_c("#26282c"), gutter_text=_c("#6b717a"),
    current_line=_c("#2c3340"), related_line=_c("#3d3623"),
    match_bg=_c("#5c4d1a"), current_match_bg=_c("#9a5b13"), match_line=_c("#2f2b1e"),
    link=_c("#6cb6ff"),
    tokens={
        "keyword": _c("#ff7b72"), "builtin": _c("#d2a8ff"), "string": _c("#a5d6ff"),
        "number": _c("#79c0ff"), "comment": _c("#7d8590"), "operator": _c("#d4d4d4"),
        "function": _c("#d2a8ff"), "name": _c("#d4d4d4"), "target": _c("#ffa657"),
        "annotation": _c("#7ee787"),
    },
    severity={"error": _c("#f85149"), "warning": _c("#d29922"), "info": _c("#58a6ff")},
    heat=_c("#db6d28"),
    # light, saturated hues that read on the dark background
    symbols=tuple(_c(h) for h in ("#56d364", "#ffa657", "#39c5cf", "#ff7b9c", "#bc8cff",
                                  "#e3b341", "#f778ba", "#2dd4bf", "#8fa8ff", "#d4c36a")),
    specialized_bg=_c("#4a3b12"),
)


def symbol_color(name: str, theme: Theme | None = None) -> QColor:
    """The colour of symbol `name` from the theme's symbol palette. Stable (no
    per-process string hash): the number picks the colour, so the symbols of one
    program (s0, s1, s2 or s70, s72) differ unless their numbers differ by a
    multiple of the palette size; the letter (s, u) shifts it."""
    theme = theme or current_theme()
    palette = theme.symbols or (theme.link,)
    m = _SYMBOL_NAME.fullmatch(name)
    if m is None:
        index = zlib.crc32(name.encode())
    else:  # neighbours far apart on the palette (7 is prime to its 10 colours)
        index = int(m.group(2)) * 7 + zlib.crc32(m.group(1).encode())
    return QColor(palette[index % len(palette)])


_SYMBOL_NAME = re.compile(r"([a-z]+)(\d+)")


def is_dark() -> bool:
    app = QGuiApplication.instance()
    if app is None:
        return False
    scheme = QGuiApplication.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return True
    if scheme == Qt.ColorScheme.Light:
        return False
    # Unknown (e.g. offscreen): judge the palette's window colour.
    return QGuiApplication.palette().window().color().lightness() < 128


def current_theme() -> Theme:
    return DARK if is_dark() else LIGHT


def code_font() -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    if font.pointSizeF() < 10:
        font.setPointSizeF(10)
    return font
