"""The search bar: query field, case and regex toggles, match count, prev/next.

Typing is debounced (a query on a 100k-node listing costs tens of ms; running
it per keystroke would make typing lag), Enter/Shift+Enter move between matches.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from inspector.ui import settings as keys

DEBOUNCE_MS = 120
HELP = ("Search the listing. Plain text, or field terms: op:arange  device:cpu  "
        "module:decoder.transformer.h.0  file:modeling_gpt2.py[:573]  target:aten.to  "
        "name:add_  (terms combine)")


class _QueryEdit(QLineEdit):
    navigate = Signal(bool)  # backwards?
    escape = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.navigate.emit(bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier))
            return
        if event.key() == Qt.Key.Key_Escape:
            self.escape.emit()
            return
        super().keyPressEvent(event)


class SearchBar(QWidget):
    queryChanged = Signal(str, bool, bool)  # text, case sensitive, regex (debounced)
    navigate = Signal(bool)  # backwards?
    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("searchBar")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(6, 3, 6, 3)
        lay.setSpacing(4)
        self.edit = _QueryEdit(self)
        self.edit.setPlaceholderText("Search  (cpu, op:arange, device:cpu, module:…, file:…)")
        self.edit.setToolTip(HELP)
        self.edit.setClearButtonEnabled(True)
        self.case = self._toggle("Aa", "Match case", keys.SEARCH_CASE)
        self.regex = self._toggle(".*", "Regular expression", keys.SEARCH_REGEX)
        self.count = QLabel("", self)
        self.count.setMinimumWidth(90)
        self.count.setObjectName("matchCount")
        self.prev_btn = self._button("▲", "Previous match (Shift+F3, Shift+Enter)")
        self.next_btn = self._button("▼", "Next match (F3, Enter)")
        close = self._button("✕", "Close (Esc)")
        lay.addWidget(self.edit, 1)
        for w in (self.case, self.regex, self.count, self.prev_btn, self.next_btn, close):
            lay.addWidget(w)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.emit_query)
        self.edit.textChanged.connect(lambda _t: self._timer.start())
        self.case.toggled.connect(self._option_changed)
        self.regex.toggled.connect(self._option_changed)
        self.edit.navigate.connect(self._enter)
        self.edit.escape.connect(self.closed)
        self.prev_btn.clicked.connect(lambda: self.navigate.emit(True))
        self.next_btn.clicked.connect(lambda: self.navigate.emit(False))
        close.clicked.connect(self.closed)

    def _toggle(self, text: str, tip: str, key: str) -> QToolButton:
        b = QToolButton(self)
        b.setText(text)
        b.setToolTip(tip)
        b.setCheckable(True)
        b.setChecked(keys.get_bool(key))
        b.setAutoRaise(True)
        b.toggled.connect(lambda on: keys.set_value(key, on))
        return b

    def _button(self, text: str, tip: str) -> QToolButton:
        b = QToolButton(self)
        b.setText(text)
        b.setToolTip(tip)
        b.setAutoRaise(True)
        return b

    def _option_changed(self) -> None:
        self.emit_query()

    def _enter(self, backwards: bool) -> None:
        if self._timer.isActive():  # Enter right after typing: search now, then move
            self._timer.stop()
            self.emit_query()
        self.navigate.emit(backwards)

    def emit_query(self) -> None:
        self._timer.stop()
        self.queryChanged.emit(self.edit.text(), self.case.isChecked(), self.regex.isChecked())

    def text(self) -> str:
        return self.edit.text()

    def set_text(self, text: str, now: bool = True) -> None:
        self.edit.setText(text)
        if now:
            self.emit_query()

    def focus(self) -> None:
        self.show()
        self.edit.setFocus()
        self.edit.selectAll()

    def set_status(self, current: int, total: int, error: str | None = None,
                   ms: float | None = None, so_far: bool = False) -> None:
        """`so_far`: the matches among the lines listed so far (a big program
        still being indexed); the whole program's follow."""
        if error:
            self.count.setText("invalid")
            self.count.setToolTip(error)
            self.edit.setStyleSheet("QLineEdit { color: #cf222e; }")
            return
        self.edit.setStyleSheet("")
        self.count.setToolTip(f"{ms:.1f} ms" if ms is not None else "")
        if not self.edit.text():
            self.count.setText("")
        elif so_far:
            self.count.setText(f"{current} of {total:,} so far…" if current and total else
                               f"{total:,} so far…" if total else "none so far…")
            self.count.setToolTip("matches in the lines listed so far: the whole program's "
                                  "follow once it is indexed")
        elif total == 0:
            self.count.setText("No matches")
        else:
            self.count.setText(f"{current} of {total:,}" if current else f"{total:,} matches")
