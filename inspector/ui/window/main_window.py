"""The main window: a tab per Workspace document, docks that follow the current tab,
menus, opening (args, File > Open, drag-and-drop, recent files), Back/Forward, and
the docks of the registered panels (inspector/ui/panels/registry.py).

The window is a client of its Workspace (inspector/ui/workspace.py): the workspace
reads archives and programs off the GUI thread and says when they are ready; the
window shows them, paints marksChanged, and follows the selection model
(workspace.selection: where the user is, what is highlighted, Back/Forward), which
the archive tabs publish into and obey.

The window process never imports torch: archives are read by inspector.core
(zip + JSON), and torch work happens in child processes (inspector.jobs).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSize, Qt, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QGuiApplication
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QFrame,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QScrollArea,
    QStackedWidget,
    QTabBar,
    QTabWidget,
    QWidget,
)

from inspector.core.annotations import AnnotationLayer, Mark
from inspector.core.document import ProgramView
from inspector.core.selection import node_line
from inspector.ui import settings as keys
from inspector.ui.plain import ElidedLabel, message_box, plain_label, plain_tip
from inspector.ui.selection import HIGHLIGHT, MODULE_CHANGED, PLACE, REQUEST
from inspector.ui.widgets.theme import current_theme
from inspector.ui.window.actions import build_menus, fill_recent_menu
from inspector.ui.window.archive_tab import ArchiveTab
from inspector.ui.window.first_screen_tab import FirstScreenTab
from inspector.ui.window.docks import DockedPanels, install_home_panels, install_panels
from inspector.ui.window.modes import LISTING, Modes
from inspector.ui.window.tabs import as_tab, tabs_of
from inspector.ui.window.welcome import WelcomePage
from inspector.ui.workspace import Document, FirstScreen, Workspace

APP_TITLE = "PT2 Inspector"
FILE_FILTER = "PyTorch export archives (*.pt2);;All files (*)"

# Default dock sizes, as fractions of the window (and floors in pixels), so a layout
# fits 1024x700 as well as 1920x1080. The listing is what one reads: it gets the rest,
# at least LISTING_SHARE of a 1400 px window (an op line is ~90 columns).
LEFT_FRACTION, LEFT_MIN = 0.15, 180  # module tree
RIGHT_FRACTION, RIGHT_MIN = 0.21, 300  # details and the side panels
LISTING_SHARE = 0.6
# Below this width the module tree is tabbed with Details on the right (one dock
# beside the listing, not two): at 1024 px the listing keeps ~70 columns.
NARROW_WIDTH = 1200
BOTTOM_FRACTION, BOTTOM_MIN = 0.28, 130  # source, tables
LISTING_MIN_WIDTH = 320
# A saved layout is reused as it is only in a window of about the size it was saved in;
# in a window this much larger or smaller, its docks get the default fractions again.
RELAYOUT_RATIO = 1.15


class MainWindow(QMainWindow):
    archiveOpened = Signal(str)  # path, once its first program is shown
    firstScreenShown = Signal(str)  # path: a big program's first lines painted, while read
    loadsFinished = Signal()  # no archive or program is loading any more

    def __init__(self, parent: QWidget | None = None, remember: bool = True,
                 workspace: Workspace | None = None) -> None:
        """`remember=False` (screenshots): default layout, nothing saved on close."""
        super().__init__(parent)
        self.workspace = workspace or Workspace(self)
        ws = self.workspace
        self.pool = ws.pool  # every in-process task of the window runs here
        self.remember = remember
        self.setObjectName("mainWindow")
        self.setWindowTitle(APP_TITLE)
        self.setAcceptDrops(True)
        self.resize(1400, 880)
        self.last_error: QMessageBox | None = None
        self.view_menu: QMenu | None = None  # made by actions.build_menus, after the panels
        self.selection = ws.selection
        self._status_says_highlight = False  # the status bar shows the highlight's label
        self._panels: list[QDockWidget] = []
        self._home: list[tuple[QDockWidget, Qt.DockWidgetArea]] = []  # for Reset Layout

        self.stack = QStackedWidget(self)
        self.welcome = WelcomePage(self)
        self.welcome.openRequested.connect(self.open_dialog)
        self.welcome.recentRequested.connect(self.open_archive)
        self.tabs = QTabWidget(self)
        self.tabs.setObjectName("archiveTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.stack.addWidget(self.welcome)
        self.stack.addWidget(self.tabs)
        self.stack.setMinimumWidth(LISTING_MIN_WIDTH)
        self.modes = Modes(self, self.stack)
        self.setCentralWidget(self.modes.stack)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.modes.bar)

        # The cursor's panes: registered panels (panels/registry.py HOME_PANELS) that
        # follow the selection model on their own; the window only docks them.
        home = install_home_panels(self, ws)
        self.modules, self.dock_modules = home["modules"]
        self.details, self.dock_details = home["details"]
        self.source, self.dock_source = home["source"]
        self.tables, self.dock_tables = home["tables"]
        self.tabifyDockWidget(self.dock_source, self.dock_tables)
        self.dock_source.raise_()
        self.dock_modules.setMinimumWidth(140)
        for d in (self.dock_details, self.dock_source, self.dock_tables):
            d.setMinimumSize(QSize(220, 90))

        # plain text, elided: program and file names come from the archive
        self.status_label = ElidedLabel("Open a .pt2 archive (Ctrl+O) or drop one here", self)
        self.cursor_label = plain_label(QLabel("", self))
        self.progress = QProgressBar(self)
        self.progress.setRange(0, 0)  # busy: parsing has no meaningful fraction
        self.progress.setMaximumWidth(160)
        self.progress.setMaximumHeight(14)
        self.progress.hide()
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.cursor_label)

        ws.documentOpened.connect(self._opened)
        ws.firstScreenReady.connect(self._first_screen)
        ws.programFirstScreen.connect(self._program_first_screen)
        ws.openFinished.connect(lambda path: self._drop_first_screen(Path(path)))
        ws.documentClosed.connect(self._closed)  # also a stale document on reopen
        ws.currentChanged.connect(self._current_changed)
        ws.programLoaded.connect(self._program_loaded)
        ws.programIndexed.connect(self._completed)
        ws.programGrew.connect(self._grew)
        ws.openFailed.connect(lambda path, msg, det: self._failed(Path(path), msg, det))
        ws.loadFailed.connect(lambda doc, msg, det: self._failed(doc.path, msg, det))
        ws.marksChanged.connect(self._marks_changed)
        ws.frameRequested.connect(lambda _frame: (self.dock_source.show(), self.dock_source.raise_()))
        self.selection.changed.connect(self._selection_changed)
        ws.compareRequested.connect(self.open_compare)
        ws.status.connect(self.status_label.setText)
        ws.busyChanged.connect(self.progress.setVisible)
        ws.loadsFinished.connect(self.loadsFinished)

        build_menus(self)
        self.job_panels: DockedPanels = install_panels(self, ws)
        self._restored = self._restore() if remember else False  # after the panels: their docks get their places
        self._saved_size: QSize | None = self._saved_window_size() if self._restored else None
        self._update_empty()
        self.modes.changed.connect(lambda _key: self._tidy_tab_bars())
        hints = QGuiApplication.styleHints()
        hints.colorSchemeChanged.connect(lambda _s: self.apply_theme())

    # ------------------------------------------------------------------ docks
    def dock_home(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        """Dock a home panel (registry HOME_PANELS) as it is, no scroll area."""
        return self._dock(title, widget, area)

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock{title.replace(' ', '')}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self._home.append((dock, area))
        return dock

    def add_panel(self, title: str, widget: QWidget,
                  area: Qt.DockWidgetArea = Qt.DockWidgetArea.RightDockWidgetArea) -> QDockWidget:
        """Dock another helper's panel; it gets a View menu entry and its state
        is saved with the others. The panel sits in a scroll area so its minimum
        size never squeezes the listing (dock.widget().widget() is the panel)."""
        scroll = QScrollArea(self)
        scroll.setObjectName(f"panelScroll{title.replace(' ', '')}")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(widget)
        dock = self._dock(title, scroll, area)
        self.fit_dock(dock, widget, area)
        if area == Qt.DockWidgetArea.RightDockWidgetArea:
            self.tabifyDockWidget(self.dock_details, dock)
            self.dock_details.raise_()
        elif area == Qt.DockWidgetArea.BottomDockWidgetArea:
            self.tabifyDockWidget(self.dock_source, dock)
            self.dock_source.raise_()
        elif area == Qt.DockWidgetArea.LeftDockWidgetArea:
            self.tabifyDockWidget(self.dock_modules, dock)
            self.dock_modules.raise_()
        self._panels.append(dock)
        if self.view_menu is not None:  # a panel added after the menus were built
            self.view_menu.insertAction(self._docks_end, dock.toggleViewAction())
        return dock

    def fit_dock(self, dock: QDockWidget, widget: QWidget, area: Qt.DockWidgetArea) -> None:
        """A side dock never gets narrower than its panel's reflowed minimum (which
        would crop it on the right); the listing keeps LISTING_MIN_WIDTH. Again when
        a panel built on first show (PanelSpec.lazy) takes its placeholder's place."""
        hint = widget.minimumSizeHint()
        if area in (Qt.DockWidgetArea.RightDockWidgetArea, Qt.DockWidgetArea.LeftDockWidgetArea):
            dock.setMinimumWidth(max(220, min(hint.width() + 16, RIGHT_MIN)))
        else:
            dock.setMinimumHeight(max(90, min(hint.height() + 16, BOTTOM_MIN)))

    def add_page(self, key: str, title: str, widget: QWidget, tip: str = "") -> None:
        """A dashboard panel as a mode of the window (registry area "central"): the
        whole central area, the listing's docks put away while it is shown."""
        action = self.modes.add(key, title, widget, tip)
        if self.view_menu is not None:
            self.view_menu.insertAction(self._modes_end, action)

    def set_mode(self, key: str) -> None:
        """"listing" or a central panel's key."""
        self.modes.set_mode(key)

    def show_panel(self, key: str) -> QWidget:
        """Bring registered panel `key` into view (its dock raised, or its mode)."""
        if key in self.modes.pages:
            self.set_mode(key)
        else:
            self.set_mode(LISTING)
            dock = self.job_panels.docks[key]
            dock.show()
            dock.raise_()
        return self.job_panels[key]

    # ------------------------------------------------------------------ opening
    def open_dialog(self) -> None:
        start = str(keys.settings().value(keys.LAST_DIRECTORY, str(Path.home())))
        paths, _ = QFileDialog.getOpenFileNames(self, "Open archives", start, FILE_FILTER)
        for p in paths:
            self.open_archive(p)

    def open_archive(self, path: str | Path) -> None:
        """Open `path` in a new tab (or show its tab when already open)."""
        path = Path(path)
        if self.workspace.find(path) is None:
            keys.set_value(keys.LAST_DIRECTORY, str(path.parent))
        self.workspace.open(path)

    def compare_dialog(self) -> None:
        from inspector.ui.window.compare_tab import compare_dialog

        compare_dialog(self)

    def open_compare(self, path_a: str | Path, path_b: str | Path):
        """A compare tab (ui/window/compare_tab.py) for the two archives."""
        from inspector.ui.window.compare_tab import open_compare

        return open_compare(self, path_a, path_b)

    def is_loading(self) -> bool:
        return self.workspace.is_busy()

    def _tab_of(self, doc: Document | None) -> ArchiveTab | None:
        for i in range(self.tabs.count()):
            tab = self.tabs.widget(i)
            if isinstance(tab, ArchiveTab) and tab.doc is doc:
                return tab
        return None

    def _first_screen_tab(self, path: Path) -> FirstScreenTab | None:
        for i in range(self.tabs.count()):
            tab = self.tabs.widget(i)
            if isinstance(tab, FirstScreenTab) and tab.path == path:
                return tab
        return None

    def _first_screen(self, screen: FirstScreen) -> None:
        """A big program's first lines while its archive is read: a tab of their own,
        which the archive's tab replaces (_opened)."""
        if self._first_screen_tab(screen.path) is not None:
            screen.painted()
            return
        tab = FirstScreenTab(screen, self)
        path = str(screen.path)
        tab.listing.painted.connect(lambda: self.firstScreenShown.emit(path))
        index = self.tabs.addTab(tab, screen.path.name)
        self.tabs.setTabToolTip(index, plain_tip(path))
        self.tabs.setCurrentIndex(index)
        self._update_empty()
        tab.listing.setFocus()

    def _program_first_screen(self, doc: Document, screen: FirstScreen) -> None:
        """Another program of an open archive, big, picked: its first lines while read."""
        tab = self._tab_of(doc)
        if tab is None or tab.programs.currentText() != screen.program:
            screen.painted()  # closed, or another program picked meanwhile
            return
        tab.show_first_screen(screen)
        if tab is self.current_tab():
            tab.publish()  # the panels say the program is being read
            self.cursor_label.setText("")

    def _drop_first_screen(self, path: Path) -> None:
        """Its open ended without a tab taking its place (it failed)."""
        tab = self._first_screen_tab(path)
        if tab is not None:
            self.tabs.removeTab(self.tabs.indexOf(tab))
            tab.deleteLater()
            self._update_empty()

    def _opened(self, doc: Document) -> None:
        tab = ArchiveTab(doc, self)
        tab.programRequested.connect(lambda name, t=tab: self.workspace.load_program(t.doc, name))
        tab.usersRequested.connect(self.show_users)
        first = self._first_screen_tab(doc.path)
        self.tabs.setUpdatesEnabled(False)  # one paint for the swap, not three
        if first is not None:  # in its place, where its lines were read from
            index = self.tabs.insertTab(self.tabs.indexOf(first), tab, doc.path.name)
        else:
            index = self.tabs.addTab(tab, doc.path.name)
        self.tabs.setTabToolTip(index, plain_tip(str(doc.path)))
        self.tabs.setCurrentIndex(index)
        view = doc.view()
        if view is not None:
            tab.show_view(view)
        if first is not None:
            place = first.place()
            if place is not None and view is not None:  # the user moved meanwhile
                tab.listing.go_to_place(place)
            self.tabs.removeTab(self.tabs.indexOf(first))
            first.deleteLater()
        self.tabs.setUpdatesEnabled(True)
        self._update_empty()
        self._program_shown(tab)
        keys.add_recent_file(doc.path)
        self.refresh_recent()
        self.archiveOpened.emit(str(doc.path))
        tab.listing.setFocus()

    def _current_changed(self, doc: Document | None) -> None:
        tab = self._tab_of(doc)
        if tab is not None and tab is not self.tabs.currentWidget():
            self.tabs.setCurrentWidget(tab)

    def _failed(self, path: Path, message: str, details: str) -> None:
        self.status_label.setText(f"Could not open {path.name}")
        # plain text: the message quotes entry names and archive_format from the file
        box = message_box(self, QMessageBox.Icon.Warning, "Cannot open archive", message,
                          informative=str(path), details=details)
        box.setObjectName("openErrorBox")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.last_error = box
        box.open()  # window-modal, does not block the event loop

    def _program_loaded(self, doc: Document, view: ProgramView) -> None:
        tab = self._tab_of(doc)
        if tab is None:
            return  # closed meanwhile
        tab.show_view(view)
        if tab is self.current_tab():
            self._program_shown(tab)

    def _completed(self, doc: Document, view: ProgramView) -> None:
        tab = self._tab_of(doc)
        if tab is None:
            return  # closed meanwhile
        tab.view_completed(view)
        if tab is self.current_tab() and tab.view is view:
            self._program_shown(tab)

    def _marks_changed(self, doc: Document, program: str) -> None:
        tab = self._tab_of(doc)
        if tab is not None:
            tab.refresh_annotations(program)
            # (the Details and Modules panels follow marksChanged themselves)

    def close_tab(self, index: int) -> None:
        tab = self.tabs.widget(index)
        # first: the details pane holds the node and a closure over the closed view
        self.details.show_message("No node selected.")
        self.tabs.removeTab(index)
        if (answering := as_tab(tab)) is not None:
            answering.shutdown()  # its own worker first (a compare tab's)
        if isinstance(tab, ArchiveTab):
            self.workspace.close(tab.doc)  # its tasks first, then its archive; the selection forgets it
        elif isinstance(tab, FirstScreenTab):  # still read: no document is made of it
            self.workspace.cancel_open(tab.path)
        if tab is not None:
            tab.deleteLater()
        self._update_empty()

    def _closed(self, doc: Document) -> None:
        tab = self._tab_of(doc)
        if tab is not None:
            self.close_tab(self.tabs.indexOf(tab))

    def _update_empty(self) -> None:
        empty = self.tabs.count() == 0
        self.stack.setCurrentWidget(self.welcome if empty else self.tabs)
        self.welcome.set_recent(keys.recent_files())
        if empty:
            self.setWindowTitle(APP_TITLE)
            self.status_label.setText("Open a .pt2 archive (Ctrl+O) or drop one here")
            self.cursor_label.setText("")

    def refresh_recent(self) -> None:
        fill_recent_menu(self)
        self.welcome.set_recent(keys.recent_files())

    # drag-and-drop
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        files = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        current = self.current_archive_path()
        shift = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        for f in files:
            if shift and current is not None:  # Shift-drop: compare with the current tab
                self.open_compare(current, f)
            else:
                self.open_archive(f)
        if files:
            event.acceptProposedAction()

    # ------------------------------------------------------------------ state
    def current_tab(self) -> ArchiveTab | None:
        tab = self.tabs.currentWidget()
        return tab if isinstance(tab, ArchiveTab) else None

    def current_view(self) -> ProgramView | None:
        tab = self.current_tab()
        return tab.view if tab else None

    def current_archive_path(self) -> str | None:
        tab = self.current_tab()
        return str(tab.doc.path) if tab else None

    def _selection_changed(self, aspects: frozenset) -> None:
        """The window's part of following the selection model: a request shows its
        document's tab in the listing mode; a move updates the docks; a highlight's
        label is the status bar's line while it lasts."""
        sel = self.selection
        if REQUEST in aspects and sel.request is not None:
            tab = self._tab_of(sel.request.document)
            if tab is not None:
                self.set_mode(LISTING)  # a node is shown in the listing, whatever mode asked
                if tab is not self.tabs.currentWidget():
                    self.tabs.setCurrentWidget(tab)
        if PLACE in aspects:
            tab = self.current_tab()
            if tab is not None and sel.document is tab.doc and tab.view is not None \
                    and sel.program == tab.view.name:
                self._line_changed(tab, sel.line)
        if MODULE_CHANGED in aspects and sel.module is not None:
            self.dock_modules.show()  # a module picked elsewhere (a Details link) shows here
        if HIGHLIGHT in aspects:
            label = sel.label()
            if label:
                self.status_label.setText(label)
                self._status_says_highlight = True
            elif self._status_says_highlight:
                self._status_says_highlight = False
                tab = self.current_tab()
                if tab is not None and not self.is_loading():
                    self.status_label.setText(self._summary(tab))

    def select_node(self, program_name: str, node_name: str) -> bool:
        """Show `node_name` of `program_name` in the current archive's listing (the
        selection model's request); whether it is shown now (else: once its program
        is read or its line streamed in)."""
        tab = self.current_tab()
        if tab is None:
            return False
        sel = self.selection
        sel.select_node(program_name, node_name, tab.doc)
        view = tab.doc.views.get(program_name)
        if view is None or sel.request is not None:
            return False
        line = node_line(view.listing, node_name)
        return line is not None and sel.program == program_name and sel.line == line

    def _grew(self, doc: Document, view: ProgramView) -> None:
        tab = self._tab_of(doc)
        if tab is None:
            return  # closed meanwhile
        tab.view_grew(view)
        if tab is self.current_tab() and tab.view is view:
            self.cursor_label.setText(
                f"Line {tab.listing.current_line() + 1:,} of {tab.listing.line_count():,}")

    def set_line_marks(self, lines: dict[int, str], program: str | None = None) -> None:
        """Plain gutter marks (line -> severity) on the current archive's listing, as the
        "marks" annotation layer (panels publish their own layers: Workspace.annotate)."""
        tab = self.current_tab()
        name = program or (tab.view.name if tab is not None and tab.view else None)
        if tab is not None and name:
            layer = AnnotationLayer("marks", line_marks={ln: Mark(s) for ln, s in lines.items()})
            self.workspace.annotate(tab.doc, name, layer)

    def _tab_changed(self, _index: int) -> None:
        tab = self.current_tab()
        self.workspace.set_current(tab.doc if tab is not None else None)
        shown = as_tab(self.tabs.currentWidget())
        if shown is not None:
            shown.publish()  # its cursor is the selection now (a compare tab's too)
        if tab is not None:
            self._program_shown(tab)

    def _program_shown(self, tab: ArchiveTab) -> None:
        if tab is not self.current_tab():
            return
        if tab.view is None:  # an AOTInductor package of compiled code only
            if tab.doc.program_names:
                return  # its program is still being read
            self.setWindowTitle(f"{tab.doc.path.name} — {APP_TITLE}")
            self.cursor_label.setText("")
            if not self.is_loading():
                self.status_label.setText(tab.summary())
            return
        self.setWindowTitle(f"{tab.doc.path.name} — {APP_TITLE}")
        if not self.is_loading():
            self.status_label.setText(self.selection.label() or self._summary(tab))
        self._line_changed(tab, tab.listing.current_line())

    def _summary(self, tab: ArchiveTab) -> str:
        """The status bar's line about the tab's archive and program."""
        view = tab.view
        if view is None:
            return tab.summary()
        n_prog = len(tab.doc.program_names)
        return (f"{tab.doc.path.name}: {n_prog} program{'s' if n_prog != 1 else ''} · "
                f"{view.name}: {view.node_count:,} nodes, {tab.listing.line_count():,} lines "
                f"(read in {view.seconds:.2f} s)")

    def _line_changed(self, tab: ArchiveTab, line: int) -> None:
        """The status bar's cursor position (the panels follow the selection themselves)."""
        if tab is not self.current_tab() or tab.view is None:
            return
        self.cursor_label.setText(f"Line {line + 1:,} of {tab.listing.line_count():,}")

    # ------------------------------------------------------------------ links
    def show_users(self, name: str | None = None) -> list[int]:
        """Highlight every line reading `name` (default: the value the cursor
        line defines): the Details panel's users, lit up in the listing."""
        tab = self.current_tab()
        if tab is None or tab.view is None:
            return []
        return self.details.show_users(name or tab.listing.word_at_cursor() or "")

    def go_to_definition(self) -> bool:
        tab = self.current_tab()
        if tab is None:
            return False
        line = tab.listing.current_line()
        text = tab.listing.line_text(line)
        # F12 on a statement: the first value it reads; on an input, its own name
        node = tab.view.node_at(line) if tab.view else None
        names = tab.view.shown_inputs(node) if node is not None else []
        for name in names:
            if tab.go_to_definition(name, line):
                return True
        word = tab.listing.word_at_cursor()
        return bool(word and text and tab.go_to_definition(word, line))

    def _show_frame(self, frame) -> None:
        """Show `frame` in the Source panel (as the Details pane's trace does)."""
        self.workspace.show_frame(frame)

    def source_nodes(self) -> list[int]:
        """Listing lines of the nodes made by the source line the Source pane shows."""
        return self.source.source_nodes()

    # ------------------------------------------------------------------ history
    def go_back(self) -> bool:
        return self.selection.back()

    def go_forward(self) -> bool:
        return self.selection.forward()

    # ------------------------------------------------------------------ look
    def apply_theme(self) -> None:
        theme = current_theme()
        for tab in tabs_of(self.tabs):
            tab.set_theme(theme)
        self.details.set_theme(theme)
        self.source.set_theme(theme)

    def _restore(self) -> bool:
        s = keys.settings()
        geometry = s.value(keys.GEOMETRY)
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        state = s.value(keys.WINDOW_STATE)
        return isinstance(state, QByteArray) and self.restoreState(state)

    def _saved_window_size(self) -> QSize | None:
        value = keys.settings().value(keys.WINDOW_STATE_SIZE)
        return value if isinstance(value, QSize) and value.isValid() else None

    def _default_layout(self) -> None:
        """The listing gets most of the window; docks get fractions of it."""
        w, h = self.width(), self.height()
        right = max(RIGHT_MIN, int(w * RIGHT_FRACTION))
        if w < NARROW_WIDTH and not self.dock_modules.isFloating() and \
                self.dockWidgetArea(self.dock_modules) == Qt.DockWidgetArea.LeftDockWidgetArea:
            # Modules next to Details, not past the panels: a tab group adds at its
            # end, so the others leave it and come back after it
            others = [(d, d.toggleViewAction().isChecked())
                      for d in self.tabifiedDockWidgets(self.dock_details)
                      if d is not self.dock_modules and not d.isFloating()]
            for dock, _shown in others:
                self.removeDockWidget(dock)
            self.tabifyDockWidget(self.dock_details, self.dock_modules)
            for dock, shown in others:
                self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
                self.tabifyDockWidget(self.dock_details, dock)
                dock.setVisible(shown)  # a panel the user closed stays closed
            self.dock_details.raise_()
            self.resizeDocks([self.dock_details], [right], Qt.Orientation.Horizontal)
        else:
            self.resizeDocks([self.dock_modules, self.dock_details],
                             [max(LEFT_MIN, int(w * LEFT_FRACTION)), right],
                             Qt.Orientation.Horizontal)
        self.resizeDocks([self.dock_source], [max(BOTTOM_MIN, int(h * BOTTOM_FRACTION))],
                         Qt.Orientation.Vertical)

    def reset_layout(self) -> None:
        """View > Reset Layout: every dock back home (docked, shown, tabbed as at first
        start), default sizes for this window's size, the listing mode."""
        self.set_mode(LISTING)
        for dock, area in self._home:
            dock.setFloating(False)
            self.addDockWidget(area, dock)
            dock.show()
        groups: dict[Qt.DockWidgetArea, list[QDockWidget]] = {}
        for dock, area in self._home:
            groups.setdefault(area, []).append(dock)
        for docks in groups.values():
            for other in docks[1:]:
                self.tabifyDockWidget(docks[0], other)
            docks[0].raise_()
        self._default_layout()
        self._tidy_tab_bars()

    def _tidy_tab_bars(self) -> None:
        """QMainWindow makes a tab bar for each group of tabbed docks (when docks are
        tabbed, a state restored): whole titles, scroll buttons when many panels share
        an area, never "Au…". Called wherever docks are (re)arranged."""
        for bar in self.findChildren(QTabBar):
            if bar.parent() is self:  # the docks' bars, not the archive tabs
                bar.setElideMode(Qt.TextElideMode.ElideNone)
                bar.setUsesScrollButtons(True)

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self._tidy_tab_bars()
        if getattr(self, "_laid_out", False):
            return
        self._laid_out = True
        saved = self._saved_size
        if not self._restored or saved is None or _differs(saved, self.size()):
            self._default_layout()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if self.remember:
            self.set_mode(LISTING)  # the saved docks are the listing's
            s = keys.settings()
            s.setValue(keys.GEOMETRY, self.saveGeometry())
            s.setValue(keys.WINDOW_STATE, self.saveState())
            s.setValue(keys.WINDOW_STATE_SIZE, self.size())
            s.sync()
        for tab in tabs_of(self.tabs):
            tab.shutdown()  # a compare tab's worker
        self.workspace.shutdown(5000)  # never leave a parsing thread behind
        super().closeEvent(event)


def _differs(a: QSize, b: QSize) -> bool:
    """Whether two window sizes differ by more than RELAYOUT_RATIO in either direction."""
    def off(x: int, y: int) -> bool:
        lo, hi = sorted((max(1, x), max(1, y)))
        return hi / lo > RELAYOUT_RATIO
    return off(a.width(), b.width()) or off(a.height(), b.height())

