"""A read-only code view for source text from an archive (the C++ of a compiled
model): plain text, line numbers, a marked line, colours applied lazily.

The text is shown at once, uncoloured; its spans (inspector.core.source_spans)
are computed off the GUI thread by the caller and handed over with set_spans.
Only the blocks on screen get their formats (QSyntaxHighlighter would format
every block of a 100,000-line wrapper on the GUI thread first).
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QRect, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QPainter,
    QPaintEvent,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextLayout,
)
from PySide6.QtWidgets import QPlainTextDocumentLayout, QPlainTextEdit, QTextEdit, QWidget

from inspector.core.source_spans import Span
from inspector.ui.widgets.theme import Theme, code_font, current_theme


def build_document(text: str, font: QFont | None = None) -> QTextDocument:
    """A plain-text document of `text`, made in a worker thread and handed to
    the GUI thread (QTextDocument is reentrant): filling one with a 6 MB
    wrapper takes seconds, showing a built one a fraction of that."""
    doc = QTextDocument()
    doc.setDocumentLayout(QPlainTextDocumentLayout(doc))
    # the font comes from the GUI thread (the view's): no font look-up here
    doc.setDefaultFont(font if font is not None else code_font())
    doc.setPlainText(text)  # plain text: nothing in it is read as markup
    app = QCoreApplication.instance()
    if app is not None:
        doc.moveToThread(app.thread())
    return doc


class _Gutter(QWidget):
    def __init__(self, view: CodeView) -> None:
        super().__init__(view)
        self.view = view

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(self.view.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        self.view.paint_gutter(event)


class CodeView(QPlainTextEdit):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("codeView")
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                     | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.setFont(code_font())
        self.theme: Theme = current_theme()
        self._spans: dict[int, list[Span]] = {}
        self._formatted: set[int] = set()
        self._marked = -1
        self._gutter = _Gutter(self)
        self.blockCountChanged.connect(self._update_margins)
        self.updateRequest.connect(self._on_update)
        self._apply_palette()
        self._update_margins()

    # -- content --
    def set_text(self, text: str) -> None:
        """Show `text` (plain text: nothing in it is ever read as markup)."""
        self._spans, self._formatted, self._marked = {}, set(), -1
        self.setExtraSelections([])
        self.setPlainText(text)

    def set_document(self, doc: QTextDocument) -> None:
        """Show a document made by build_document (off the GUI thread)."""
        self._spans, self._formatted, self._marked = {}, set(), -1
        self.setExtraSelections([])
        # a child of the view: the next setDocument deletes it (Qt's rule)
        doc.setParent(self)
        self.setDocument(doc)
        self._update_margins()

    def set_spans(self, spans: dict[int, list[Span]]) -> None:
        """Colour spans per 0-based line; applied to the lines on screen, then as
        lines scroll into view."""
        self._spans, self._formatted = spans, set()
        self._format_visible()

    def formatted_lines(self) -> set[int]:
        """Lines whose colours are applied (the ones shown so far)."""
        return set(self._formatted)

    def line_count(self) -> int:
        return self.blockCount()

    def line_text(self, line: int) -> str:
        return self.document().findBlockByNumber(line).text()

    def marked_line(self) -> int:
        return self._marked

    def show_line(self, line: int) -> None:
        """Scroll to `line` (0-based), put the cursor there and mark it."""
        block = self.document().findBlockByNumber(max(0, min(line, self.blockCount() - 1)))
        self._marked = block.blockNumber()
        cursor = QTextCursor(block)
        self.setTextCursor(cursor)
        bar = self.verticalScrollBar()
        bar.setValue(max(0, block.blockNumber() - max(1, self._rows() // 3)))
        mark = QTextEdit.ExtraSelection()
        mark.format.setBackground(self.theme.current_line)
        mark.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        mark.cursor = cursor
        self.setExtraSelections([mark])
        self._format_visible()

    def first_visible_line(self) -> int:
        return self.firstVisibleBlock().blockNumber()

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._apply_palette()
        self._formatted = set()
        self._format_visible()
        if self._marked >= 0:
            self.show_line(self._marked)

    # -- lazy colouring --
    def _rows(self) -> int:
        return max(1, int(self.viewport().height() / max(1.0, self.fontMetrics().lineSpacing())))

    def _on_update(self, rect: QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())
        self._format_visible()

    def _format_visible(self) -> None:
        if not self._spans:
            return
        block = self.firstVisibleBlock()
        # a screen and a bit: the next scroll step finds its lines ready
        for _ in range(self._rows() + 40):
            if not block.isValid():
                break
            n = block.blockNumber()
            if n not in self._formatted:
                self._formatted.add(n)
                spans = self._spans.get(n)
                if spans:
                    self._format_block(block, spans)
            block = block.next()

    def _format_block(self, block, spans: list[Span]) -> None:
        tokens, ranges = self.theme.tokens, []
        for s, e, cat in spans:
            r = QTextLayout.FormatRange()
            r.start, r.length = s, e - s
            fmt = QTextCharFormat()
            fmt.setForeground(tokens.get(cat, self.theme.text))
            r.format = fmt
            ranges.append(r)
        block.layout().setFormats(ranges)
        # what QSyntaxHighlighter does after formatting a block: repaint it
        self.document().markContentsDirty(block.position(), block.length())

    # -- look --
    def _apply_palette(self) -> None:
        pal = self.palette()
        pal.setColor(pal.ColorRole.Base, self.theme.background)
        pal.setColor(pal.ColorRole.Text, self.theme.text)
        self.setPalette(pal)
        self._gutter.update()

    def gutter_width(self) -> int:
        digits = max(4, len(str(max(1, self.blockCount()))))
        return 10 + self.fontMetrics().horizontalAdvance("9") * digits

    def _update_margins(self, _count: int = 0) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        cr = self.contentsRect()
        self._gutter.setGeometry(QRect(cr.left(), cr.top(), self.gutter_width(), cr.height()))
        self._format_visible()

    def paint_gutter(self, event: QPaintEvent) -> None:
        p = QPainter(self._gutter)
        p.fillRect(event.rect(), self.theme.gutter_bg)
        block = self.firstVisibleBlock()
        top = self.blockBoundingGeometry(block).translated(self.contentOffset()).top()
        width = self._gutter.width() - 6
        height = self.fontMetrics().height()
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + self.blockBoundingRect(block).height()
            if block.isVisible() and bottom >= event.rect().top():
                n = block.blockNumber()
                p.setPen(self.theme.text if n == self._marked else QColor(self.theme.gutter_text))
                p.drawText(0, int(top), width, height, Qt.AlignmentFlag.AlignRight, str(n + 1))
            block = block.next()
            top = bottom
        p.end()
