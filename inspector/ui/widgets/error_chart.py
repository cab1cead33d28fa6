"""Error along program order: one point per compared node, log scale, the tolerance drawn.

y is the node's error against its tolerance (core/numerics_layers.py: 1.0 is the
line above which a node fails); failing nodes are drawn in the error colour, a NaN in
its own. A click on a point emits `nodeClicked(name)`; `mark(name)` draws a vertical
line at the selected node (the panel follows the window's selection with it).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from inspector.core.numerics_layers import NodePoint

PASS_COLOR, FAIL_COLOR, NAN_COLOR = "#1f77b4", "#d62728", "#9467bd"


class ErrorChart(QWidget):
    nodeClicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("numericsChart")
        # the values are drawn as log10 and the axis labels them as powers of ten
        # (one transform for the line, the points and the tolerance)
        self.plot.getAxis("left").setLogMode(True)
        self.plot.showGrid(x=False, y=True, alpha=0.25)
        self.plot.setLabel("left", "error / tolerance")
        self.plot.setLabel("bottom", "node (program order)")
        self.plot.setMenuEnabled(False)
        self.tolerance = pg.InfiniteLine(pos=0.0, angle=0, movable=False,
                                         pen=pg.mkPen(FAIL_COLOR, width=1,
                                                      style=pg.QtCore.Qt.PenStyle.DashLine),
                                         label="tolerance", labelOpts={"position": 0.03})
        self.plot.addItem(self.tolerance)  # at log10(1) = 0
        self.curve = pg.PlotDataItem(pen=pg.mkPen("#888888", width=1))
        self.plot.addItem(self.curve)
        self.scatter = pg.ScatterPlotItem(size=6, pxMode=True, hoverable=True)
        self.scatter.sigClicked.connect(self._clicked)
        self.plot.addItem(self.scatter)
        self.cursor = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#ff9900", width=1))
        self.cursor.hide()
        self.plot.addItem(self.cursor)
        self.points: list[NodePoint] = []
        self._index: dict[str, int] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)

    def set_points(self, points: list[NodePoint]) -> None:
        self.points = points
        self._index = {p.name: p.index for p in points}
        if not points:
            self.curve.setData([], [])
            self.scatter.setData([])
            self.cursor.hide()
            return
        x = np.array([p.index for p in points], dtype=float)
        y = np.array([p.y for p in points], dtype=float)
        self.curve.setData(x, np.log10(y))
        brushes = [pg.mkBrush(NAN_COLOR if p.nan else PASS_COLOR if p.passes else FAIL_COLOR)
                   for p in points]
        # each point's data is its node's name
        self.scatter.setData(x=x, y=np.log10(y), brush=brushes, pen=None,
                             data=[p.name for p in points], tip=None)
        self.scatter.setToolTip("")
        self.plot.enableAutoRange()

    def mark(self, name: str | None) -> bool:
        index = self._index.get(name or "")
        if index is None:
            self.cursor.hide()
            return False
        self.cursor.setPos(index)
        self.cursor.show()
        point = self.points[index]
        self.plot.setToolTip(point.text)
        return True

    def _clicked(self, _item: object, spots: list) -> None:
        if spots:
            self.nodeClicked.emit(str(spots[0].data()))
