"""Two listings side by side, row by row (inspector.core.diff_align.Alignment).

Virtualized like ListingView (both are line_painter.RowsArea): the vertical
scroll value is the first visible row and a paint draws only the ~60 visible
rows, so two 100,000-node programs
(400,000 rows) cost what one screen costs. One widget paints both halves, so
they scroll together by construction (one vertical and one horizontal bar).

Per row, back to front: the status colour (changed on both sides, removed on
A's, added on B's; the other side of an added/removed row is hatched filler),
the current row, an outline around the current change, the text (plain text,
highlighted by highlight.LineCache). Each half has a gutter with its line
number and a status sign (- + ~). The strip between the halves is an overview
of the whole comparison: a tick per change, the visible part framed; clicking
it scrolls there.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QTextLayout,
)
from PySide6.QtWidgets import QWidget

from inspector.core.node_match import ADDED, CHANGED, REMOVED, SAME
from inspector.core.inline_diff import Spans, inline_changes
from inspector.core.line_highlight import LineCache
from inspector.ui.widgets.line_painter import LAYOUT_CACHE, RowsArea, run_slice, set_scroll_ranges
from inspector.ui.widgets.theme import Theme, current_theme

_MAP_WIDTH = 14  # the overview strip between the halves


SIGNS = {SAME: "", CHANGED: "~", ADDED: "+", REMOVED: "-"}


@dataclass(frozen=True)
class DiffColors:
    """Row backgrounds and gutter signs of the compare view, per theme."""

    changed: QColor
    changed_text: QColor  # the characters that differ inside a changed row
    added: QColor
    removed: QColor
    filler: QColor
    hatch: QColor
    sign: dict[str, QColor]
    outline: QColor


_LIGHT = DiffColors(
    changed=QColor("#fff1c2"), changed_text=QColor("#f7d47a"), added=QColor("#dafbe1"), removed=QColor("#ffe1de"),
    filler=QColor("#f3f4f6"), hatch=QColor("#dde1e6"),
    sign={CHANGED: QColor("#9a6700"), ADDED: QColor("#1a7f37"), REMOVED: QColor("#cf222e")},
    outline=QColor("#0969da"),
)
_DARK = DiffColors(
    changed=QColor("#3d3416"), changed_text=QColor("#6e5a17"), added=QColor("#1d3a27"), removed=QColor("#45222a"),
    filler=QColor("#25272b"), hatch=QColor("#30333a"),
    sign={CHANGED: QColor("#d29922"), ADDED: QColor("#3fb950"), REMOVED: QColor("#f85149")},
    outline=QColor("#6cb6ff"),
)


def diff_colors(theme: Theme) -> DiffColors:
    return _DARK if theme.dark else _LIGHT


class DiffView(RowsArea):
    """Rows of an Alignment over the lines of A and B. Signals carry rows."""

    currentRowChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("diffView")
        self._a: list[int] = []
        self._b: list[int] = []
        self._status: list[str] = []
        self._changes: list[int] = []
        self._lines: tuple[list[str], list[str]] = ([], [])
        self._caches = (LineCache([]), LineCache([]))
        self._max_len = 0
        self._change_span: tuple[int, int] | None = None  # rows [start, end) outlined
        self._inline: dict[int, tuple[Spans, Spans]] = {}  # row -> differing columns
        self.theme: Theme = current_theme()
        self.colors = diff_colors(self.theme)
        self._update_metrics()

    # -- content --
    def set_rows(self, alignment, lines_a: list[str], lines_b: list[str]) -> None:
        """Show `alignment` (diff_align.Alignment) over the two listings' lines."""
        self._a, self._b = alignment.a, alignment.b
        self._status, self._changes = alignment.status, alignment.changes
        self._lines = (lines_a, lines_b)
        self._caches = (LineCache(lines_a), LineCache(lines_b))
        self._shaped.clear()
        self._inline = {}
        self._max_len = max(max(map(len, lines_a), default=0), max(map(len, lines_b), default=0))
        self._current = -1
        self._change_span = None
        self._update_metrics()
        self.verticalScrollBar().setValue(0)
        self.horizontalScrollBar().setValue(0)
        self._update_scrollbars()
        self.viewport().update()

    def clear(self) -> None:
        from inspector.core.diff_align import Alignment

        self.set_rows(Alignment(), [], [])

    def row_count(self) -> int:
        return len(self._status)

    def row_status(self, row: int) -> str:
        return self._status[row]

    def row_lines(self, row: int) -> tuple[int, int]:
        """(line of A, line of B) on `row`, -1 where that side is filler."""
        return self._a[row], self._b[row]

    def row_texts(self, row: int) -> tuple[str | None, str | None]:
        a, b = self._a[row], self._b[row]
        return (self._lines[0][a] if a >= 0 else None, self._lines[1][b] if b >= 0 else None)

    def inline_spans(self, row: int) -> tuple[Spans, Spans]:
        """The differing columns of a changed row on A's and B's side (empty
        for other rows); computed for the rows painted, then kept."""
        got = self._inline.get(row)
        if got is None:
            ta, tb = self.row_texts(row)
            got = (inline_changes(ta, tb) if self._status[row] == CHANGED
                   and ta is not None and tb is not None else ([], []))
            if len(self._inline) > LAYOUT_CACHE:
                self._inline.clear()
            self._inline[row] = got
        return got

    def row_background(self, row: int, side: int) -> QColor:
        """The colour row `row` has on side 0 (A) or 1 (B) before the current
        row's tint: the status colour, the filler, or the plain background."""
        status = self._status[row]
        c = self.colors
        if status == CHANGED:
            return c.changed
        if status == REMOVED:
            return c.removed if side == 0 else c.filler
        if status == ADDED:
            return c.added if side == 1 else c.filler
        return self.theme.background

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.colors = diff_colors(theme)
        self._shaped.clear()
        self.viewport().update()

    # -- cursor --
    def current_row(self) -> int:
        return self._current

    def set_current_row(self, row: int, center: bool = False, emit: bool = True) -> None:
        if self._make_current(row, center) and emit:
            self.currentRowChanged.emit(self._current)

    def set_change_span(self, span: tuple[int, int] | None) -> None:
        """Outline rows [start, end) (the change F7 went to); None: no outline."""
        self._change_span = span
        self.viewport().update()

    def change_span(self) -> tuple[int, int] | None:
        return self._change_span

    def show_change(self, start: int, end: int) -> None:
        """Make rows [start, end) the current change: outlined, its first row
        current, and as much of it on screen as fits (a third down from the top)."""
        self._change_span = (start, end)
        rows = self._visible_rows()
        bar = self.verticalScrollBar()
        first = bar.value()
        # keep rows of context after the change too: it goes a third down
        # unless it already shows in the upper two thirds
        if not (first <= start and end <= first + max(1, rows * 2 // 3)):
            bar.setValue(max(0, start - max(2, min(rows // 3, rows - (end - start) - 1))))
        self.set_current_row(start, emit=False)
        self.reveal_columns(start, end)
        self.currentRowChanged.emit(start)

    def reveal_columns(self, start: int, end: int) -> None:
        """Scroll horizontally so the first differing characters of the first
        changed row in [start, end) show (a device literal far right)."""
        col = None
        for row in range(start, min(end, start + 200)):
            spans = self.inline_spans(row)
            firsts = [sp[0][0] for sp in spans if sp]
            if firsts:
                col = min(firsts)
                break
        bar = self.horizontalScrollBar()
        width = self.half_width() - self._gutter - 8
        if col is None or (col + 8) * self._cw < width:
            bar.setValue(0)
        else:
            bar.setValue(int(max(0.0, col * self._cw - width / 3)))

    def _rows(self) -> int:
        return len(self._status)

    def _go_to(self, row: int) -> None:
        self.set_current_row(row)

    # -- geometry --
    def _update_metrics(self) -> None:
        self._measure()
        longest = max(len(self._lines[0]), len(self._lines[1]), 1)
        digits = max(3, len(str(longest)))
        self._gutter = int((digits + 2) * self._cw + 10)  # number, space, sign

    def gutter_width(self) -> int:
        """Pixels of each half's gutter (line number and sign)."""
        return self._gutter

    def half_width(self) -> float:
        return max(0.0, (self.viewport().width() - _MAP_WIDTH) / 2)

    def half_x(self, side: int) -> float:
        """Left edge of side 0 (A) or 1 (B) in viewport pixels."""
        return 0.0 if side == 0 else self.half_width() + _MAP_WIDTH

    def map_rect(self) -> QRectF:
        return QRectF(self.half_width(), 0, _MAP_WIDTH, self.viewport().height())

    def _update_scrollbars(self) -> None:
        set_scroll_ranges(self, len(self._status), self._visible_rows(), self._max_len, self._cw,
                          self.half_width() - self._gutter - 8)

    def row_at(self, y: float) -> int:
        return self.first_visible_row() + int(y / self._lh)

    def point_at(self, row: int, side: int, column: int = 0) -> QPointF:
        """The viewport point in the middle of character `column` of `row`'s
        text on `side` (for tests and tooltips)."""
        x = (self.half_x(side) + self._gutter + 4 - self.horizontalScrollBar().value()
             + (column + 0.5) * self._cw)
        return QPointF(x, (row - self.first_visible_row() + 0.5) * self._lh)

    # -- painting --
    def _layout(self, side: int, line: int) -> QTextLayout:
        return self._shaped.get((side, line), self._lines[side][line],
                                lambda: self._caches[side].spans(line), self.font(), self.theme)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        theme, colors = self.theme, self.colors
        p = QPainter(self.viewport())
        p.setFont(self.font())
        rect = self.viewport().rect()
        p.fillRect(rect, theme.background)
        lh = self._lh
        half = self.half_width()
        xoff = self.horizontalScrollBar().value()
        hatch = QPen(colors.hatch)
        hatch.setWidthF(1.0)
        current = QColor(theme.current_line)
        current.setAlphaF(0.55)
        for side, sides_lines in ((0, self._a), (1, self._b)):
            x0 = self.half_x(side)
            p.setClipRect(QRectF(x0, 0, half, rect.height()))
            text_x = x0 + self._gutter + 4 - xoff
            for row_i, row in enumerate(self.visible_range()):
                y = row_i * lh
                band = QRectF(x0, y, half, lh)
                line = sides_lines[row]
                bg = self.row_background(row, side)
                if bg != theme.background:
                    p.fillRect(band, bg)
                if line < 0:  # filler: diagonal hatching, as diff tools draw it
                    p.setPen(hatch)
                    step = 8
                    start = int(x0) - int(lh) - (int(x0) % step)
                    for x in range(start, int(x0 + half) + step, step):
                        p.drawLine(QPointF(x, y + lh), QPointF(x + lh, y))
                    continue
                if row == self._current:
                    p.fillRect(band, current)
                if self._status[row] == CHANGED:
                    for a, b in self.inline_spans(row)[side]:
                        p.fillRect(QRectF(text_x + a * self._cw, y + 1, (b - a) * self._cw,
                                          lh - 2), colors.changed_text)
                p.save()
                p.setClipRect(QRectF(x0 + self._gutter, y, half - self._gutter, lh))
                p.setPen(theme.text)
                self._layout(side, line).draw(p, QPointF(text_x, y))
                p.restore()
            self._paint_gutter(p, side, x0, rect.height())
        p.setClipping(False)
        self._paint_outline(p, rect.width())
        self._paint_map(p, rect.height())
        p.end()
        self._prefetch.start()

    def _prefetch_some(self) -> None:
        rows = self._visible_rows()
        first = self.first_visible_row()
        n = len(self._status)
        wanted = [*range(first + rows, min(n, first + 3 * rows)), *range(max(0, first - rows), first)]

        def steps():
            for row in wanted:
                for side, lines in ((0, self._a), (1, self._b)):
                    line = lines[row]
                    if line >= 0 and (side, line) not in self._shaped:
                        self._layout(side, line)
                self.inline_spans(row)
                yield row

        if not run_slice(steps()):
            self._prefetch.start()

    def _paint_gutter(self, p: QPainter, side: int, x0: float, height: int) -> None:
        theme, colors = self.theme, self.colors
        g, lh = self._gutter, self._lh
        p.fillRect(QRectF(x0, 0, g, height), theme.gutter_bg)
        p.setPen(theme.gutter_text)
        p.drawLine(QPointF(x0 + g - 1, 0), QPointF(x0 + g - 1, height))
        lines = self._a if side == 0 else self._b
        sign_w = 1.5 * self._cw
        for row_i, row in enumerate(self.visible_range()):
            y = row_i * lh
            line = lines[row]
            status = self._status[row]
            if status != SAME and line >= 0:
                tint = QColor(self.row_background(row, side))
                p.fillRect(QRectF(x0, y, g - 1, lh), tint.darker(104 if not theme.dark else 90))
            if line < 0:
                continue
            p.setPen(theme.text if row == self._current else theme.gutter_text)
            p.drawText(QRectF(x0, y, g - sign_w - 6, lh),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, str(line + 1))
            sign = SIGNS[status]
            if sign:
                p.setPen(colors.sign[status])
                p.drawText(QRectF(x0 + g - sign_w - 4, y, sign_w, lh),
                           Qt.AlignmentFlag.AlignCenter, sign)

    def _paint_outline(self, p: QPainter, width: int) -> None:
        span = self._change_span
        if span is None:
            return
        first = self.first_visible_row()
        top = (span[0] - first) * self._lh
        bottom = (span[1] - first) * self._lh
        if bottom < 0 or top > self.viewport().height():
            return
        pen = QPen(self.colors.outline)
        pen.setWidthF(1.5)
        p.setPen(pen)
        p.setBrush(Qt.BrushStyle.NoBrush)
        half = self.half_width()
        for side in (0, 1):
            x0 = self.half_x(side)
            p.drawRect(QRectF(x0 + 1, top + 0.75, half - 2, bottom - top - 1.5))

    def _paint_map(self, p: QPainter, height: int) -> None:
        """The overview strip: where the changes are in the whole comparison."""
        r = self.map_rect()
        p.fillRect(r, self.theme.gutter_bg)
        n = len(self._status)
        if not n:
            return
        scale = height / n
        # one tick per pixel row at most: ~700 ticks, whatever the row count
        last_y = -1
        for start in self._changes:
            y = int(start * scale)
            if y == last_y:
                continue
            last_y = y
            status = self._status[start]
            p.fillRect(QRectF(r.x() + 2, y, r.width() - 4, max(2.0, scale)),
                       self.colors.sign.get(status, self.colors.outline))
        first = self.first_visible_row()
        frame = QRectF(r.x() + 0.5, first * scale, r.width() - 1,
                       max(3.0, self._visible_rows() * scale))
        pen = QPen(self.theme.gutter_text)
        p.setPen(pen)
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(frame)

    # -- input --
    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.button() != Qt.MouseButton.LeftButton:
            return super().mousePressEvent(event)
        pos = event.position()
        if self.map_rect().contains(pos) and self._status:
            row = int(pos.y() / max(1, self.viewport().height()) * len(self._status))
            self.verticalScrollBar().setValue(max(0, row - self._visible_rows() // 2))
            return
        row = self.row_at(pos.y())
        if 0 <= row < len(self._status):
            self.set_current_row(row)

    def change_index(self, row: int) -> int:
        """How many changes start at or before `row` (1-based index of the
        change `row` is in or follows; 0 before the first)."""
        return bisect_right(self._changes, row)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if not self._navigate(event):
            super().keyPressEvent(event)
