"""The listing: a virtualized code view that paints only the visible lines.

A 100,000-node program is ~200,000 lines; a QTextDocument (or one widget per
line) of that size takes tens of seconds and hundreds of MB to lay out. Here
the scroll area's vertical value *is* the first visible line, every paint draws
the ~60 visible lines with a fixed-width font, and highlighting is computed for
those lines only (highlight.LineCache).

Layers per line, back to front: related-lines background (module selection,
users of a value, nodes of a source line), search-match background, current line,
search spans, text. The gutter shows line numbers, an optional heat column (a number
per node, tinted by size: profile times, ...) and marks (audit findings, failing
nodes, ...), both from inspector.core.annotations; hovering them shows their tooltip.
Symbols in the annotations (s70, u0) have their own colour (theme.symbol_color, as in
the Shapes panel); hovering one shows what `set_symbol_tooltips` says (its range).

The lines come from the file (names, stack-trace code): set_lines marks bidi, zero-width
and control characters as visible escapes (inspector/core/text.py), so a listing never
reads differently from what it holds ("Trojan Source"). Columns are the marked text's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QGuiApplication,
    QKeySequence,
    QTextLayout,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import QMenu, QToolTip, QWidget

from inspector.core.annotations import LineHeat, Mark, ResolvedAnnotations
from inspector.ui.plain import plain_tip
from inspector.core.line_highlight import LineCache, symbol_at
from inspector.core.text import mark_lines
from inspector.ui.widgets.line_painter import RowsArea, run_slice, set_scroll_ranges
from inspector.ui.widgets.theme import Theme, current_theme

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MARK_WIDTH = 14  # gutter column for marks
_HEAT_MAX_CHARS = 10  # the heat column's text is cut to this


class ListingView(RowsArea):
    """Signals carry 0-based listing lines."""

    currentLineChanged = Signal(int)
    definitionRequested = Signal(str, int)  # word, line (Ctrl+click / F12)
    usersRequested = Signal(str, int)  # word, line (Shift+F12)
    painted = Signal()  # the lines set last are on screen (once per set_lines)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("listingView")
        self.viewport().setMouseTracking(True)
        self.viewport().setCursor(Qt.CursorShape.IBeamCursor)
        self._lines: list[str] = []
        self._announce = False  # `painted` is due after the next paint
        self._painted_at: tuple[int, int, int] | None = None  # place() when it was
        self._cache = LineCache([])
        self._max_len = 0
        self._marks: dict[int, Mark] = {}
        self._heat: dict[int, LineHeat] = {}
        self._heat_title = ""
        self._heat_width = 0
        self._related: set[int] = set()
        self._match_lines: set[int] = set()
        self._match_spans: Callable[[str], list[tuple[int, int]]] | None = None
        self._current_match = -1
        self._is_definition: Callable[[str, int], bool] = lambda word, line: False
        self._symbol_tooltip: Callable[[str], str | None] = lambda name: None
        self.theme: Theme = current_theme()
        self._update_metrics()

    # -- content --
    def set_lines(self, lines: list[str]) -> None:
        lines = mark_lines(lines)  # the same list unless a line needs marking
        self._lines = lines
        self._announce = True
        self._painted_at = None
        self._cache = LineCache(lines)
        self._shaped.clear()
        # the widest line sets the horizontal range (one pass, ~10 ms at 200k lines)
        self._max_len = max(map(len, lines), default=0)
        self._current = -1
        self._marks = {}
        self._heat = {}
        self._heat_title = ""
        self._related = set()
        self._match_lines = set()
        self._match_spans = None
        self._current_match = -1
        self.verticalScrollBar().setValue(0)
        self.horizontalScrollBar().setValue(0)
        self._update_scrollbars()
        self.viewport().update()

    def append_lines(self, lines: list[str]) -> None:
        """More lines at the end (a listing streamed in): the scroll range grows, the
        cursor, scroll position and marks stay. Call it only on a list set_lines was
        given as a copy: the view extends the list it holds."""
        if not lines:
            return
        lines = mark_lines(lines)
        self._lines.extend(lines)
        self._max_len = max(self._max_len, max(map(len, lines)))
        self._update_scrollbars()
        self.viewport().update()

    def line_count(self) -> int:
        return len(self._lines)

    def place(self) -> tuple[int, int, int]:
        """(current line, vertical and horizontal scroll): where the reader is."""
        return (self._current, self.verticalScrollBar().value(),
                self.horizontalScrollBar().value())

    def moved_place(self) -> tuple[int, int, int] | None:
        """place(), where the reader moved since the lines set last were painted;
        None if not (or not painted yet)."""
        place = self.place()
        return place if self._painted_at is not None and place != self._painted_at else None

    def go_to_place(self, place: tuple[int, int, int]) -> None:
        """Back to a place() of the same lines (another view of them)."""
        line, vertical, horizontal = place
        self.set_current_line(line)
        self.verticalScrollBar().setValue(vertical)
        self.horizontalScrollBar().setValue(horizontal)

    def line_text(self, line: int) -> str:
        return self._lines[line] if 0 <= line < len(self._lines) else ""

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._shaped.clear()
        self.viewport().update()

    def set_definition_test(self, test: Callable[[str, int], bool]) -> None:
        """`test(word, line)`: whether Ctrl+hover should show `word` as a link."""
        self._is_definition = test

    def set_symbol_tooltips(self, tooltip: Callable[[str], str | None]) -> None:
        """`tooltip(symbol)`: what hovering a symbol (s70, u0) shows, plain text or None."""
        self._symbol_tooltip = tooltip

    def symbol_at(self, line: int, column: int) -> str | None:
        """The symbol (coloured by theme.symbol_color) at `column` of `line`, if any."""
        if not 0 <= line < len(self._lines):
            return None
        return symbol_at(self._cache.spans(line), column)

    def text_tooltip(self, line: int, column: int) -> str:
        """What hovering the text at (line, column) shows (plain text; "" for nothing)."""
        name = self.symbol_at(line, column)
        return (self._symbol_tooltip(name) or "") if name else ""

    # -- decorations --
    def set_line_marks(self, lines: dict[int, str]) -> None:
        """Gutter marks without tooltips: line -> severity ("error", "warning", "info")."""
        self.set_annotations(ResolvedAnnotations(marks={ln: Mark(s) for ln, s in lines.items()}))

    def set_annotations(self, resolved: ResolvedAnnotations) -> None:
        """Marks and heat of the shown program, already mapped to lines."""
        self._marks = dict(resolved.marks)
        self._heat = dict(resolved.heat)
        self._heat_title = resolved.heat_title
        self._update_metrics()
        self._update_scrollbars()
        self.viewport().update()

    def line_marks(self) -> dict[int, str]:
        """line -> severity of each gutter mark."""
        return {ln: m.severity for ln, m in self._marks.items()}

    def line_heat(self) -> dict[int, LineHeat]:
        return dict(self._heat)

    def gutter_tooltip(self, line: int) -> str:
        """What hovering the gutter of `line` shows (plain text; "" for nothing)."""
        parts = []
        heat = self._heat.get(line)
        if heat is not None:
            head = f"{self._heat_title}: {heat.text}" if self._heat_title else heat.text
            parts.append("\n".join(x for x in (head, heat.tooltip) if x))
        mark = self._marks.get(line)
        if mark is not None:
            parts.append(mark.tooltip or mark.severity)
        return "\n".join(p for p in parts if p)

    def set_related_lines(self, lines: Iterable[int]) -> None:
        self._related = set(lines)
        self.viewport().update()

    def related_lines(self) -> set[int]:
        return set(self._related)

    def set_matches(self, lines: Iterable[int],
                    spans: Callable[[str], list[tuple[int, int]]] | None,
                    current: int = -1) -> None:
        self._match_lines = set(lines)
        self._match_spans = spans
        self._current_match = current
        self.viewport().update()

    def set_current_match(self, line: int) -> None:
        self._current_match = line
        self.viewport().update()

    # -- cursor --
    def current_line(self) -> int:
        return self._current

    def set_current_line(self, line: int, center: bool = False, emit: bool = True) -> None:
        if self._make_current(line, center) and emit:
            self.currentLineChanged.emit(self._current)

    def visible_columns(self) -> tuple[float, float]:
        """The text columns the viewport shows now: (first, end)."""
        value = self.horizontalScrollBar().value()
        width = self.viewport().width() - self._gutter - 8
        return value / self._cw, (value + width) / self._cw

    def ensure_columns_visible(self, start: int, end: int, keep: int | None = None) -> None:
        """Scroll horizontally so columns [start, end) show (a match far right).
        `keep`: a column that must stay in view (the node's name), even when that
        leaves the end of a match beyond a narrow viewport cut off."""
        bar = self.horizontalScrollBar()
        width = self.viewport().width() - self._gutter - 8
        x0, x1 = start * self._cw, end * self._cw
        value = bar.value()
        if x0 < value:
            value = int(max(0.0, x0 - width / 3))
        elif x1 > value + width:
            # scroll just enough: keep as much of the line's start (the value
            # name and its type) in view as the match allows
            value = int(max(0.0, min(x0, x1 - width + 4 * self._cw)))
        if keep is not None:
            value = min(value, int(keep * self._cw))
        bar.setValue(value)

    def first_visible_line(self) -> int:
        return self.first_visible_row()

    def _rows(self) -> int:
        return len(self._lines)

    def _go_to(self, row: int) -> None:
        self.set_current_line(row)

    def word_at(self, line: int, column: int) -> str | None:
        text = self.line_text(line)
        for m in _WORD.finditer(text):
            if m.start() <= column < m.end():
                return m.group(0)
        return None

    def word_at_cursor(self) -> str | None:
        """The name the cursor line defines (its first word), for F12 on a line."""
        text = self.line_text(self._current).strip()
        m = _WORD.match(text)
        return m.group(0) if m else None

    # -- geometry --
    def _update_metrics(self) -> None:
        self._measure()
        digits = max(4, len(str(max(1, len(self._lines)))))
        chars = max((len(h.text) for h in self._heat.values()), default=0)
        self._heat_width = int(min(chars, _HEAT_MAX_CHARS) * self._cw + 10) if self._heat else 0
        self._gutter = int(digits * self._cw + _MARK_WIDTH + 14) + self._heat_width
        self.setViewportMargins(0, 0, 0, 0)

    def _update_scrollbars(self) -> None:
        self._update_metrics()
        rows = self._visible_rows()
        set_scroll_ranges(self, len(self._lines), rows, self._max_len, self._cw,
                          self.viewport().width() - self._gutter)

    def gutter_width(self) -> int:
        """Pixels left of the text: line numbers, heat column, marks."""
        return self._gutter

    def point_at(self, line: int, column: int = 0) -> QPoint:
        """The viewport point in the middle of character `column` of `line` (0-based)."""
        x = self._gutter + 4 - self.horizontalScrollBar().value() + (column + 0.5) * self._cw
        y = (line - self.first_visible_line() + 0.5) * self._lh
        return QPoint(int(x), int(y))

    def line_at(self, pos: QPoint) -> int:
        return self.first_visible_line() + int(pos.y() / self._lh)

    def column_at(self, pos: QPoint) -> int:
        x = pos.x() - self._gutter + self.horizontalScrollBar().value() - 4
        return int(x / self._cw) if x >= 0 else -1

    # -- painting --
    def _layout(self, line: int) -> QTextLayout:
        return self._shaped.get(line, self._lines[line], lambda: self._cache.spans(line),
                                self.font(), self.theme)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        theme = self.theme
        p = QPainter(self.viewport())
        p.setFont(self.font())
        rect = self.viewport().rect()
        p.fillRect(rect, theme.background)
        gutter = self._gutter
        lh, cw = self._lh, self._cw
        xoff = self.horizontalScrollBar().value()
        text_x0 = gutter + 4 - xoff
        width = rect.width()
        first_col = max(0, int(xoff / cw) - 1)
        last_col = first_col + int((width - gutter) / cw) + 3
        default_pen = theme.text
        for row, line in enumerate(self.visible_range()):
            y = row * lh
            band = QRectF(gutter, y, width - gutter, lh)
            if line in self._related:
                p.fillRect(band, theme.related_line)
            if line in self._match_lines:
                p.fillRect(band, theme.match_line)
            if line == self._current:
                p.fillRect(band, theme.current_line)
            text = self._lines[line]
            if line in self._match_lines and self._match_spans is not None:
                color = theme.current_match_bg if line == self._current_match else theme.match_bg
                for s, e in self._match_spans(text):
                    if e < first_col or s > last_col:
                        continue
                    p.fillRect(QRectF(text_x0 + s * cw, y, (e - s) * cw, lh), color)
            p.setPen(default_pen)
            self._layout(line).draw(p, QPointF(text_x0, y))
        self._paint_gutter(p, rect.height())
        p.end()
        self._prefetch.start()
        if self._announce:
            self._announce = False
            self._painted_at = self.place()
            self.painted.emit()

    def _prefetch_some(self) -> None:
        rows = self._visible_rows()
        first = self.first_visible_line()
        wanted = list(range(first + rows, min(len(self._lines), first + 3 * rows))) + \
            list(range(max(0, first - rows), first))
        if not run_slice(self._layout(line) for line in wanted if line not in self._shaped):
            self._prefetch.start()

    def _paint_gutter(self, p: QPainter, height: int) -> None:
        theme = self.theme
        gutter, lh = self._gutter, self._lh
        p.fillRect(QRectF(0, 0, gutter, height), theme.gutter_bg)
        p.setPen(theme.gutter_text.darker(115) if not theme.dark else theme.gutter_text)
        p.drawLine(gutter - 1, 0, gutter - 1, height)
        num_right = gutter - _MARK_WIDTH - 8 - self._heat_width
        heat_x = num_right + 4
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        for row, line in enumerate(self.visible_range()):
            y = row * lh
            p.setPen(theme.text if line == self._current else theme.gutter_text)
            p.drawText(QRectF(0, y, num_right, lh),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, str(line + 1))
            heat = self._heat.get(line)
            if heat is not None:
                tint = QColor(theme.heat)
                tint.setAlphaF(0.15 + 0.75 * heat.level)
                p.fillRect(QRectF(heat_x, y + 1, self._heat_width - 4, lh - 2), tint)
                p.setPen(theme.text)
                p.drawText(QRectF(heat_x + 2, y, self._heat_width - 8, lh),
                           Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                           heat.text[:_HEAT_MAX_CHARS])
            mark = self._marks.get(line)
            if mark is not None:
                color = theme.severity.get(mark.severity, theme.severity["info"])
                d = min(lh - 6, 9.0)
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(color)
                p.drawEllipse(QRectF(gutter - _MARK_WIDTH - 2 + (_MARK_WIDTH - d) / 2,
                                     y + (lh - d) / 2, d, d))
                p.setBrush(Qt.BrushStyle.NoBrush)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)

    # -- input --
    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.ToolTip:
            pos = event.pos()
            line = self.line_at(pos)
            text = (self.gutter_tooltip(line) if pos.x() < self._gutter
                    else self.text_tooltip(line, self.column_at(pos)))
            if text:
                # Escaped and wrapped: text from a file must never be read as markup.
                QToolTip.showText(event.globalPos(), plain_tip(text), self.viewport())
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().viewportEvent(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        if event.button() != Qt.MouseButton.LeftButton:
            return super().mousePressEvent(event)
        pos = event.position().toPoint()
        line = self.line_at(pos)
        if line >= len(self._lines):
            return
        self.set_current_line(line)
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            word = self.word_at(line, self.column_at(pos))
            if word:
                self.definitionRequested.emit(word, line)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        pos = event.position().toPoint()
        shape = Qt.CursorShape.IBeamCursor
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            line = self.line_at(pos)
            word = self.word_at(line, self.column_at(pos))
            if word and self._is_definition(word, line):
                shape = Qt.CursorShape.PointingHandCursor
        self.viewport().setCursor(shape)
        super().mouseMoveEvent(event)

    def contextMenuEvent(self, event) -> None:  # noqa: N802
        pos = event.pos()
        line = self.line_at(pos)
        if not 0 <= line < len(self._lines):
            return
        self.set_current_line(line)
        word = self.word_at(line, self.column_at(pos)) or self.word_at_cursor()
        menu = QMenu(self)
        if word:
            menu.addAction(f"Go to Definition of {word}\tF12",
                           lambda: self.definitionRequested.emit(word, line))
            menu.addAction(f"Find Users of {word}\tShift+F12",
                           lambda: self.usersRequested.emit(word, line))
            menu.addSeparator()
        menu.addAction("Copy Line\tCtrl+C", self.copy_current_line)
        if word:
            menu.addAction(f"Copy “{word}”", lambda: QGuiApplication.clipboard().setText(word))
        menu.exec(event.globalPos())

    def copy_current_line(self) -> None:
        QGuiApplication.clipboard().setText(self.line_text(self._current).strip())

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            bar = self.horizontalScrollBar()
            bar.setValue(bar.value() - int(event.angleDelta().y() / 120 * bar.singleStep() * 3))
            return
        super().wheelEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy_current_line()
        elif self._navigate(event):
            pass
        elif event.key() == Qt.Key.Key_End:  # the listing only: to the end of long lines
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().maximum())
        else:
            super().keyPressEvent(event)
