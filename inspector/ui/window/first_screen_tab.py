"""A big archive's tab while it is read: the first lines of its program's listing.

Made from the head of the program's text (core/program/head.py) in tens of
milliseconds, where the parse takes a second or more: the user reads and scrolls
them meanwhile. The window replaces this tab with the archive's ArchiveTab once
the document is open, at the same place, the same scroll position and line (the
lines are the same), or drops it if the open fails.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from inspector.ui.plain import ElidedLabel
from inspector.ui.widgets.listing_view import ListingView
from inspector.ui.widgets.search_bar import SearchBar
from inspector.ui.workspace import FirstScreen


class FirstScreenTab(QWidget):
    """Laid out as ArchiveTab (program bar, search bar, listing), so nothing moves
    when the archive's tab takes its place."""

    def __init__(self, screen: FirstScreen, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.screen = screen
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        top = QHBoxLayout()
        top.setContentsMargins(6, 4, 6, 2)
        programs = QComboBox(self)
        programs.addItem(screen.program)  # plain: a combo box item is never rich text
        programs.setEnabled(False)
        self.info = ElidedLabel(f"its first {len(screen.lines):,} lines · reading the rest…", self)
        self.info.setObjectName("programInfo")
        top.addWidget(QLabel("Program:", self))
        top.addWidget(programs)
        top.addSpacing(12)
        top.addWidget(self.info, 1)
        lay.addLayout(top)
        search = SearchBar(self)  # searched once the program is read
        search.setEnabled(False)
        lay.addWidget(search)
        self.listing = ListingView(self)
        self.listing.setObjectName("firstScreenListing")
        lay.addWidget(self.listing, 1)
        self.listing.set_lines(screen.lines)
        self.listing.set_current_line(0, emit=False)
        # the top-left, as the archive's tab shows a program opened (ArchiveTab.show_view)
        self.listing.verticalScrollBar().setValue(0)
        self.listing.painted.connect(screen.painted)  # the reader goes on

    # -- the Tab protocol (ui/window/tabs.py) --
    def set_theme(self, theme) -> None:
        self.listing.set_theme(theme)

    def shutdown(self) -> None:
        """Nothing of its own runs: the open it shows is the Workspace's (cancel_open)."""

    def publish(self) -> None:
        """No document yet: nothing to tell the selection model."""

    @property
    def path(self):
        return self.screen.path

    def place(self) -> tuple[int, int, int] | None:
        """(current line, vertical and horizontal scroll) for the tab that follows,
        where the user moved since the lines were painted (else None: the tab
        places its cursor as any opened tab does)."""
        return self.listing.moved_place()
