"""The tables of one program's shapes (inspector/core/shapes.py ProgramShapes):
inputs (a column per dim), symbols, derived sizes, runtime assertions, guards and
dims that look specialized.

Every cell is plain text (item views never interpret markup; tooltips are escaped).
A symbol has the colour the listing gives it (theme.symbol_color); a dim that looks
specialized has the theme's `specialized_bg`. Clicking an assertion or a derived
size asks for its node (`nodeClicked`); the panel turns that into select_node.
"""

from __future__ import annotations


from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.shapes import ProgramShapes, symbol_tooltip
from inspector.ui.plain import plain_tip
from inspector.core.line_highlight import SYMBOL_NAME
from inspector.ui.widgets.theme import Theme, current_theme, symbol_color

NODE_ROLE = Qt.ItemDataRole.UserRole  # the node a row jumps to (assertions, derived)
SYMBOL_ROLE = Qt.ItemDataRole.UserRole + 1  # the one symbol a cell shows, if any
MAX_ROWS_SHOWN = 12  # a table taller than this scrolls inside itself

# the answer to "why is this dim static?" first, right under the inputs it marks
SECTIONS = ("inputs", "specialized", "symbols", "assertions", "derived", "guards")
TITLES = {
    "inputs": "Inputs", "symbols": "Symbols", "derived": "Derived sizes",
    "assertions": "Runtime assertions", "guards": "Guards",
    "specialized": "Looks specialized",
}
HEADERS = {
    "symbols": ["symbol", "min", "max", "example", "sources", "assertions"],
    "derived": ["size", "symbols", "sources", "example"],
    "assertions": ["condition", "node", "op", "source", "code"],
    "guards": ["guard"],
    "specialized": ["dim", "size", "why"],
}
UNBOUNDED_MIN, UNBOUNDED_MAX = "-inf", "inf"  # as Symbol.range_text prints them


def symbol_cell_text(symbol_min: int | None, symbol_max: int | None) -> tuple[str, str]:
    lo = UNBOUNDED_MIN if symbol_min is None else str(symbol_min)
    hi = UNBOUNDED_MAX if symbol_max is None else str(symbol_max)
    return lo, hi


class _FitTable(QTableWidget):
    """A table as tall as its rows (up to MAX_ROWS_SHOWN), plus its horizontal scroll
    bar only while one is needed: the panel stacks several, none should leave a gap."""

    def __init__(self) -> None:
        super().__init__(0, 0)
        self.horizontalScrollBar().rangeChanged.connect(lambda _lo, _hi: self.fit_height())

    def fit_height(self) -> None:
        shown = min(self.rowCount(), MAX_ROWS_SHOWN)
        height = (self.horizontalHeader().sizeHint().height()
                  + shown * self.verticalHeader().defaultSectionSize() + 2 * self.frameWidth())
        if self.horizontalScrollBar().maximum() > 0:
            height += self.horizontalScrollBar().sizeHint().height()
        if height != self.height():
            self.setFixedHeight(height)


class ShapesTables(QWidget):
    nodeClicked = Signal(str)  # node name of the clicked assertion / derived size

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme: Theme = current_theme()
        self.shapes: ProgramShapes | None = None
        self.titles: dict[str, QLabel] = {}
        self.tables: dict[str, QTableWidget] = {}
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        for key in SECTIONS:
            title = QLabel(TITLES[key])
            title.setObjectName(f"shapesTitle_{key}")
            title.setTextFormat(Qt.TextFormat.PlainText)
            font = title.font()
            font.setBold(True)
            title.setFont(font)
            table = _FitTable()
            table.setObjectName(f"shapesTable_{key}")
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
            table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
            table.setWordWrap(False)
            # sentences and names read from their start; a source path by its file name
            table.setTextElideMode(Qt.TextElideMode.ElideMiddle if key == "assertions"
                                   else Qt.TextElideMode.ElideRight)
            table.verticalHeader().hide()
            table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 6)
            table.horizontalHeader().setHighlightSections(False)
            table.horizontalHeader().setStretchLastSection(True)  # no blank strip on the right
            table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
            table.cellClicked.connect(lambda row, _col, t=table: self._clicked(t, row))
            table.cellActivated.connect(lambda row, _col, t=table: self._clicked(t, row))
            box.addSpacing(4)
            box.addWidget(title)
            box.addWidget(table)
            self.titles[key], self.tables[key] = title, table
        box.addStretch(1)
        self.show_shapes(None)

    # -- content --
    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.show_shapes(self.shapes)

    def show_shapes(self, shapes: ProgramShapes | None) -> None:
        self.shapes = shapes
        if shapes is None:
            for key in SECTIONS:
                self._fill(key, [], [])
            return
        specialized = {s.source: s for s in shapes.specialized}
        rank = max((len(i.shape or ()) for i in shapes.inputs), default=0)
        rows: list[list[QTableWidgetItem]] = []
        for inp in shapes.inputs:
            if inp.shape is None:
                kind = f"{inp.kind} = {inp.value}" if inp.value is not None else inp.kind
                rows.append([self._item(inp.name), self._item(kind)])
                continue
            row = [self._item(inp.name), self._item(inp.dtype or "")]
            for d, size in enumerate(inp.shape):
                cell = self._sized(size, shapes)
                spec = specialized.get(f"{inp.name}.shape[{d}]")
                if spec is not None:
                    cell.setBackground(QBrush(self.theme.specialized_bg))
                    cell.setToolTip(plain_tip(f"{spec.source} = {spec.size}: {spec.reason}"))
                row.append(cell)
            rows.append(row)
        self._fill("inputs", ["input", "dtype", *(f"dim {d}" for d in range(rank))], rows)

        rows = []
        for s in shapes.symbols.values():
            lo, hi = symbol_cell_text(s.min, s.max)
            where = ", ".join(s.sources) or (f"node {s.defined_by} (data-dependent)"
                                             if s.defined_by else "")
            name = self._symbol_item(s.name, shapes)
            rows.append([name, self._item(lo), self._item(hi),
                         self._item("" if s.example is None else str(s.example)),
                         self._item(where), self._item("; ".join(s.assertions))])
            if s.defined_by:
                for cell in rows[-1]:
                    cell.setData(NODE_ROLE, s.defined_by)
        self._fill("symbols", HEADERS["symbols"], rows)

        rows = []
        for d in shapes.derived:
            where = ", ".join(d.sources) or (f"first at {d.first_node}" if d.first_node else "")
            row = [self._sized(d.expr, shapes), self._item(", ".join(d.symbols)),
                   self._item(where), self._item("" if d.example is None else str(d.example))]
            if d.first_node:
                for cell in row:
                    cell.setData(NODE_ROLE, d.first_node)
            rows.append(row)
        self._fill("derived", HEADERS["derived"], rows)

        rows = []
        for a in shapes.assertions:
            src = a.source
            where = f"{src.file}:{src.line} in {src.function}" if src else ""
            row = [self._sized(a.condition, shapes), self._item(a.node), self._item(a.op),
                   self._item(where), self._item(src.code if src else "")]
            tip = plain_tip("\n".join(x for x in (a.condition, f"node {a.node} ({a.op})",
                                                       src.text() if src else "") if x))
            for cell in row:
                cell.setData(NODE_ROLE, a.node)
                cell.setToolTip(tip)
            rows.append(row)
        self._fill("assertions", HEADERS["assertions"], rows)

        rows = []
        for g in shapes.guards:
            cell = self._item(g.text)
            cell.setToolTip(plain_tip(f"as recorded: {g.code}"))
            rows.append([cell])
        self._fill("guards", HEADERS["guards"], rows)

        rows = []
        for s in shapes.specialized:
            row = [self._item(s.source), self._item(s.size), self._item(s.reason)]
            for cell in row:
                cell.setBackground(QBrush(self.theme.specialized_bg))
            row[2].setToolTip(plain_tip(s.reason))
            rows.append(row)
        self._fill("specialized", HEADERS["specialized"], rows)

    def _item(self, text: str) -> QTableWidgetItem:
        item = QTableWidgetItem(text)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
        item.setToolTip(plain_tip(text))  # the whole text of an elided cell
        return item

    def _symbol_item(self, name: str, shapes: ProgramShapes) -> QTableWidgetItem:
        """A key of range_constraints: a symbol (`s40`) or a derived size torch also
        ranges (`2*s40 + 1`), bold, with the listing's hover text."""
        item = self._sized(name, shapes)
        font = item.font()
        font.setBold(True)
        item.setFont(font)
        item.setToolTip(plain_tip(symbol_tooltip(shapes, name) or name))
        return item

    def _sized(self, text: str, shapes: ProgramShapes) -> QTableWidgetItem:
        """A size or condition: in its symbol's colour when it names exactly one
        (`s40`, `2*s40 + 1`); an expression of several keeps the text colour."""
        item = self._item(text)
        named = list(dict.fromkeys(SYMBOL_NAME.findall(text)))
        if len(named) == 1:
            item.setForeground(QBrush(symbol_color(named[0], self.theme)))
            item.setData(SYMBOL_ROLE, named[0])
            if text == named[0] and text in shapes.symbols:
                item.setToolTip(plain_tip(symbol_tooltip(shapes, text) or text))
        return item

    def _fill(self, key: str, headers: list[str], rows: list[list[QTableWidgetItem]]) -> None:
        table, title = self.tables[key], self.titles[key]
        table.clearContents()
        table.setColumnCount(len(headers))
        table.setHorizontalHeaderLabels(headers)
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, item in enumerate(row):
                table.setItem(r, c, item)
        title.setText(f"{TITLES[key]} ({len(rows)})" if rows else f"{TITLES[key]}: none")
        table.setVisible(bool(rows))
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # every column but the last (which stretches) fits its text, up to a cap: long
        # sources and code stay readable without pushing the rest out of the dock
        for c in range(table.columnCount() - 1):
            table.resizeColumnToContents(c)
            table.setColumnWidth(c, min(table.columnWidth(c), 300))
        if table.columnCount():  # the last one: at least its text, more when there is room
            header.setMinimumSectionSize(24)
            last = table.columnCount() - 1
            header.resizeSection(last, min(max(table.sizeHintForColumn(last),
                                               header.sectionSizeHint(last)), 600))
        table.fit_height()

    # -- reading back (tests, copy) --
    def rows(self, key: str) -> list[list[str]]:
        table = self.tables[key]
        return [[(table.item(r, c).text() if table.item(r, c) is not None else None)
                 for c in range(table.columnCount()) if table.item(r, c) is not None]
                for r in range(table.rowCount())]

    def color_of(self, key: str, row: int, column: int) -> QColor:
        return self.tables[key].item(row, column).foreground().color()

    # -- clicks --
    def _clicked(self, table: QTableWidget, row: int) -> None:
        item = table.item(row, 0)
        node = item.data(NODE_ROLE) if item is not None else None
        if isinstance(node, str) and node:
            self.nodeClicked.emit(node)


