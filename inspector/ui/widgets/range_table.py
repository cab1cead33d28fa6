"""The Export panel's before/after table of range constraints (the rows are
inspector/core/range_compare.py's)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem


class RangeCompareTable(QTableWidget):
    """Program | Dimension | Before | After, changed rows emphasised."""

    HEADERS = ("Program", "Dimension", "Before", "After")

    def __init__(self, parent=None) -> None:
        super().__init__(0, len(self.HEADERS), parent)
        self.setHorizontalHeaderLabels(self.HEADERS)
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setAlternatingRowColors(True)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.horizontalHeader().setSectionResizeMode(1, QHeaderView.Stretch)

    def show_rows(self, rows: list[tuple[str, str, str, str, bool]]) -> None:
        self.setRowCount(len(rows))
        bold = QFont(self.font())
        bold.setBold(True)
        for r, (program, dim, before, after, changed) in enumerate(rows):
            for c, text in enumerate((program, dim, before, after)):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignVCenter | (Qt.AlignLeft if c < 2 else Qt.AlignRight))
                if changed:
                    item.setFont(bold)
                    if c == 3:
                        item.setForeground(QBrush(QColor("#2e7d32")))
                    item.setToolTip(f"{dim}: {before} -> {after}")
                self.setItem(r, c, item)
        self.resizeRowsToContents()

    def rows(self) -> list[tuple[str, ...]]:
        return [tuple(self.item(r, c).text() for c in range(self.columnCount()))
                for r in range(self.rowCount())]
