"""Per-token latency chart and histogram, several runs overlaid.

Samples arrive one per generated token, hundreds per second on a GPU. They are
appended to a preallocated numpy buffer (amortised O(1), no Python list of floats
to convert), and a QTimer redraws at ~30 Hz only when something changed: never one
redraw per sample (pyqtgraph's scrollingPlots example: `setData` over a buffer,
`setDownsampling(mode='peak')`, `setClipToView(True)`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from inspector.core.latency_series import LatencySeries

REDRAW_MS = 33  # ~30 Hz
HIST_EVERY = 15  # the histogram moves its axes on each update: every 15th frame (~2 Hz)
HIST_BINS = 40
EMPTY_TOKENS = 64  # x axis of an empty chart (the default max tokens)
EMPTY_TOP = 10  # y axes of an empty chart: whole numbers, from zero
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")


@dataclass
class _Drawn:
    """What the chart draws of one series, and how many of its samples it drew."""

    curve: Any
    hist: Any
    drawn: int = -1  # samples shown by the last redraw
    hist_drawn: int = -1


class LatencyChart(QWidget):
    """Latency per token and its histogram (below it, or beside it when horizontal)."""

    redrawn = Signal()  # after each timer redraw that changed something (tests, benchmarks)

    def __init__(self, parent: QWidget | None = None,
                 orientation: Qt.Orientation = Qt.Orientation.Vertical) -> None:
        super().__init__(parent)
        self.series: list[LatencySeries] = []
        self._drawn: dict[int, _Drawn] = {}  # id(series) -> its plot items
        self.frames = 0  # redraws done (the benchmark reads it)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("latencyPlot")
        # Plain "ms" labels: pyqtgraph's SI prefixes would print "kms" for seconds.
        self.plot.setLabel("left", "latency (ms)")
        self.plot.setLabel("bottom", "token (all timed repeats)")
        # Horizontal grid lines only: a full grid is redrawn whenever a range moves and
        # doubled the window's CPU while a run streamed (measured in bench_ui_jobs).
        self.plot.showGrid(x=False, y=True, alpha=0.2)
        self.plot.setClipToView(True)
        self.plot.setDownsampling(auto=True, mode="peak")
        self.plot.addLegend(offset=(-10, 10))
        self.plot.setMouseEnabled(x=True, y=False)
        # Ranges move in steps we choose, not on every sample: an axis whose range
        # changes re-lays out its ticks and text, the costliest part of a frame.
        self.plot.enableAutoRange(x=False, y=False)
        self._x_top = 0.0
        self._y_top = 0.0
        self.hist_plot = pg.PlotWidget()
        self.hist_plot.setObjectName("latencyHistogram")
        self.hist_plot.setLabel("bottom", "latency (ms)")
        self.hist_plot.setLabel("left", "tokens")
        self.hist_plot.showGrid(x=False, y=True, alpha=0.2)
        self.hist_plot.setMouseEnabled(x=False, y=False)
        self.hist_plot.enableAutoRange(x=False, y=False)
        for w in (self.plot, self.hist_plot):
            for name in ("left", "bottom"):
                # "tokens (x0.001)" on an empty chart: the labels say the unit already
                w.getAxis(name).enableAutoSIPrefix(False)
        split = QSplitter(orientation)
        split.addWidget(self.plot)
        split.addWidget(self.hist_plot)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)
        self.apply_palette()
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self.redraw)
        # Said on the empty chart, at a fixed spot of the view (not data coordinates).
        self._placeholder = pg.LabelItem("No runs yet: choose the options and press Run",
                                         color=self.palette().color(QPalette.ColorRole.PlaceholderText))
        self._placeholder.setParentItem(self.plot.plotItem.vb)
        self._placeholder.anchor(itemPos=(0.5, 0.5), parentPos=(0.5, 0.5))
        self._empty_ranges()

    def _empty_ranges(self) -> None:
        """No data: axes from zero with round tops, never negative or tiny ranges."""
        self.plot.setXRange(0, EMPTY_TOKENS, padding=0)
        self.plot.setYRange(0, EMPTY_TOP, padding=0)
        self.hist_plot.setXRange(0, EMPTY_TOP, padding=0)
        self.hist_plot.setYRange(0, EMPTY_TOP, padding=0)
        self._placeholder.setVisible(True)

    def apply_palette(self) -> None:
        """Follow the application's light/dark palette (pyqtgraph defaults to black)."""
        pal = self.palette()
        bg = pal.color(QPalette.ColorRole.Base)
        fg = pal.color(QPalette.ColorRole.Text)
        for w in (self.plot, self.hist_plot):
            w.setBackground(bg)
            for name in ("left", "bottom"):
                axis = w.getAxis(name)
                axis.setPen(pg.mkPen(fg))
                axis.setTextPen(pg.mkPen(fg))
        legend = self.plot.plotItem.legend
        if legend is not None:
            legend.setLabelTextColor(fg)
            fill = pg.mkColor(bg)
            fill.setAlpha(200)
            legend.setBrush(fill)

    def changeEvent(self, event) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.apply_palette()

    # -- data --
    def add_series(self, label: str, expected: int = 0) -> LatencySeries:
        color = PALETTE[len(self.series) % len(PALETTE)]
        s = LatencySeries(label, color, expected=expected)
        s.reserve(expected)
        self.series.append(s)
        self._placeholder.setVisible(False)
        self._fit_x()
        pen = pg.mkPen(color, width=1.6)
        curve = self.plot.plot([], [], pen=pen, name=label)
        curve.setDownsampling(auto=True, method="peak")
        curve.setClipToView(True)
        fill = pg.mkColor(color)
        fill.setAlpha(70)
        hist = pg.PlotDataItem([0, 0], [0], stepMode="center", fillLevel=0,
                               brush=fill, pen=pg.mkPen(color, width=1.2))
        self.hist_plot.addItem(hist)
        self._drawn[id(s)] = _Drawn(curve, hist)
        if not self.timer.isActive():
            self.timer.start()
        return s

    def curve(self, s: LatencySeries):
        """The latency plot's curve of series `s` (a pyqtgraph PlotDataItem)."""
        return self._drawn[id(s)].curve

    def histogram(self, s: LatencySeries):
        return self._drawn[id(s)].hist

    def remove_series(self, s: LatencySeries) -> None:
        if any(x is s for x in self.series):
            drawn = self._drawn.pop(id(s))
            self.plot.removeItem(drawn.curve)
            self.hist_plot.removeItem(drawn.hist)
            self.series = [x for x in self.series if x is not s]
            if not self.series:
                self._x_top = self._y_top = 0.0
                self._empty_ranges()
                return
            self._fit_x()
            self._fit_y(shrink=True)

    def clear(self) -> None:
        for s in list(self.series):
            self.remove_series(s)
        self._x_top = self._y_top = 0.0
        self.plot.plotItem.legend.clear()
        self._empty_ranges()

    def stop(self) -> None:
        """Final redraw, then no more timer ticks until a series is added. The runs
        have ended: the x axis fits the samples there are, not the ones a stopped run
        was going to send (the next run is not squeezed into a corner)."""
        for s in self.series:
            s.expected = 0
        self.redraw(force_hist=True)
        self._fit_x()
        self.timer.stop()

    # -- drawing --
    def redraw(self, force_hist: bool = False) -> None:
        changed = False
        for s in self.series:
            drawn = self._drawn[id(s)]
            if drawn.drawn != s.n:
                drawn.curve.setData(np.arange(s.n, dtype=np.float64), s.values())
                drawn.drawn = s.n
                changed = True
        self.frames += 1
        if changed:
            self._fit_ranges()
        if changed and (force_hist or self.frames % HIST_EVERY == 0):
            self._redraw_histograms()
        elif force_hist:
            self._redraw_histograms()
        if changed:
            self.redrawn.emit()

    def _fit_ranges(self) -> None:
        n = max((s.n for s in self.series), default=0)
        if n > self._x_top:
            self._x_top = float(nice_ceiling(n * 1.25))
            self.plot.setXRange(0, self._x_top, padding=0)
        self._fit_y()

    def _fit_x(self) -> None:
        """The x axis from the samples drawn and those running runs announced."""
        want = max((max(s.n, s.expected) for s in self.series), default=0)
        if want <= 0:
            self._x_top = 0.0
            self.plot.setXRange(0, EMPTY_TOKENS, padding=0)
            return
        top = float(nice_ceiling(want))
        if top != self._x_top:
            self._x_top = top
            self.plot.setXRange(0, top, padding=0)

    def _fit_y(self, shrink: bool = False) -> None:
        peak = max((s.peak for s in self.series), default=0.0)
        if peak <= 0:
            if shrink:
                self._y_top = 0.0
                self.plot.setYRange(0, EMPTY_TOP, padding=0)
            return
        if peak > self._y_top or peak < self._y_top / 8 or shrink:
            top = nice_ceiling(peak * 1.1)
            if top != self._y_top:
                self._y_top = top
                self.plot.setYRange(0, top, padding=0)

    def _redraw_histograms(self) -> None:
        filled = [s for s in self.series if s.n]
        if not filled:
            self.hist_plot.setXRange(0, EMPTY_TOP, padding=0)
            self.hist_plot.setYRange(0, EMPTY_TOP, padding=0)
            return
        lo = min(float(s.values().min()) for s in filled)
        hi = max(float(s.values().max()) for s in filled)
        if hi <= lo:  # one value: a bar of some width around it
            lo, hi = max(0.0, lo - max(lo * 0.05, 1e-3)), hi + max(hi * 0.05, 1e-3)
        edges = np.linspace(lo, hi, HIST_BINS + 1)
        # Shared bins, so overlaid runs compare bar for bar.
        tallest = 0
        for s in filled:
            counts, _ = np.histogram(s.values(), bins=edges)
            drawn = self._drawn[id(s)]
            drawn.hist.setData(edges, counts)
            drawn.hist_drawn = s.n
            tallest = max(tallest, int(counts.max()))
        # Set, not auto-ranged: counts start at 0 and the bins span the data.
        pad = (hi - lo) * 0.03
        self.hist_plot.setXRange(max(0.0, lo - pad), hi + pad, padding=0)
        self.hist_plot.setYRange(0, nice_ceiling(tallest * 1.1), padding=0)

    def png_bytes(self, width: int = 1600) -> bytes:
        """The latency chart as PNG bytes (for a writer that checks its output path)."""
        from pyqtgraph.exporters import ImageExporter
        from PySide6.QtCore import QBuffer, QByteArray, QIODevice

        self.redraw(force_hist=True)
        exporter = ImageExporter(self.plot.plotItem)
        exporter.parameters()["width"] = width
        image = exporter.export(toBytes=True)
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        if not image.save(buffer, "PNG"):
            raise OSError("the chart could not be encoded as PNG")
        buffer.close()
        return bytes(data.data())


def nice_ceiling(x: float) -> float:
    """The next 1, 2, 2.5 or 5 times a power of ten at or above x (axis tops)."""
    if x <= 0:
        return 1.0
    exp = math.floor(math.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        top = m * 10.0 ** exp
        if top >= x:
            return top
    return 10.0 ** (exp + 1)
