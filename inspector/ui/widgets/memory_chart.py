"""The Memory panel's chart: live MiB along program order, the peak marked, the budget
and the weights+inputs baseline drawn, the listing's node as a vertical line.

The plot (pyqtgraph) is made the first time the chart is painted, or when something asks
for its items: the panel sits in a dock tabbed behind Source at launch, and
pyqtgraph's import alone is ~0.08 s of the window's start (issue 33). Until then the
chart keeps what it was told (the last plan, the budget, the cursor) and draws it
when the plot is made, so a chart built late shows exactly what an early one would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QVBoxLayout, QWidget

MIB = float(1 << 20)


@dataclass
class ChartItems:
    """The plot and its items (made together, on first need)."""

    plot: Any  # pyqtgraph PlotWidget
    curve: Any
    baseline_line: Any
    budget_line: Any
    cursor_line: Any
    peak_dot: Any
    peak_text: Any


@dataclass
class _Drawn:
    """What the chart shows, whether or not the plot exists yet."""

    live_mib: Any = None  # numpy array of live MiB per node, or None: empty
    baseline_mib: float = 0.0
    peak: tuple[int, float, str] | None = None  # (index, MiB, label)
    budget_mib: float | None = None
    cursor: int | None = None


class MemoryChart(QWidget):
    nodeClicked = Signal(int)  # the node index (program order) nearest a click

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("memoryChartHolder")
        # the bottom dock starts ~150 px high at 1024x700; under ~90 px the axis labels
        # overlap (0.2 .. 0.8 in 30 px), so the dock grows that much instead
        self.setMinimumHeight(90)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._items: ChartItems | None = None
        self._build_scheduled = False
        self._drawn = _Drawn()

    # -- what the panel tells it --
    def show_plan(self, live_mib: Any, baseline_mib: float,
                  peak: tuple[int, float, str] | None, budget_mib: float | None) -> None:
        self._drawn = _Drawn(live_mib, baseline_mib, peak, budget_mib, self._drawn.cursor)
        self._draw()

    def clear(self) -> None:
        self._drawn = _Drawn()
        self._draw()

    def mark(self, index: int | None) -> None:
        """The listing's node (a vertical line), or none."""
        self._drawn.cursor = index
        if self._items is not None:
            self._draw_cursor(self._items)

    # -- the plot, made on first need --
    @property
    def is_built(self) -> bool:
        return self._items is not None

    @property
    def items(self) -> ChartItems:
        if self._items is None:
            self._items = self._make_plot()
            self.apply_palette()
            self._draw()
        return self._items

    def paintEvent(self, event) -> None:  # noqa: N802
        # The first paint, not the first show: a dock tabbed behind another is shown
        # (moved off screen) at launch, but only the tab in front is painted. The plot
        # is made just after this paint (a widget made inside a paint is Qt's no-no).
        if self._items is None and not self._build_scheduled:
            self._build_scheduled = True
            QTimer.singleShot(0, lambda: self.items)
        super().paintEvent(event)

    def _make_plot(self) -> ChartItems:
        import pyqtgraph as pg

        chart = pg.PlotWidget()
        chart.setObjectName("memoryChart")
        plot = chart.getPlotItem()
        plot.setLabel("left", "live MiB")
        plot.setLabel("bottom", "node (program order)")
        plot.showGrid(x=True, y=True, alpha=0.2)
        plot.setMouseEnabled(x=True, y=False)
        curve = plot.plot([], [], pen=pg.mkPen("#1f77b4", width=1.5),
                          fillLevel=0, brush=pg.mkBrush(31, 119, 180, 60))
        curve.setDownsampling(auto=True, method="peak")
        curve.setClipToView(True)
        items = ChartItems(
            plot=chart, curve=curve,
            baseline_line=pg.InfiniteLine(
                angle=0, pen=pg.mkPen("#7f7f7f", style=Qt.PenStyle.DotLine),
                label="weights + inputs", labelOpts={"position": 0.1}),
            budget_line=pg.InfiniteLine(
                angle=0, pen=pg.mkPen("#d62728", width=1.5, style=Qt.PenStyle.DashLine),
                label="budget", labelOpts={"position": 0.95, "color": "#d62728"}),
            cursor_line=pg.InfiniteLine(angle=90, pen=pg.mkPen("#2ca02c", width=1)),
            peak_dot=pg.ScatterPlotItem(size=10, brush=pg.mkBrush("#d62728"), pen=None),
            peak_text=pg.TextItem(anchor=(0.5, 1.2), color="#d62728"))
        for item in (items.baseline_line, items.budget_line, items.cursor_line, items.peak_dot,
                     items.peak_text):
            plot.addItem(item)
        items.budget_line.hide()
        items.cursor_line.hide()
        chart.scene().sigMouseClicked.connect(self._clicked)
        self._layout.addWidget(chart)
        return items

    def _draw(self) -> None:
        items = self._items
        if items is None:
            return
        import numpy as np

        drawn = self._drawn
        y = drawn.live_mib
        n = 0 if y is None else len(y)
        if n:
            items.curve.setData(np.arange(n, dtype=np.float64), y)
        else:
            items.curve.setData([], [])
        items.baseline_line.setValue(drawn.baseline_mib)
        if drawn.peak is not None:
            i, mib, label = drawn.peak
            items.peak_dot.setData([float(i)], [float(mib)])
            items.peak_text.setText(label)
            items.peak_text.setPos(float(i), float(mib))
        else:
            items.peak_dot.setData([], [])
            items.peak_text.setText("")
        if drawn.budget_mib is not None:
            items.budget_line.setValue(drawn.budget_mib)
            items.budget_line.show()
        else:
            items.budget_line.hide()
        if y is not None:
            top = max(float(y.max()) if n else 0.0, drawn.budget_mib or 0.0)
            plot = items.plot.getPlotItem()
            plot.setYRange(0, top * 1.1 if top > 0 else 1, padding=0)
            plot.setXRange(0, max(n - 1, 1), padding=0.01)
        self._draw_cursor(items)

    def _draw_cursor(self, items: ChartItems) -> None:
        if self._drawn.cursor is None or self._drawn.live_mib is None:
            items.cursor_line.hide()
            return
        items.cursor_line.setValue(self._drawn.cursor)
        items.cursor_line.show()

    def _clicked(self, event: Any) -> None:
        if self._drawn.live_mib is None or self._items is None:
            return
        plot = self._items.plot.getPlotItem()
        if not plot.sceneBoundingRect().contains(event.scenePos()):
            return
        i = int(round(plot.vb.mapSceneToView(event.scenePos()).x()))
        if 0 <= i < len(self._drawn.live_mib):
            self.nodeClicked.emit(i)

    def apply_palette(self) -> None:
        """Follow the application's light/dark palette (pyqtgraph defaults to black)."""
        if self._items is None:
            return
        import pyqtgraph as pg

        pal = self.palette()
        chart = self._items.plot
        chart.setBackground(pal.color(QPalette.ColorRole.Base))
        fg = pal.color(QPalette.ColorRole.Text)
        for name in ("left", "bottom"):
            axis = chart.getAxis(name)
            axis.setPen(pg.mkPen(fg))
            axis.setTextPen(pg.mkPen(fg))
        self._items.baseline_line.label.setColor(fg)

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.apply_palette()
