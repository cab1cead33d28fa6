"""Text from a file in widgets that guess whether text is rich (tooltips, item
tooltips, labels in AutoText): made rich on purpose and fully escaped, so it can
never be read as markup; and the means to show long text in narrow panels: labels
that elide (whole text in the tooltip), tree rows that wrap."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics, QResizeEvent
from PySide6.QtWidgets import (
    QLabel,
    QSizePolicy,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeView,
    QWidget,
)


def plain_tooltip(text: str) -> str:
    """A tooltip that shows `text` as it is (line breaks kept)."""
    if not text:
        return ""
    return "<p style='white-space:pre'>" + escape(text) + "</p>"


class ElidedLabel(QLabel):
    """A one-line plain-text label that elides to its width ("…") and shows the
    whole text as its tooltip when cut: a long file name never widens a dock."""

    def __init__(self, text: str = "", parent: QWidget | None = None,
                 mode: Qt.TextElideMode = Qt.TextElideMode.ElideMiddle) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(40)
        self._mode = mode
        self._full = ""
        self.set_full_text(text)

    def full_text(self) -> str:
        return self._full

    def set_full_text(self, text: str) -> None:
        self._full = text
        self._elide()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = QFontMetrics(self.font()).elidedText(self._full, self._mode, max(10, self.width()))
        super().setText(shown)
        self.setToolTip(plain_tooltip(self._full) if shown != self._full else "")


class WrappingDelegate(QStyledItemDelegate):
    """Rows of a tree's first column as tall as their wrapped text at the column's
    width (QTreeView's word wrap paints wrapped text but sizes rows for one line):
    long titles read whole in a narrow dock instead of ending in "…"."""

    def __init__(self, view: QTreeView) -> None:
        super().__init__(view)
        self.view = view
        view.setWordWrap(True)
        view.setUniformRowHeights(False)
        view.header().sectionResized.connect(lambda *_: view.scheduleDelayedItemsLayout())

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:  # noqa: N802
        base = super().sizeHint(option, index)
        if index.column() != 0:
            return base
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        depth, parent = 0, index.parent()
        while parent.isValid():
            depth, parent = depth + 1, parent.parent()
        view = self.view
        indent = view.indentation() * (depth + (1 if view.rootIsDecorated() else 0))
        width = view.header().sectionSize(0) - indent - opt.decorationSize.width() - 12
        if width <= 20:
            return base
        rect = QFontMetrics(opt.font).boundingRect(QRect(0, 0, width, 100_000),
                                                   Qt.TextFlag.TextWordWrap, opt.text)
        return QSize(base.width(), max(base.height(), rect.height() + 4))
