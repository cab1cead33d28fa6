"""Modes of the main window: the listing (archive tabs with their docks around them)
and one mode per dashboard panel (registry area "central", e.g. Run) that needs the
whole window: its chart axes, stats table and buttons in view without scrolling.

A mode is a page of the window's central stack plus the set of docks shown with it.
Switching remembers which docks the mode left had open and shows the ones the new
mode had (none, the first time a dashboard opens), so a dashboard never shares its
room with the listing's side panes, and going back restores them. The window's saved
state is always taken in the listing mode (closeEvent switches back first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QDockWidget, QFrame, QScrollArea, QStackedWidget, QToolBar, QWidget

if TYPE_CHECKING:
    from inspector.ui.window.main_window import MainWindow

LISTING = "listing"


class Modes(QObject):
    changed = Signal(str)  # the mode's key
    about_to_show = Signal(str)  # a mode's key, before its page becomes current

    def __init__(self, window: MainWindow, listing_page: QWidget) -> None:
        super().__init__(window)
        self.window = window
        self.stack = QStackedWidget(window)
        self.stack.setObjectName("modeStack")
        self.bar = QToolBar("Modes", window)
        self.bar.setObjectName("modeBar")
        self.bar.setMovable(False)
        self.bar.setFloatable(False)
        self.bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.bar.toggleViewAction().setEnabled(False)  # the only way to switch modes
        self.group = QActionGroup(self)
        self.group.setExclusive(True)
        self.pages: dict[str, QWidget] = {}
        self.actions: dict[str, QAction] = {}
        self._docks_of: dict[str, set[str]] = {}
        self._listing_state = None
        self.current = LISTING
        self.add(LISTING, "Listing", listing_page, "the archive's listing with its panes")

    def add(self, key: str, title: str, widget: QWidget, tip: str = "",
            scroll: bool = False) -> QAction:
        """A page for `widget` with a mode button and Ctrl+N. A dashboard gets the
        whole central area and lays itself out in it (its minimum size must fit
        1024x700); `scroll=True` puts it in a scroll area instead (a scroll area
        sizes word-wrapping panels by their preferred height: it scrolls early)."""
        page = widget
        if scroll:
            page = QScrollArea(self.window)
            page.setObjectName(f"pageScroll{title.replace(' ', '')}")
            page.setWidgetResizable(True)
            page.setFrameShape(QFrame.Shape.NoFrame)
            page.setWidget(widget)
        self.stack.addWidget(page)
        self.pages[key] = page
        self._docks_of[key] = set()
        action = QAction(title, self)
        action.setCheckable(True)
        action.setChecked(key == self.current)
        n = len(self.actions) + 1
        if n <= 9:
            action.setShortcut(QKeySequence(f"Ctrl+{n}"))
        action.setToolTip(f"{title} ({action.shortcut().toString()})" if n <= 9 else title)
        action.setStatusTip(tip)
        action.triggered.connect(lambda _c=False, k=key: self.set_mode(k))
        self.group.addAction(action)
        self.bar.addAction(action)
        self.window.addAction(action)
        self.actions[key] = action
        return action

    def replace(self, key: str, widget: QWidget) -> None:
        """Put `widget` on mode `key`'s page in place of what it held (a lazy
        dashboard's placeholder, PanelSpec.lazy): same place in the stack, same button."""
        old = self.pages[key]
        index = self.stack.indexOf(old)
        self.stack.insertWidget(index, widget)
        self.pages[key] = widget
        if self.stack.currentWidget() is old:
            self.stack.setCurrentWidget(widget)
        self.stack.removeWidget(old)
        old.deleteLater()

    def widget(self, key: str) -> QWidget:
        page = self.pages[key]
        return page.widget() if isinstance(page, QScrollArea) else page

    def set_mode(self, key: str) -> None:
        if key not in self.pages:
            raise KeyError(key)
        self.actions[key].setChecked(True)
        if key == self.current:
            return
        w = self.window
        docks = [d for d in w.findChildren(QDockWidget) if d.parent() is w]
        if self.current == LISTING:
            # all of it (sizes, tabs on top, floating ones): restored exactly on return
            self._listing_state = w.saveState()
        else:
            self._docks_of[self.current] = {d.objectName() for d in docks
                                            if d.toggleViewAction().isChecked()}
        self.current = key
        self.about_to_show.emit(key)  # a lazy dashboard is built now, before it shows
        self.stack.setCurrentWidget(self.pages[key])
        if key == LISTING:
            if self._listing_state is not None:
                w.restoreState(self._listing_state)
        else:
            wanted = self._docks_of.get(key) or set()
            for d in docks:
                d.setVisible(d.objectName() in wanted)
        self.changed.emit(key)
