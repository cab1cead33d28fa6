"""The source file of a stack frame: highlighted, scrolled to the frame's line,
the line marked; and the other way, the nodes a source line produced.

Files are read from this machine only (a regular file, bounded size, decoded
leniently); a path the archive names that is not here is said so, with the code
line the trace recorded.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QSyntaxHighlighter, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from inspector.core import source_spans
from inspector.core.frames import Frame
from inspector.core.source_spans import Span
from inspector.core.sources import (
    PathMapping,
    SourceResolver,
    check_line,
    read_source_text,
    why_not_shown,
)
from inspector.core.text import mark_invisible
from inspector.ui.plain import ElidedLabel, plain_tip, shown
from inspector.ui.tasks import TaskGroup
from inspector.ui.widgets.theme import Theme, code_font, current_theme

# Lexing is pure Python (pygments, ~7 s per MB): bigger files are shown uncoloured,
# smaller ones are lexed off the GUI thread and coloured when the spans arrive.
MAX_LEX_BYTES = 512 * 1024
LEX_DELAY_MS = 150  # see SourcePane._lex_timer


def read_source(path: str) -> str | None:
    """The file's text, or None when it is not a readable Python source file
    here. The path comes from the archive: only Python sources are opened (the
    suffix of the resolved target: `x.py` linking to a key file is not one), never
    /proc-like pseudo files (`/proc/self/environ` is a "regular file"). Bidi,
    zero-width and control characters are marked (core/text.py), as everywhere."""
    text = read_source_text(path)  # the rule `node` follows too (core/sources.py)
    return None if text is None else mark_invisible(text)


Spans = dict[int, list[Span]]


class _Highlighter(QSyntaxHighlighter):
    def __init__(self, doc, theme: Theme) -> None:
        super().__init__(doc)
        self.theme = theme
        self.spans: Spans = {}

    def highlightBlock(self, text: str) -> None:  # noqa: N802
        for s, e, cat in self.spans.get(self.currentBlock().blockNumber(), ()):
            fmt = QTextCharFormat()
            fmt.setForeground(self.theme.tokens.get(cat, self.theme.text))
            if cat == "comment":
                fmt.setFontItalic(True)
            self.setFormat(s, e - s, fmt)


class _SourceEditor(QPlainTextEdit):
    """The source text; `released` after a mouse button is let go over it. (Not an
    event filter on its viewport: fetching that C++-made widget from Python costs
    ~40 Python enums the first time, inspector/ui/widgets/viewport.py.)"""

    released = Signal()

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802
        super().mouseReleaseEvent(event)
        self.released.emit()


class SourcePane(QWidget):
    sourceLineSelected = Signal(str, int)  # file, 1-based line: "which nodes came from here?"
    navigateNodes = Signal(bool)  # backwards?

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = current_theme()
        self._sources = SourceResolver()  # recorded path -> this machine's file (cached)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        bar = QHBoxLayout()
        bar.setContentsMargins(6, 3, 6, 3)
        # plain, elided: the file name and function come from the archive
        self.header = ElidedLabel("No frame selected", self)
        self.header.setObjectName("sourceHeader")
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.nodes_label = QLabel("", self)
        self.prev_btn = QToolButton(self)
        self.prev_btn.setText("◀")
        self.prev_btn.setToolTip("Previous node from this source line")
        self.next_btn = QToolButton(self)
        self.next_btn.setText("▶")
        self.next_btn.setToolTip("Next node from this source line")
        for b in (self.prev_btn, self.next_btn):
            b.setAutoRaise(True)
            b.setEnabled(False)
        self.prev_btn.clicked.connect(lambda: self.navigateNodes.emit(True))
        self.next_btn.clicked.connect(lambda: self.navigateNodes.emit(False))
        bar.addWidget(self.header, 1)
        bar.addWidget(self.nodes_label)
        bar.addWidget(self.prev_btn)
        bar.addWidget(self.next_btn)
        lay.addLayout(bar)
        self.editor = _SourceEditor(self)
        self.editor.setObjectName("sourceEditor")
        self.editor.setReadOnly(True)
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setFont(code_font())
        self.editor.cursorPositionChanged.connect(self._cursor_moved)
        # a click on the line already under the cursor moves nothing: catch it too
        self.editor.released.connect(self._cursor_moved)
        lay.addWidget(self.editor, 1)
        self.highlighter = _Highlighter(self, self.theme)  # attached once spans are known
        self._lexing = TaskGroup(None, self)  # its own thread: lexing is slow Python
        # Lexing starts after a pause (LEX_DELAY_MS): a file shown as an archive
        # opens is coloured after the listing's first paint, which its GIL-holding
        # thread would delay, and stepping through nodes of several files lexes
        # only the file stopped at.
        self._lex_due: str | None = None
        self._lex_timer = QTimer(self)
        self._lex_timer.setSingleShot(True)
        self._lex_timer.setInterval(LEX_DELAY_MS)
        self._lex_timer.timeout.connect(self._lex)
        self.frame: Frame | None = None
        self.missing = False
        self._file: str | None = None
        # local line - recorded line, where the local file is another version whose
        # code moved (check_line): the marked line is where the code is here, and a
        # line picked in the editor is asked for as the recorded one it stands for
        self._offset = 0
        self.note = ""  # what the header says about the local file (the `node` command's words)
        self._shown_text = ""
        self._quiet = False

    def show_frame(self, frame: Frame) -> None:
        self.frame = frame
        same = not self.missing and self._file is not None and self._file == frame.file
        # the recorded path may be the exporting machine's (another venv, a relative
        # torch/ path): the same package's file here is what we show
        local = self._sources.resolve(frame.file) or frame.file
        text = None if same else read_source(local)  # read once per file, not per click
        where = f"{_name(frame.file)}:{frame.line_text}"
        self._quiet = True
        try:
            if not same and text is None:
                self.missing = True
                self._file = None
                self.note, self._offset = "", 0
                self._set_text("", lex=False)
                why = why_not_shown(local)
                self._header(f"{where} — file {why.split(':')[0]}")
                self.header.setToolTip(plain_tip(frame.file))
                self.editor.setPlainText(
                    f"# {shown(frame.file)}: {why}.\n"
                    f"# The stack trace recorded line {frame.line_text} (in {shown(frame.function)}):\n\n"
                    f"{shown(frame.code, 4000) or '(no code line recorded)'}\n")
                self._mark(3)
                return
            self.missing = False
            check = check_line(local, frame.line, frame.code)
            self.note = check.note
            self._offset = check.line - frame.line if check.status == "moved" else 0
            self._header(f"{where} in {frame.function}" + (f" — {self.note}" if self.note else ""),
                         warn=bool(self.note))
            self.header.setToolTip(plain_tip(
                (frame.file if local == frame.file else f"recorded: {frame.file}\nshown: {local}")
                + (f"\n{check.message}" if check.message else "")))
            if not same:
                self._set_text(text, lex=len(text) <= MAX_LEX_BYTES)
                self._file = frame.file
            self._mark(frame.line - 1 + self._offset)
        finally:
            self._quiet = False
        # the recorded line, inside the file (a recorded 2**64 does not fit the signal)
        self.sourceLineSelected.emit(frame.file, self.marked_line() - self._offset)

    def _set_text(self, text: str, lex: bool) -> None:
        """Show `text` at once, uncoloured; colour it when its spans arrive."""
        self.highlighter.setDocument(None)  # no per-block pass while the text is set
        self.highlighter.spans = {}
        self.editor.setPlainText(text)
        self._shown_text = text
        self._lexing.cancel()
        self._lex_due = text if lex and text else None
        if self._lex_due is not None:
            self._lex_timer.start()
        else:
            self._lex_timer.stop()

    def _lex(self) -> None:
        text, self._lex_due = self._lex_due, None
        if text is not None and text is self._shown_text:
            self._lexing.start(source_spans.python_spans, text, key="lex",
                               on_done=lambda spans, t=text: self._spans_ready(t, spans))

    def _spans_ready(self, text: str, spans: Spans) -> None:
        if text is not self._shown_text:
            return  # another file meanwhile
        try:
            document = self.editor.document()
        except RuntimeError:  # the pane was closed while its file was being lexed
            return
        self.highlighter.spans = spans
        self.highlighter.setDocument(document)  # rehighlights
        if self.frame is not None and not self.missing:
            self._mark_only(self.editor.textCursor().blockNumber())

    def _mark(self, block_number: int) -> None:
        doc = self.editor.document()
        block = doc.findBlockByNumber(_clamp(block_number, doc.blockCount()))
        cursor = QTextCursor(block)
        self.editor.setTextCursor(cursor)
        self.editor.centerCursor()
        sel = QTextEdit.ExtraSelection()
        color = QColor(self.theme.related_line)
        sel.format.setBackground(color)
        sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        sel.cursor = cursor
        self.editor.setExtraSelections([sel])

    def marked_line(self) -> int:
        """1-based line of the marked line in the editor."""
        sels = self.editor.extraSelections()
        return sels[0].cursor.blockNumber() + 1 if sels else 0

    def _cursor_moved(self) -> None:
        if self._quiet or self.missing or self._file is None:
            return
        line = self.editor.textCursor().blockNumber() + 1
        self._mark_only(line - 1)
        self.sourceLineSelected.emit(self._file, max(1, line - self._offset))

    def _mark_only(self, block_number: int) -> None:
        sel = QTextEdit.ExtraSelection()
        sel.format.setBackground(QColor(self.theme.related_line))
        sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        doc = self.editor.document()
        sel.cursor = QTextCursor(doc.findBlockByNumber(_clamp(block_number, doc.blockCount())))
        self.editor.setExtraSelections([sel])

    def set_node_count(self, count: int, position: int = 0) -> None:
        if count == 0:
            self.nodes_label.setText("no nodes from this line")
        else:
            where = f"{position} of " if position else ""
            self.nodes_label.setText(f"{where}{count} node{'s' if count != 1 else ''} from this line")
        self.prev_btn.setEnabled(count > 0)
        self.next_btn.setEnabled(count > 0)

    def _header(self, text: str, muted: bool = False, warn: bool = False) -> None:
        """The header line, plain text (an ElidedLabel: markup would show as is);
        a message rather than a frame is greyed (disabled); `warn`: the local file
        is another version (in the warning colour)."""
        self.header.setText(text)
        self.header.setEnabled(not muted)
        self.header.setStyleSheet(
            f"color: {self.theme.severity['warning'].name()};" if warn else "")

    def set_path_mappings(self, mappings: list[PathMapping]) -> None:
        """Read files recorded under a prefix from a local folder (the `node`
        command's --map): the next frame is looked up with them."""
        self._sources = SourceResolver(mappings)
        self._file = None  # read again through the mappings

    def show_message(self, text: str) -> None:
        """No frame to show (a line without a node, a node without a stack trace):
        say why instead of keeping the previous node's source."""
        self.frame = None
        self.missing = True  # no file: a click in the editor selects no nodes
        self._file = None
        self.note, self._offset = "", 0
        self._header(text, muted=True)
        self.header.setToolTip("")
        self.highlighter.spans = {}
        self.editor.setPlainText("")
        self.editor.setExtraSelections([])
        self.set_node_count(0)
        self.nodes_label.setText("")

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.highlighter.theme = theme
        self.highlighter.rehighlight()


def _name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _clamp(block: int, count: int) -> int:
    """A recorded line number may be anything (2**64): stay inside the document."""
    return min(max(0, block), max(0, count - 1))
