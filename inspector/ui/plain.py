"""Text from a file, shown in Qt widgets exactly as written.

QLabel, QMessageBox and tooltips guess whether a string is HTML
(Qt::mightBeRichText): a name like `<img src=/x.png width=900>` from an archive
would render, load local images, grow the window, or carry a link the desktop
opens. Everything from a file goes through these helpers instead:

- `plain_label(label)` / `ElidedLabel`: Qt.PlainText; the elided one never asks for
  more width than it gets (a crafted program name cannot grow the window);
- `plain_tip(text)`: a tooltip that is rich text on purpose, fully escaped;
- `message_box(...)`: a QMessageBox instance whose every label is plain text (the
  static helpers, QMessageBox.question & co, guess rich text);
- every one marks bidi, zero-width and control characters (core/text.py).
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QMessageBox, QSizePolicy, QWidget

from inspector.core.text import mark_invisible

# A tooltip or label longer than this is cut: laying out a megabyte line freezes Qt.
MAX_SHOWN = 2000


def shown(text: str | None, limit: int = MAX_SHOWN) -> str:
    """`text` as the window shows it: invisible characters marked, cut at `limit`."""
    raw = text or ""
    # cut before marking: a long text costs its first `limit` characters only (a
    # 100k-node picture's tooltips took most of its scene's build when marked whole)
    marked = mark_invisible(raw[:limit])
    more = max(0, len(raw) - limit) + max(0, len(marked) - limit)
    return marked if not more else marked[:limit] + f"… ({more:,} more characters)"


def plain_tip(text: str | None, limit: int = MAX_SHOWN) -> str:
    """A tooltip showing `text` literally (rich on purpose, fully escaped)."""
    return "<p style='white-space:pre-wrap'>" + escape(shown(text, limit)) + "</p>" if text else ""


def plain_label(label: QLabel) -> QLabel:
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setOpenExternalLinks(False)
    return label


class ElidedLabel(QLabel):
    """A one-line plain-text label that elides to the width it gets instead of
    growing (a crafted program name cannot widen the window), with the whole text
    as its tooltip when cut."""

    def __init__(self, text: str = "", parent: QWidget | None = None,
                 mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight) -> None:
        super().__init__(parent)
        plain_label(self)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(1)
        self._mode = mode
        self._full = ""
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self._full = shown(text).replace("\n", " ")
        self._elide()

    set_full_text = setText

    def full_text(self) -> str:
        return self._full

    def _elide(self) -> None:
        cut = self.fontMetrics().elidedText(self._full, self._mode, max(self.width(), 1))
        super().setText(cut)
        self.setToolTip(plain_tip(self._full) if cut != self._full else "")

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()


def message_box(parent: QWidget | None, icon: QMessageBox.Icon, title: str, text: str,
                buttons: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok,
                default: QMessageBox.StandardButton | None = None, informative: str = "",
                details: str = "") -> QMessageBox:
    """A message box that shows file text as plain text (its labels never guess HTML)."""
    box = QMessageBox(parent)
    box.setIcon(icon)
    box.setWindowTitle(title)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setText(shown(text))
    if informative:
        box.setInformativeText(shown(informative))
    if details:
        box.setDetailedText(mark_invisible(details))  # a QTextEdit with plain text
    box.setStandardButtons(buttons)
    if default is not None:
        box.setDefaultButton(default)
    for label in box.findChildren(QLabel):  # the informative label has its own format
        if label.text():
            plain_label(label)  # also no links handed to the desktop
    return box
