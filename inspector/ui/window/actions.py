"""Menus, actions and shortcuts of the main window (kept apart so the window
module stays about behaviour, not wiring)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QApplication

from inspector.ui import settings as keys
from inspector.ui.plain import plain_tip, shown

if TYPE_CHECKING:
    from inspector.ui.window.main_window import MainWindow


def _act(w: MainWindow, menu, text: str, slot, shortcut=None, tip: str = "") -> QAction:
    a = QAction(text, w)
    if shortcut is not None:
        if isinstance(shortcut, (list, tuple)):
            a.setShortcuts([QKeySequence(s) for s in shortcut])
        else:
            a.setShortcut(QKeySequence(shortcut))
    if tip:
        a.setStatusTip(tip)
    a.triggered.connect(lambda _checked=False: slot())
    menu.addAction(a)
    w.addAction(a)  # shortcuts work wherever the focus is
    return a


def _tab_call(w: MainWindow, fn):
    def call() -> None:
        tab = w.current_tab()
        if tab is not None:
            fn(tab)
    return call


def build_menus(w: MainWindow) -> None:
    bar = w.menuBar()
    file_menu = bar.addMenu("&File")
    w.act_open = _act(w, file_menu, "&Open…", w.open_dialog, QKeySequence.StandardKey.Open,
                      "Open one or more .pt2 archives")
    w.recent_menu = file_menu.addMenu("Open &Recent")
    fill_recent_menu(w)
    w.act_compare = _act(w, file_menu, "Compare &With…", w.compare_dialog, "Ctrl+Shift+C",
                         "Compare the current archive with another, side by side "
                         "(or Shift-drop a file on the window)")
    file_menu.addSeparator()
    _act(w, file_menu, "&Close Tab", lambda: w.close_tab(w.tabs.currentIndex()) if w.tabs.count() else None,
         QKeySequence.StandardKey.Close)
    _act(w, file_menu, "&Quit", w.close, QKeySequence.StandardKey.Quit)

    find_menu = bar.addMenu("&Search")
    _act(w, find_menu, "&Find…", _tab_call(w, lambda t: t.search.focus()), QKeySequence.StandardKey.Find)
    _act(w, find_menu, "Find &Next", _tab_call(w, lambda t: t.next_match(False)), ["F3"])
    _act(w, find_menu, "Find &Previous", _tab_call(w, lambda t: t.next_match(True)), ["Shift+F3"])
    find_menu.addSeparator()
    _act(w, find_menu, "Find baked &devices (device:cpu)",
         _tab_call(w, lambda t: (t.search.set_text("device:cpu"), t.search.focus())), "Ctrl+Shift+D")

    nav = bar.addMenu("&Navigate")
    _act(w, nav, "Go to &Definition", w.go_to_definition, ["F12"],
         "Jump to the node that defines the value (or Ctrl+click a name)")
    _act(w, nav, "Find &Users", lambda: w.show_users(), ["Shift+F12"],
         "Highlight every node that reads the value this line defines")
    nav.addSeparator()
    _act(w, nav, "&Back", w.go_back, ["Alt+Left"])
    _act(w, nav, "&Forward", w.go_forward, ["Alt+Right"])
    nav.addSeparator()
    _act(w, nav, "Next &Program", lambda: _cycle_program(w, 1), ["Ctrl+PgDown"])
    _act(w, nav, "Previous P&rogram", lambda: _cycle_program(w, -1), ["Ctrl+PgUp"])
    _act(w, nav, "Next &Tab", lambda: _cycle_tab(w, 1), ["Ctrl+Tab"])
    _act(w, nav, "Previous T&ab", lambda: _cycle_tab(w, -1), ["Ctrl+Shift+Tab"])
    _act(w, nav, "Focus &Listing", _tab_call(w, lambda t: t.listing.setFocus()), ["Ctrl+L"])
    _act(w, nav, "Clear &Highlights", lambda: w.selection.clear_highlight(), ["Ctrl+Shift+H"])

    w.view_menu = bar.addMenu("&View")
    # the modes first (Listing, then each dashboard panel: window.add_page inserts them)
    w.view_menu.addAction(w.modes.actions["listing"])
    w._modes_end = w.view_menu.addSeparator()
    for dock in (w.dock_modules, w.dock_details, w.dock_source, w.dock_tables):
        w.view_menu.addAction(dock.toggleViewAction())
    w.dock_modules.toggleViewAction().setShortcut(QKeySequence("Ctrl+Shift+M"))
    w.dock_details.toggleViewAction().setShortcut(QKeySequence("Ctrl+Shift+I"))
    w.dock_source.toggleViewAction().setShortcut(QKeySequence("Ctrl+Shift+S"))
    w.dock_tables.toggleViewAction().setShortcut(QKeySequence("Ctrl+Shift+T"))
    w._docks_end = w.view_menu.addSeparator()  # docked panels' entries go before it
    _act(w, w.view_menu, "Fold &Library Frames", lambda: w.details.set_fold(not w.details.fold),
         ["Ctrl+Shift+F"])
    w.view_menu.addSeparator()
    w.act_reset_layout = _act(w, w.view_menu, "&Reset Layout", w.reset_layout, None,
                              "Every pane back in its place, sized for this window")

    help_menu = bar.addMenu("&Help")
    _act(w, help_menu, "&About PT2 Inspector", lambda: _about(w))
    _act(w, help_menu, "About &Qt", QApplication.aboutQt)


def fill_recent_menu(w: MainWindow) -> None:
    menu = w.recent_menu
    menu.clear()
    files = keys.recent_files()
    for i, path in enumerate(files):
        # a path is text from the disk: plain in the menu (an & is no shortcut), and
        # an escaped tooltip (a QAction's default tooltip is its text, which a
        # tooltip would render as HTML)
        text = shown(path, 300).replace("&", "&&")
        label = f"&{i + 1}  {text}" if i < 9 else text
        a = menu.addAction(label)
        a.setToolTip(plain_tip(path))
        a.triggered.connect(lambda _c=False, p=path: w.open_archive(p))
    if files:
        menu.addSeparator()
        menu.addAction("Clear Recent Files").triggered.connect(
            lambda: (keys.clear_recent_files(), w.refresh_recent()))
    menu.setEnabled(bool(files))


def _cycle_program(w: MainWindow, step: int) -> None:
    tab = w.current_tab()
    if tab is None or tab.programs.count() < 2:
        return
    tab.programs.setCurrentIndex((tab.programs.currentIndex() + step) % tab.programs.count())


def _cycle_tab(w: MainWindow, step: int) -> None:
    if w.tabs.count():
        w.tabs.setCurrentIndex((w.tabs.currentIndex() + step) % w.tabs.count())


def _about(w: MainWindow) -> None:
    from inspector.ui.window.about import show_about  # built on first use

    show_about(w)
