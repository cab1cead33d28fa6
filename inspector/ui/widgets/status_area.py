"""The status area under a panel: one plain-text status line (messages quote file and
torch text, so never markup), the error colour from the theme, and a Details toggle
that reveals the full text (a traceback, torch's stderr) one click away."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

from inspector.ui.widgets.theme import current_theme


class StatusArea(QWidget):
    def __init__(self, parent: QWidget | None = None, details_height: int = 160) -> None:
        super().__init__(parent)
        self.setObjectName("statusArea")
        self.label = QLabel()
        self.label.setObjectName("statusText")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details_button = QToolButton()
        self.details_button.setText("Details")
        self.details_button.setCheckable(True)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.hide()
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.details.setMaximumHeight(details_height)
        self.details.hide()
        self.details_button.toggled.connect(self._toggle)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.label)
        box.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignLeft)
        box.addWidget(self.details)

    def text(self) -> str:
        return self.label.text()

    def set_status(self, text: str, error: bool = False, details: str | None = None) -> None:
        """Show `text` (plain). `details`: None keeps the Details part as it is, ""
        hides it, anything else fills it (folded until the user opens it)."""
        color = current_theme().severity["error"].name() if error else ""
        self.label.setStyleSheet(f"color: {color};" if color else "")
        self.label.setText(text)
        if details is not None:
            self.set_details(details)

    def append(self, text: str) -> None:
        self.label.setText(self.label.text() + text)

    def set_details(self, details: str) -> None:
        self.details.setPlainText(details)
        if not details:
            self.details_button.setChecked(False)
        self.details_button.setVisible(bool(details))

    def clear(self) -> None:
        self.set_status("", details="")

    def _toggle(self, on: bool) -> None:
        self.details.setVisible(on)
        self.details_button.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
