"""The weights table (a model, sortable, NaN/Inf rows marked) and the histogram of one
weight. Pure views: the Weights panel (inspector/ui/panels/weights.py) fills them
from inspector/core/weight_table.py's rows, computed off the GUI thread.

Names and notes come from the file: item views paint DisplayRole as plain text, and
tooltips (which Qt would guess to be rich text) are escaped.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from inspector.core.document import WeightRow
from inspector.core.weight_table import WeightEntry
from inspector.ui.plain import plain_tip
from inspector.ui.widgets.side_tables import human_bytes
from inspector.ui.widgets.theme import current_theme

SORT_ROLE = Qt.ItemDataRole.UserRole + 1  # the number (or text) a column sorts by
FLAG_ROLE = Qt.ItemDataRole.UserRole + 2  # "nonfinite", "error" or "" for the row

# The statistics right after the name, so they stay in view in a narrow dock.
# Device, record and sharing come from the configs (they were the Tables dock's).
COLUMNS = ("Name", "Dtype", "Shape", "Min", "Max", "Mean", "Std", "NaN", "Inf", "Zeros",
           "Kind", "Bytes", "Device", "Record", "Shared with", "Note")
STAT_KEYS = {COLUMNS.index(k.capitalize() if k != "nan" else "NaN"): k
             for k in ("min", "max", "mean", "std", "nan", "inf", "zeros")}
NAME_COLUMN, DTYPE_COLUMN, SHAPE_COLUMN = 0, 1, 2
KIND_COLUMN, BYTES_COLUMN, NOTE_COLUMN = COLUMNS.index("Kind"), COLUMNS.index("Bytes"), COLUMNS.index("Note")
NAN_COLUMN, INF_COLUMN = COLUMNS.index("NaN"), COLUMNS.index("Inf")
DEVICE_COLUMN, RECORD_COLUMN, SHARED_COLUMN = (COLUMNS.index("Device"), COLUMNS.index("Record"),
                                               COLUMNS.index("Shared with"))
_NUMERIC = {BYTES_COLUMN, *STAT_KEYS}
_PENDING = "…"  # a statistic not computed yet


def format_value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, list | tuple):  # a complex mean
        return f"{v[0]:.4g}{v[1]:+.4g}j"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.4g}"


def _sort_value(v: Any) -> float:
    if v is None:
        return -math.inf
    if isinstance(v, list | tuple):
        return float(math.hypot(v[0], v[1]))
    return float(v)


class WeightsModel(QAbstractTableModel):
    """One row per weight; statistics arrive later (set_rows)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.entries: list[WeightEntry] = []
        self.rows: list[dict[str, Any] | None] = []  # `weights --json` rows, None: pending
        self.configs: dict[str, WeightRow] = {}  # the configs' row of each name
        self._colors = current_theme().severity

    def set_entries(self, entries: list[WeightEntry],
                    configs: list[WeightRow] | None = None) -> None:
        """`configs`: the program's weight rows as the document read them (device,
        record, the names sharing a record), matched by name."""
        self.beginResetModel()
        self.entries = list(entries)
        self.configs = {w.fqn: w for w in configs or []}
        self.rows = [None] * len(self.entries)
        self.endResetModel()

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        """Statistics for every entry (same order as the entries)."""
        if len(rows) != len(self.entries):
            return  # not for these entries (a stale result)
        self.rows = list(rows)
        if self.entries:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.entries) - 1, len(COLUMNS) - 1))

    def refresh_theme(self) -> None:
        self._colors = current_theme().severity
        if self.entries:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.entries) - 1, len(COLUMNS) - 1))

    def flag(self, row: int) -> str:
        r = self.rows[row]
        if r is None:
            return ""
        s = r.get("stats")
        if s is not None and (s.get("nan") or s.get("inf")):
            return "nonfinite"
        if (r.get("note") or "").startswith("error"):
            return "error"
        return ""

    # -- Qt --
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole:
            return {"Std": "standard deviation, Bessel-corrected (as torch's Tensor.std())",
                    "Min": "over the finite values", "Max": "over the finite values",
                    "Mean": "over the finite values"}.get(COLUMNS[section])
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        entry, row = self.entries[r], self.rows[r]
        info = entry.info
        if role in (Qt.ItemDataRole.DisplayRole, SORT_ROLE):
            sort = role == SORT_ROLE
            if c == NAME_COLUMN:
                return info.name
            if c == KIND_COLUMN:
                return info.kind
            if c == DTYPE_COLUMN:
                return info.dtype_name or "?"
            if c == SHAPE_COLUMN:
                return "[" + ", ".join(str(s) for s in info.sizes) + "]"
            if c == BYTES_COLUMN:
                return float(info.nbytes or 0) if sort else human_bytes(info.nbytes)
            if c == NOTE_COLUMN:
                note = row.get("note") if row is not None else info.note
                return note or ""
            if c in (DEVICE_COLUMN, RECORD_COLUMN, SHARED_COLUMN):
                return self._config_text(info.name, c)
            stats = row.get("stats") if row is not None else None
            if stats is None:
                if sort:
                    return -math.inf
                return _PENDING if row is None and info.readable else ""
            v = stats[STAT_KEYS[c]]
            return _sort_value(v) if sort else format_value(v)
        if role == Qt.ItemDataRole.TextAlignmentRole and c in _NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == FLAG_ROLE:
            return self.flag(r)
        if role == Qt.ItemDataRole.ForegroundRole:
            flag = self.flag(r)
            if flag == "nonfinite" and c in (NAME_COLUMN, NAN_COLUMN, INF_COLUMN):
                return self._colors["error"]
            if flag == "error" and c in (0, NOTE_COLUMN):
                return self._colors["error"]
            if c == NOTE_COLUMN and row is not None and row.get("note"):
                return self._colors["warning"]
            return None
        if role == Qt.ItemDataRole.BackgroundRole and self.flag(r) == "nonfinite":
            tint = QColor(self._colors["error"])
            tint.setAlpha(40)
            return tint
        if role == Qt.ItemDataRole.ToolTipRole:
            if c == 0:
                where = f"\ngraph input: {entry.placeholder}" if entry.placeholder else ""
                return plain_tip(f"{info.name}{where}\n(double-click: show it in the listing)")
            if c == NOTE_COLUMN:
                note = row.get("note") if row is not None else info.note
                return plain_tip(note) if note else None
        return None


    def _config_text(self, name: str, column: int) -> str:
        w = self.configs.get(name)
        if w is None:
            return ""
        if column == DEVICE_COLUMN:
            return w.device
        if column == RECORD_COLUMN:
            return w.record + (" (pickled)" if w.pickled else "")
        return ", ".join(w.shared_with)


class HistogramView(QWidget):
    """Counts of one weight's finite values (pyqtgraph), with a plain-text title."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("Select a weight to see its histogram.")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.title.setWordWrap(True)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("weightHistogram")
        self.plot.setLabel("left", "count")
        # no "(x0.001)" scale beside the label: counts are whole numbers
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.showGrid(x=False, y=True, alpha=0.2)
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.setMinimumHeight(90)
        self.curve = pg.PlotDataItem([0.0, 1.0], [0], stepMode="center", fillLevel=0)
        self.plot.addItem(self.curve)
        self.edges: np.ndarray | None = None
        self.counts: np.ndarray | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.title)
        lay.addWidget(self.plot, 1)
        lay.addStretch(0)
        self.plot.hide()  # no empty axes until there is a histogram to draw
        self.apply_palette()

    def apply_palette(self) -> None:
        pal = self.palette()
        bg, fg = pal.color(QPalette.ColorRole.Base), pal.color(QPalette.ColorRole.Text)
        self.plot.setBackground(bg)
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            axis.setPen(pg.mkPen(fg))
            axis.setTextPen(pg.mkPen(fg))
        color = current_theme().link
        fill = QColor(color)
        fill.setAlpha(90)
        self.curve.setPen(pg.mkPen(color, width=1.2))
        self.curve.setBrush(fill)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.apply_palette()

    def show_message(self, text: str) -> None:
        self.title.setText(text)
        self.edges = self.counts = None
        self.curve.setData([0.0, 1.0], [0])
        self.plot.hide()

    def set_histogram(self, name: str, edges: np.ndarray, counts: np.ndarray, of: str = "values",
                      excluded: int = 0) -> None:
        self.edges, self.counts = edges, counts
        total = int(counts.sum())
        extra = f"; {excluded:,} NaN/Inf left out" if excluded else ""
        self.title.setText(f"{name}: {total:,} {of} in {len(counts)} bins{extra}")
        self.plot.setLabel("bottom", "magnitude" if of == "magnitudes" else "value")
        self.curve.setData(edges, counts)
        self.plot.show()
        self.plot.enableAutoRange()
