"""The Profile panel's tables: node times, the rollups by op and by source line (each
sortable, with a share bar per row, like the module tree's time column) and failures.

Views over a model (a profile of a 100k-node program is 100k rows); sorting goes
through a QSortFilterProxyModel on raw values (SORT_ROLE), so "ms" sorts as numbers.
Every cell is plain text: node names, targets and torch's messages come from a file.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from inspector.core.annotations import ERROR
from inspector.core.run_layers import (
    FailureRow,
    NodeRow,
    OpRow,
    SourceRow,
    ms_text,
    share_text,
)
from inspector.ui.plain import plain_tip
from inspector.ui.widgets.share_bar import SHARE_ROLE, ShareBarDelegate
from inspector.ui.widgets.theme import current_theme

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
ROW_ROLE = Qt.ItemDataRole.UserRole + 2  # the NodeRow / FailureRow of the row

_Index = QModelIndex | QPersistentModelIndex


class _RowsModel(QAbstractTableModel):
    COLUMNS: tuple[str, ...] = ()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[Any] = []

    def set_rows(self, rows: list[Any]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == ROW_ROLE:
            return row
        return self.cell(row, index.column(), role)

    def cell(self, row: Any, column: int, role: int) -> Any:
        raise NotImplementedError


_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


class _TimedModel(_RowsModel):
    """Rows with a time and a share: texts, sort keys (raw numbers), a share bar in
    column SHARE, right-aligned RIGHT columns; subclasses say what each column is."""

    SHARE = 2
    RIGHT: tuple[int, ...] = (1,)

    def texts(self, row: Any) -> tuple:
        raise NotImplementedError

    def keys(self, row: Any) -> tuple:
        raise NotImplementedError

    def tip(self, row: Any, column: int) -> str | None:
        return None

    def foreground(self, row: Any, column: int) -> Any:
        return None

    def cell(self, row: Any, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            return self.texts(row)[column]
        if role == SORT_ROLE:
            return self.keys(row)[column]
        if role == SHARE_ROLE and column == self.SHARE:
            return row.share
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = self.tip(row, column)
            return plain_tip(tip) if tip is not None else None
        if role == Qt.ItemDataRole.ForegroundRole:
            return self.foreground(row, column)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in self.RIGHT:
            return _RIGHT
        return None


class NodeTimesModel(_TimedModel):
    COLUMNS = ("Node", "ms", "Share", "Target", "Module", "Line", "Program")
    NODE, MS, SHARE, TARGET, MODULE, LINE, PROGRAM = range(7)
    RIGHT = (MS, LINE)

    def texts(self, row: NodeRow) -> tuple:
        return (row.name, ms_text(row.ms), share_text(row.share), _short_target(row.target),
                row.module or "(root)", "" if row.line is None else str(row.line), row.program)

    def keys(self, row: NodeRow) -> tuple:
        return (row.name, row.ms, row.share, row.target, row.module,
                -1 if row.line is None else row.line, row.program)

    def tip(self, row: NodeRow, column: int) -> str | None:
        return {self.TARGET: row.target, self.MODULE: row.module}.get(column)


class OpTimesModel(_TimedModel):
    """The `ops` rollup: time per target (a click jumps to its slowest node)."""

    COLUMNS = ("Op", "ms", "Share", "Nodes", "Slowest node", "Program")
    OP, MS, SHARE, NODES, SLOWEST, PROGRAM = range(6)
    RIGHT = (MS, NODES)

    def texts(self, row: OpRow) -> tuple:
        return (_short_target(row.target), ms_text(row.ms), share_text(row.share),
                str(row.nodes), row.slowest, row.program)

    def keys(self, row: OpRow) -> tuple:
        return (row.target, row.ms, row.share, row.nodes, row.slowest, row.program)

    def tip(self, row: OpRow, column: int) -> str | None:
        return row.target if column == self.OP else None


class SourceTimesModel(_TimedModel):
    """The `sources` rollup: time per source line (the innermost frame of each node)."""

    COLUMNS = ("Source line", "ms", "Share", "Nodes", "Code", "Slowest node", "Program")
    WHERE, MS, SHARE, NODES, CODE, SLOWEST, PROGRAM = range(7)
    RIGHT = (MS, NODES)

    def texts(self, row: SourceRow) -> tuple:
        where = f"{_basename(row.file)}:{'' if row.line is None else row.line}"
        return (where, ms_text(row.ms), share_text(row.share), str(row.nodes),
                row.code.strip(), row.slowest, row.program)

    def keys(self, row: SourceRow) -> tuple:
        # a string key for the place: the proxy compares strings and numbers, not tuples
        where = f"{row.file}\0{-1 if row.line is None else row.line:012d}"
        return (where, row.ms, row.share, row.nodes, row.code, row.slowest, row.program)

    def tip(self, row: SourceRow, column: int) -> str | None:
        if column not in (self.WHERE, self.CODE):
            return None
        return (f"{row.file}:{row.line} in {row.function}\n{row.code.strip()}"
                + ("" if row.user else "\n(library code)"))

    def foreground(self, row: SourceRow, column: int) -> Any:
        # library frames read quieter (the listing's comment grey) than the model's code
        return current_theme().tokens["comment"] if column == self.WHERE and not row.user else None


class FailuresModel(_RowsModel):
    # no Target column: the message needs the width (the target is in the details pane)
    COLUMNS = ("Node", "Line", "Message", "Program")
    NODE, LINE, MESSAGE, PROGRAM = range(4)

    def cell(self, row: FailureRow, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            message = row.message.splitlines()[0] if row.message else ""
            if row.severity != ERROR:
                message = f"not checked: {message}"
            return (row.node, "" if row.line is None else str(row.line), message,
                    row.program)[column]
        if role == SORT_ROLE:
            return (row.node, -1 if row.line is None else row.line, row.message,
                    row.program)[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            return plain_tip(f"{row.node} = {row.target}\n{row.message}"
                                 + (f"\nmade at {row.where}" if row.where else ""))
        if role == Qt.ItemDataRole.ForegroundRole and column == self.NODE:
            return current_theme().severity.get(row.severity, current_theme().severity["info"])
        if role == Qt.ItemDataRole.TextAlignmentRole and column == self.LINE:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class RowsTable(QTableView):
    """A sortable table over a _RowsModel; `rowActivated(row)` on click or Enter."""

    rowActivated = Signal(object)  # NodeRow | FailureRow

    def __init__(self, model: _RowsModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source = model
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(model)
        self.proxy.setSortRole(SORT_ROLE)
        self.setModel(self.proxy)
        self.setSortingEnabled(True)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.horizontalHeader()
        header.setHighlightSections(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.clicked.connect(self._activated)
        self.activated.connect(self._activated)

    def set_rows(self, rows: list[Any]) -> None:
        self.source.set_rows(rows)
        self.setColumnHidden(len(self.source.COLUMNS) - 1,
                             len({r.program for r in rows}) < 2)  # Program: only if several

    def row_at(self, view_row: int) -> Any:
        return self.proxy.index(view_row, 0).data(ROW_ROLE)

    def shown_rows(self) -> list[Any]:
        return [self.row_at(i) for i in range(self.proxy.rowCount())]

    def _activated(self, index: QModelIndex) -> None:
        row = index.data(ROW_ROLE)
        if row is not None:
            self.rowActivated.emit(row)


def node_table(parent: QWidget | None = None) -> RowsTable:
    m = NodeTimesModel
    return _timed_table(m(parent), "profileNodes", m.SHARE, m.MODULE,
                        ((m.NODE, 150), (m.MS, 72), (m.SHARE, 90), (m.TARGET, 170),
                         (m.MODULE, 170), (m.LINE, 50)), parent)


def _timed_table(model: _RowsModel, name: str, share: int, stretch: int,
                 widths: tuple[tuple[int, int], ...], parent: QWidget | None) -> RowsTable:
    """A table of timed rows: share bars, the stretching column, slowest first."""
    table = RowsTable(model, parent)
    table.setObjectName(name)
    table.setItemDelegateForColumn(share, ShareBarDelegate(table))
    for col, width in widths:
        table.setColumnWidth(col, width)
    table.horizontalHeader().setStretchLastSection(False)
    table.horizontalHeader().setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    table.sortByColumn(1, Qt.SortOrder.DescendingOrder)  # ms: slowest first
    return table


def op_table(parent: QWidget | None = None) -> RowsTable:
    m = OpTimesModel
    return _timed_table(m(parent), "profileOps", m.SHARE, m.OP,
                        ((m.OP, 220), (m.MS, 64), (m.SHARE, 80), (m.NODES, 48),
                         (m.SLOWEST, 150)), parent)


def source_table(parent: QWidget | None = None) -> RowsTable:
    m = SourceTimesModel
    return _timed_table(m(parent), "profileSources", m.SHARE, m.CODE,
                        ((m.WHERE, 150), (m.MS, 64), (m.SHARE, 80), (m.NODES, 48),
                         (m.CODE, 260), (m.SLOWEST, 110)), parent)


def failures_table(parent: QWidget | None = None) -> RowsTable:
    table = RowsTable(FailuresModel(parent), parent)
    table.setObjectName("profileFailures")
    for col, width in ((FailuresModel.NODE, 150), (FailuresModel.LINE, 50),
                       (FailuresModel.MESSAGE, 520), (FailuresModel.PROGRAM, 80)):
        table.setColumnWidth(col, width)
    table.horizontalHeader().setStretchLastSection(False)
    table.horizontalHeader().setSectionResizeMode(FailuresModel.MESSAGE,
                                                  QHeaderView.ResizeMode.Stretch)
    # the job's order (program by program, graph order) until a header is clicked
    table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
    return table


def _short_target(target: str) -> str:
    """torch.ops.aten.embedding.default -> aten.embedding (the full name in the tooltip)."""
    t = target.removeprefix("torch.ops.")
    return t.removesuffix(".default")


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]
