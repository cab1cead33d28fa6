"""Compare the `range_constraints` of two archives (before and after a re-export).

Symbols are renamed by every export (`s70` today, `s43` tomorrow), so rows are matched
by where a symbol first appears among the program's user inputs: `input_ids[1]` is the
decoder's sequence length in both archives whatever its symbol is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

from inspector.core.archive import open_archive
from inspector.core.program import Program, Range


@dataclass(frozen=True)
class RangeRow:
    program: str
    dim: str  # "input_ids[1]", or the bare symbol when no input shows it
    symbol: str
    range: Range


def dim_labels(program: Program) -> dict[str, str]:
    """symbol -> "input[dim]" for symbols that are a whole size of a user input."""
    labels: dict[str, str] = {}
    for spec in program.user_inputs():
        meta = program.graph.tensor_values.get(spec.name)
        if meta is None:
            continue
        for i, size in enumerate(meta.sizes):
            if isinstance(size, str) and size.isidentifier() and size not in labels:
                labels[size] = f"{spec.name}[{i}]"
    return labels


def range_rows(path: str | Path) -> list[RangeRow]:
    """Every program's range constraints, labelled (reads JSON only, never torch)."""
    rows: list[RangeRow] = []
    with open_archive(path) as archive:
        for program in archive.programs():
            labels = dim_labels(program)
            for symbol, rng in sorted(program.range_constraints.items()):
                rows.append(RangeRow(program.name, labels.get(symbol, symbol), symbol, rng))
    return sorted(rows, key=lambda r: (r.program, r.dim))


def compare(old: list[RangeRow], new: list[RangeRow]) -> list[tuple[str, str, str, str, bool]]:
    """(program, dimension, before, after, changed) for the union of both."""
    before = {(r.program, r.dim): r for r in old}
    after = {(r.program, r.dim): r for r in new}
    out = []
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        ta = a.range.text() if a else "—  (static)"
        tb = b.range.text() if b else "—  (static)"
        out.append((key[0], key[1], ta, tb, ta != tb))
    return out


def compare_files(before: str | None, after: str) -> list[tuple[str, str, str, str, bool]]:
    """compare() of two archives' tables (`before` may be None: only the new one)."""
    return compare(range_rows(before) if before else [], range_rows(after))


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
