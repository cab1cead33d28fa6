"""Help > About: what is running (app, Python, Qt, torch, ...) with a copy button.

People paste this block into bug reports, so it is plain `name: version` lines.
torch is never imported here: importing it costs seconds and the viewer bundle
has none. If torch is already imported we read its `__version__`; otherwise the
installed distribution's metadata (a file read) tells the version.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from inspector import __version__, resources
from inspector.ui.app_icon import app_icon

NOT_INSTALLED = "not installed"
_OPTIONAL = ("torch", "transformers")


def package_version(name: str) -> str | None:
    """Version of an installed distribution without importing it; None if absent."""
    module = sys.modules.get(name)
    version = getattr(module, "__version__", None)
    if version:
        return str(version)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def version_rows() -> list[tuple[str, str]]:
    rows = [
        ("pt2-inspector", __version__),
        ("Python", platform.python_version()),
        ("Qt", qVersion()),
        ("PySide6", PySide6.__version__),
    ]
    for name in _OPTIONAL:
        rows.append((name, package_version(name) or NOT_INSTALLED))
    rows.append(("Platform", platform.platform()))
    if getattr(sys, "frozen", False):
        rows.append(("Build", "bundle"))
    return rows


def version_text() -> str:
    return "\n".join(f"{name}: {value}" for name, value in version_rows())


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"About {resources.APP_NAME}")
        self.setObjectName("aboutDialog")

        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(64, 64))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        title = QLabel(
            f"<h2>{resources.APP_NAME} {__version__}</h2>"
            "<p>Read, audit, re-export and time torch.export (.pt2) archives.<br>"
            "Opening an archive never runs code from it.</p>"
        )
        title.setTextFormat(Qt.TextFormat.RichText)
        title.setWordWrap(True)
        header = QHBoxLayout()
        header.addWidget(icon)
        header.addWidget(title, 1)

        self.versions = QPlainTextEdit(version_text())
        self.versions.setObjectName("aboutVersions")
        self.versions.setReadOnly(True)
        self.versions.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        font = self.versions.font()
        font.setStyleHint(font.StyleHint.Monospace)
        font.setFamily("monospace")
        self.versions.setFont(font)
        self.versions.setMinimumWidth(420)
        self.versions.setFixedHeight(self.versions.fontMetrics().lineSpacing() * 10)

        self.copy_button = QPushButton("&Copy to clipboard")
        self.copy_button.setObjectName("aboutCopy")
        self.copy_button.setToolTip("Copy these versions, e.g. for a bug report")
        self.copy_button.clicked.connect(self.copy_to_clipboard)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(header)
        layout.addWidget(self.versions)
        layout.addWidget(buttons)

    def copy_to_clipboard(self) -> None:
        QGuiApplication.clipboard().setText(self.versions.toPlainText())
        self.copy_button.setText("Copied")


def show_about(parent: QWidget | None = None) -> AboutDialog:
    """Open the About dialog window-modally without blocking; returns it (for tests)."""
    dialog = AboutDialog(parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog
