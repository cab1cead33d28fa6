"""What the window shows before any archive is open: how to open one, recent files.

A recent file's name is text from the disk (`<img src=... width=700><a href=...>
Verified safe</a>.pt2` is a valid file name): each entry is a flat button, whose
text Qt never renders as HTML, over a plain-text label of its folder; both
elide instead of growing the page."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from inspector.ui.plain import ElidedLabel, plain_label, plain_tip, shown

MAX_RECENT_SHOWN = 6
MAX_WIDTH = 560  # px: the Recent list's widest; longer names and folders are elided


class WelcomePage(QWidget):
    openRequested = Signal()
    recentRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("welcomePage")
        lay = QVBoxLayout(self)
        lay.setAlignment(Qt.AlignmentFlag.AlignCenter)
        # our own fixed markup: rich text on purpose, nothing from a file in it
        title = QLabel("<h2>PT2 Inspector</h2>", self)
        title.setTextFormat(Qt.TextFormat.RichText)
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        hint = QLabel("Read torch.export archives as code, find what export baked in.<br>"
                      "Drop a <b>.pt2</b> file here, or", self)
        hint.setTextFormat(Qt.TextFormat.RichText)
        hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        button = QPushButton("Open Archive…  (Ctrl+O)", self)
        button.clicked.connect(self.openRequested)
        for w in (title, hint):
            lay.addWidget(w)
        lay.addWidget(button, 0, Qt.AlignmentFlag.AlignCenter)
        lay.addSpacing(16)
        self.recent = QWidget(self)
        self.recent.setObjectName("recentFiles")
        self._recent_lay = QVBoxLayout(self.recent)
        self._recent_lay.setContentsMargins(0, 0, 0, 0)
        self._recent_lay.setSpacing(2)
        self.recent.setMaximumWidth(MAX_WIDTH)
        lay.addWidget(self.recent, 0, Qt.AlignmentFlag.AlignCenter)
        self.recent_buttons: list[_ElidedLink] = []

    def set_recent(self, files: list[str]) -> None:
        _clear(self._recent_lay)
        self.recent_buttons = []
        if not files:
            return
        header = plain_label(QLabel("Recent", self.recent))
        bold = header.font()
        bold.setBold(True)
        header.setFont(bold)
        header.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._recent_lay.addWidget(header)
        for path in files[:MAX_RECENT_SHOWN]:
            self._recent_lay.addLayout(self._entry(path))

    def _entry(self, path: str) -> QVBoxLayout:
        """The file's name as a link-like button, its folder in gray below it."""
        entry = QVBoxLayout()
        entry.setSpacing(0)
        link = _ElidedLink(shown(Path(path).name, 500), self.recent)
        link.setToolTip(plain_tip(path))
        link.setAccessibleName(f"Open recent file {link.full_text}")
        link.clicked.connect(lambda _checked=False, p=path: self.recentRequested.emit(p))
        folder = _Folder(str(Path(path).parent), self.recent, Qt.TextElideMode.ElideMiddle)
        folder.setStyleSheet("color: gray; padding-left: 2px")
        entry.addWidget(link)
        entry.addWidget(folder)
        entry.addSpacing(4)
        self.recent_buttons.append(link)
        return entry


class _ElidedLink(QPushButton):
    """A flat, link-coloured button showing a name (plain text, as every button)
    elided to the width it gets: a 300-character name never widens the page."""

    def __init__(self, text: str, parent: QWidget) -> None:
        super().__init__(parent)
        self.full_text = text
        self.setFlat(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setStyleSheet("QPushButton { color: palette(link); text-decoration: underline;"
                           " text-align: left; border: none; padding: 1px 2px; }")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._elide()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return _text_hint(self, self.full_text, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(40, super().sizeHint().height())

    def _elide(self) -> None:
        cut = self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideMiddle,
                                            max(self.width() - 6, 1))
        self.setText(cut.replace("&", "&&"))  # an & in a name is not a shortcut

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()


class _Folder(ElidedLabel):
    """The folder of a recent file: plain, elided, as wide as its text up to MAX_WIDTH."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def sizeHint(self) -> QSize:  # noqa: N802
        return _text_hint(self, self.full_text(), super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(40, super().sizeHint().height())


def _text_hint(widget: QWidget, text: str, height: int) -> QSize:
    return QSize(min(widget.fontMetrics().horizontalAdvance(text) + 8, MAX_WIDTH), height)


def _clear(layout) -> None:  # noqa: ANN001 - a QLayout
    """Empty `layout`, its nested layouts included (their widgets hidden at once,
    deleted when the event loop next runs)."""
    while layout.count():
        item = layout.takeAt(0)
        if item.widget() is not None:
            item.widget().hide()
            item.widget().deleteLater()
        elif item.layout() is not None:
            _clear(item.layout())
            item.layout().deleteLater()
