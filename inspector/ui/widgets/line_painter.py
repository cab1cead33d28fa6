"""Painting code lines in a virtualized view, shared by the listing (listing_view.py)
and the compare view (diff_view.py).

Both paint only the visible lines of a fixed-width font: a line is shaped and
coloured once into a QTextLayout (shaping is what costs in text drawing: one
drawText per token was 3x slower), kept in a bounded cache, and after each paint
the pages around the screen are shaped ahead in idle slices, so the next PageDown
finds its lines ready. The scroll bars count lines (vertical) and pixels of the
longest line (horizontal). RowsArea is that scroll area: both views derive from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable

from PySide6.QtCore import QObject, QPointF, Qt, QTimer
from PySide6.QtGui import QFont, QFontMetricsF, QKeyEvent, QResizeEvent, QTextCharFormat, QTextLayout
from PySide6.QtWidgets import QAbstractScrollArea, QWidget

from inspector.core.line_highlight import SYMBOL
from inspector.ui.widgets.theme import Theme, code_font, symbol_color
from inspector.ui.widgets.viewport import own_viewport

LAYOUT_CACHE = 4000  # shaped lines kept (a screen is < 100)
IDLE_SLICE_S = 0.004  # shaping ahead stays well inside a frame


def shape_line(text: str, spans: Iterable[tuple[int, int, str]], font: QFont,
               theme: Theme) -> QTextLayout:
    """`text` laid out on one line, each span in its token (or symbol) colour."""
    layout = QTextLayout(text, font)
    layout.setCacheEnabled(True)
    ranges = []
    tokens = theme.tokens
    for s, e, cat in spans:
        r = QTextLayout.FormatRange()
        r.start, r.length = s, e - s
        fmt = QTextCharFormat()
        fmt.setForeground(symbol_color(cat[len(SYMBOL):], theme)
                          if cat.startswith(SYMBOL) else tokens.get(cat, theme.text))
        r.format = fmt
        ranges.append(r)
    layout.setFormats(ranges)
    layout.beginLayout()
    tl = layout.createLine()
    if tl.isValid():
        tl.setLineWidth(1e9)
        tl.setPosition(QPointF(0, 0))
    layout.endLayout()
    return layout


class ShapedLines:
    """Shaped lines by key (a line, or (side, line)); emptied when it grows past
    LAYOUT_CACHE, and by the view when the theme or the lines change."""

    def __init__(self) -> None:
        self._layouts: dict[Hashable, QTextLayout] = {}

    def __contains__(self, key: Hashable) -> bool:
        return key in self._layouts

    def clear(self) -> None:
        self._layouts = {}

    def get(self, key: Hashable, text: str, spans: Callable[[], Iterable[tuple[int, int, str]]],
            font: QFont, theme: Theme) -> QTextLayout:
        """The layout of `key`, shaped now if not yet (`spans` is only asked then)."""
        layout = self._layouts.get(key)
        if layout is None:
            if len(self._layouts) > LAYOUT_CACHE:
                self._layouts.clear()
            layout = self._layouts[key] = shape_line(text, spans(), font, theme)
        return layout


def idle_timer(parent: QObject, work: Callable[[], None]) -> QTimer:
    """A single-shot 0 ms timer: `work` runs once the event loop is idle."""
    timer = QTimer(parent)
    timer.setSingleShot(True)
    timer.setInterval(0)
    timer.timeout.connect(work)
    return timer


def run_slice(steps: Iterable[object], budget_s: float = IDLE_SLICE_S) -> bool:
    """Advance `steps` (each one piece of work) until `budget_s` has passed: True
    when all were done, False when time ran out (start the idle timer again)."""
    deadline = time.perf_counter() + budget_s
    for _ in steps:
        if time.perf_counter() > deadline:
            return False
    return True


def set_scroll_ranges(view: QAbstractScrollArea, lines: int, visible: int, longest: int,
                      char_width: float, text_width: float) -> None:
    """Vertical: the first visible line, a page a screen. Horizontal: pixels, so the
    longest line (in characters) scrolls into a text area `text_width` wide."""
    v = view.verticalScrollBar()
    v.setRange(0, max(0, lines - visible + 1))
    v.setPageStep(visible)
    v.setSingleStep(1)
    h = view.horizontalScrollBar()
    h.setRange(0, max(0, int(longest * char_width + 2 * char_width - text_width)))
    h.setPageStep(max(1, int(text_width)))
    h.setSingleStep(int(char_width * 4))


class RowsArea(QAbstractScrollArea):
    """Rows of code in the fixed-width code font; the vertical scroll value is the
    first visible row. A subclass says how many rows there are (`_rows`), how to make
    one current (`_go_to`), sets its scroll ranges (`_update_scrollbars`), paints, and
    shapes ahead (`_prefetch_some`, run by `self._prefetch` after a paint)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        own_viewport(self)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self._shaped = ShapedLines()
        self._current = -1
        self._prefetch = idle_timer(self, self._prefetch_some)
        self.setFont(code_font())
        self._measure()

    # -- for the subclass --
    def _rows(self) -> int:
        raise NotImplementedError

    def _go_to(self, row: int) -> None:
        raise NotImplementedError

    def _update_scrollbars(self) -> None:
        raise NotImplementedError

    def _prefetch_some(self) -> None:
        pass

    # -- geometry --
    def _measure(self) -> None:
        fm = QFontMetricsF(self.font())
        self._cw = fm.horizontalAdvance("M")
        self._lh = max(1.0, fm.lineSpacing())

    def _visible_rows(self) -> int:
        return max(1, int(self.viewport().height() / self._lh))

    def first_visible_row(self) -> int:
        return self.verticalScrollBar().value()

    def visible_range(self) -> range:
        first = self.first_visible_row()
        return range(first, min(self._rows(), first + self._visible_rows() + 1))

    def ensure_visible(self, row: int, center: bool = False) -> None:
        """Scroll so `row` shows (`center`: a third down, if it does not show yet)."""
        bar = self.verticalScrollBar()
        first, rows = bar.value(), self._visible_rows()
        if center and not (first <= row < first + rows - 1):
            bar.setValue(max(0, row - rows // 3))
        elif row < first:
            bar.setValue(row)
        elif row >= first + rows - 1:
            bar.setValue(row - rows + 2)

    def _make_current(self, row: int, center: bool) -> bool:
        """`row` (clamped) current and in view; True when that changed it."""
        if not self._rows():
            return False
        row = max(0, min(row, self._rows() - 1))
        changed = row != self._current
        self._current = row
        self.ensure_visible(row, center)
        self.viewport().update()
        return changed

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._update_scrollbars()

    def scrollContentsBy(self, dx: int, dy: int) -> None:  # noqa: N802
        self.viewport().update()

    # -- keys --
    def _navigate(self, event: QKeyEvent) -> bool:
        """Arrows, pages, Ctrl+Home/End and Home move the current row or scroll
        sideways; False for any other key."""
        key = event.key()
        rows, cur = self._visible_rows(), max(self._current, 0)
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        moves = {Qt.Key.Key_Up: cur - 1, Qt.Key.Key_Down: cur + 1,
                 Qt.Key.Key_PageUp: cur - rows + 1, Qt.Key.Key_PageDown: cur + rows - 1}
        bar = self.horizontalScrollBar()
        if key in moves:
            self._go_to(moves[key])
        elif key == Qt.Key.Key_Home and ctrl:
            self._go_to(0)
        elif key == Qt.Key.Key_End and ctrl:
            self._go_to(self._rows() - 1)
        elif key == Qt.Key.Key_Home:
            bar.setValue(0)
        elif key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            bar.setValue(bar.value() + bar.singleStep() * (1 if key == Qt.Key.Key_Right else -1))
        else:
            return False
        return True
