"""A table cell that draws a share (0..1) as a bar behind its text: the Profile panel's
node table and the module tree's time column read "where the time goes" at a glance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QRectF, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QStyledItemDelegate, QWidget

from inspector.ui.widgets.theme import current_theme

if TYPE_CHECKING:
    from PySide6.QtWidgets import QStyleOptionViewItem

SHARE_ROLE = Qt.ItemDataRole.UserRole + 7  # float 0..1: how much of the bar to fill


class ShareBarDelegate(QStyledItemDelegate):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.color = QColor(current_theme().heat)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        share = index.data(SHARE_ROLE)
        if not isinstance(share, (int, float)):
            super().paint(painter, option, index)
            return
        # Imported on the first bar drawn: touching QStyle from Python makes its
        # Python enums (hundreds of members), ~30 ms that the window's launch, whose
        # module tree has no time column yet, need not pay.
        from PySide6.QtWidgets import QStyle, QStyleOptionViewItem

        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        style = opt.widget.style() if opt.widget is not None else None
        text, opt.text = opt.text, ""
        if style is not None:  # selection and alternating background, without the text
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        r = QRectF(opt.rect).adjusted(2, 3, -2, -3)
        painter.save()
        bar = QColor(self.color)
        bar.setAlphaF(0.55)
        painter.fillRect(QRectF(r.left(), r.top(), r.width() * max(0.0, min(1.0, float(share))),
                                r.height()), bar)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        painter.setPen(opt.palette.highlightedText().color() if selected
                       else opt.palette.text().color())
        painter.drawText(r.adjusted(3, 0, -3, 0),
                         Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text)
        painter.restore()
