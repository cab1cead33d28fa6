"""Side tables: the signature (graph inputs/outputs and their kind), archive records
with their risk flag, and range constraints. (Weights and constants have their own
panel, inspector/ui/panels/weights.py.)"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QTabWidget, QWidget

from inspector.core.document import ArchiveDoc, ProgramView


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


class _Num(QTableWidgetItem):
    """Sorts by the number, shows the text."""

    def __init__(self, text: str, value: float) -> None:
        super().__init__(text)
        self.value = value
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:  # type: ignore[override]
        if isinstance(other, _Num):
            return self.value < other.value
        return super().__lt__(other)


def _table(headers: list[str], name: str) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setObjectName(name)
    t.setHorizontalHeaderLabels(headers)
    t.verticalHeader().setVisible(False)
    t.verticalHeader().setDefaultSectionSize(22)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setAlternatingRowColors(True)
    t.setWordWrap(False)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    t.horizontalHeader().setStretchLastSection(True)
    return t


def _fill(t: QTableWidget, rows: list[list]) -> None:
    t.setSortingEnabled(False)
    t.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            item = cell if isinstance(cell, QTableWidgetItem) else QTableWidgetItem(str(cell))
            t.setItem(r, c, item)
    t.setSortingEnabled(True)
    t.resizeColumnsToContents()
    for c in range(t.columnCount()):
        t.setColumnWidth(c, min(t.columnWidth(c), 420))


class SideTables(QTabWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setDocumentMode(True)
        self.signature = _table(["Direction", "Kind", "Name", "Target", "Type"], "signatureTable")
        self.records = _table(["Path", "Kind", "Size", "Compressed", "Risk", "Why"], "recordsTable")
        self.ranges = _table(["Symbol", "Min", "Max"], "rangesTable")
        self.addTab(self.signature, "Signature")
        self.addTab(self.records, "Records")
        self.addTab(self.ranges, "Ranges")

    def set_program(self, doc: ArchiveDoc | None, view: ProgramView | None) -> None:
        if doc is None or view is None:
            for t in (self.signature, self.records, self.ranges):
                t.setRowCount(0)
            return
        p = view.program
        g = p.graph
        sig = []
        for s in p.input_specs:
            sig.append(["input", s.kind, s.name, s.target or "", _annotation(g, s.name)])
        for s in p.output_specs:
            sig.append(["output", s.kind, s.name, s.target or "", _annotation(g, s.name)])
        _fill(self.signature, sig)
        rec_rows = []
        for rec in doc.archive.records:
            risk = QTableWidgetItem("⚠ executes code" if rec.risk else "")
            if rec.risk:
                risk.setForeground(QColor("#cf222e"))
            rec_rows.append([rec.path, rec.kind, _Num(human_bytes(rec.size), rec.size),
                             _Num(human_bytes(rec.compressed_size), rec.compressed_size), risk, rec.why])
        _fill(self.records, rec_rows)
        risky = sum(r.risk for r in doc.archive.records)
        self.setTabText(1, f"Records ({len(rec_rows)}{', ' + str(risky) + ' risky' if risky else ''})")
        rng = [[sym, _Num(_bound(r.min, "-inf"), r.min if r.min is not None else float("-inf")),
                _Num(_bound(r.max, "inf"), r.max if r.max is not None else float("inf"))]
               for sym, r in p.range_constraints.items()]
        _fill(self.ranges, rng)
        self.setTabText(2, f"Ranges ({len(rng)})")


def _bound(v: int | None, inf: str) -> str:
    return inf if v is None else f"{v:,}"


def _annotation(g, name: str) -> str:
    m = g.tensor_values.get(name)
    if m is not None:
        return f"{m.dtype_name} {m.shape_text()} {m.device}"
    for table in (g.sym_int_values, g.sym_float_values, g.sym_bool_values):
        if name in table:
            return f"Sym({table[name]})"
    return ""
