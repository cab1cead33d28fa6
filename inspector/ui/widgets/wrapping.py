"""Long text in narrow panels: tree rows that wrap instead of eliding. (Labels
that elide and escaped tooltips live in inspector/ui/plain.py.)"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QStyledItemDelegate, QStyleOptionViewItem, QTreeView


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
