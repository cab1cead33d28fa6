"""What the window shows before any archive is open: how to open one, recent files."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QPushButton, QVBoxLayout, QWidget


class WelcomePage(QWidget):
    openRequested = Signal()
    recentRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("welcomePage")
        lay = QVBoxLayout(self)
        lay.setAlignment(Qt.AlignmentFlag.AlignCenter)
        title = QLabel("<h2>PT2 Inspector</h2>", self)
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        hint = QLabel("Read torch.export archives as code, find what export baked in.<br>"
                      "Drop a <b>.pt2</b> file here, or", self)
        hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        button = QPushButton("Open Archive…  (Ctrl+O)", self)
        button.clicked.connect(self.openRequested)
        self.recent = QLabel(self)
        self.recent.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.recent.linkActivated.connect(self.recentRequested)
        for w in (title, hint):
            lay.addWidget(w)
        lay.addWidget(button, 0, Qt.AlignmentFlag.AlignCenter)
        lay.addSpacing(16)
        lay.addWidget(self.recent)

    def set_recent(self, files: list[str]) -> None:
        if not files:
            self.recent.setText("")
            return
        links = "<br>".join(f"<a href='{f}'>{Path(f).name}</a> "
                            f"<span style='color:gray'>{Path(f).parent}</span>" for f in files[:6])
        self.recent.setText(f"<b>Recent</b><br>{links}")
