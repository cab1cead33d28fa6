"""Dock the registered panels (inspector/ui/panels/registry.py) into the main window.

The window calls `install_panels(window, workspace)` once, at construction. Nothing
heavy happens here: no child process starts until a panel is used (the device list is
asked for the first time a panel offering devices is shown), and the audit runs when an
archive opens. A lazy panel (PanelSpec.lazy) is not even built: its dock holds an empty
placeholder until the dock first shows or the panel is asked for by key. A soon panel
(PanelSpec.soon) waits the same way, and is built anyway once the first screen is on
screen. When the window closes, every panel's child process and task is stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QWidget

from inspector.ui.device_list import DeviceSource
from inspector.ui.panels import registry
from inspector.ui.panels.registry import PanelServices
from inspector.ui.workspace import Workspace

if TYPE_CHECKING:
    from inspector.ui.window.main_window import MainWindow

log = logging.getLogger(__name__)

# A soon panel is built at the latest this long after launch (no archive opened,
# or its listing never painted).
SOON_MS = 1500

AREAS = {
    "right": Qt.DockWidgetArea.RightDockWidgetArea,
    "bottom": Qt.DockWidgetArea.BottomDockWidgetArea,
    "left": Qt.DockWidgetArea.LeftDockWidgetArea,
}


class DockedPanels:
    """The window's panels by key (`panels.audit`, `panels["run"]`) and their docks.
    Asking for a lazy panel that is not built yet builds it."""

    def __init__(self, devices: DeviceSource) -> None:
        self.devices = devices
        self.panels: dict[str, QWidget] = {}  # the panels built so far
        self.docks: dict[str, QDockWidget] = {}  # panels of the areas around the listing
        self.pages: dict[str, QWidget] = {}  # "central" panels: modes of the window
        self._unbuilt: dict[str, Callable[[], QWidget | None]] = {}  # lazy key -> builder

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __getitem__(self, key: str) -> QWidget:
        self.build_pending(key)
        return self.panels[key]

    def build_pending(self, key: str) -> None:
        """Build lazy panel `key` if it is not built yet (a failed build is logged and
        not tried again: its dock stays empty)."""
        build = self.__dict__.get("_unbuilt", {}).pop(key, None)
        if build is not None:
            panel = build()
            if panel is not None:
                self.panels[key] = panel

    def __contains__(self, key: str) -> bool:
        return key in self.panels or key in self._unbuilt

    def is_built(self, key: str) -> bool:
        return key in self.panels

    def shutdown(self) -> None:
        """Stop every child and task (idempotent)."""
        for part in [*self.panels.values(), self.devices]:
            stop = getattr(part, "shutdown", None)
            if stop is None:
                continue
            try:
                stop()
            except RuntimeError:  # its C++ side is already gone
                pass


class _CloseWatcher(QObject):
    """Stops the panels' children when the window closes: an export or a GPU run
    must not outlive the window that started it."""

    def __init__(self, window: QWidget, panels: DockedPanels) -> None:
        super().__init__(window)
        self.panels = panels

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Close:
            self.panels.shutdown()
        return False


def install_home_panels(window: MainWindow, workspace: Workspace
                        ) -> dict[str, tuple[QWidget, QDockWidget]]:
    """The registry's HOME_PANELS (Modules, Details, Source, Tables), docked first:
    key -> (panel, dock). They follow the selection model on their own; a failure
    to build one is the window's (no window without its Details)."""
    services = PanelServices(None)
    home: dict[str, tuple[QWidget, QDockWidget]] = {}
    for spec in registry.HOME_PANELS:
        panel = spec.factory(workspace, services)
        home[spec.key] = (panel, window.dock_home(spec.title, panel, AREAS[spec.area]))
    return home


def install_panels(window: MainWindow, workspace: Workspace) -> DockedPanels:
    devices = DeviceSource(window)
    docked = DockedPanels(devices)
    services = PanelServices(devices)
    soon: list[str] = []
    for spec in registry.PANELS:  # read now: a panel registered before the window counts
        if spec.soon:
            soon.append(spec.key)
        if spec.lazy or spec.soon:
            if spec.area == "central":
                _page_unbuilt(window, workspace, services, docked, spec)
            else:
                _dock_unbuilt(window, workspace, services, docked, spec)
            continue
        panel = _build(spec, workspace, services)
        if panel is None:
            continue
        docked.panels[spec.key] = panel
        if spec.area == "central":  # a dashboard: a mode of the window, not a dock
            window.add_page(spec.key, spec.title, panel, spec.tip)
            docked.pages[spec.key] = panel
        else:
            docked.docks[spec.key] = window.add_panel(spec.title, panel, AREAS[spec.area])
    window.dock_source.raise_()
    window.dock_details.raise_()
    _build_after_first_screen(window, workspace, docked, soon)
    window.installEventFilter(_CloseWatcher(window, docked))
    app = QCoreApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(docked.shutdown)
    return docked


def _build_after_first_screen(window: MainWindow, workspace: Workspace, docked: DockedPanels,
                              keys: list[str]) -> None:
    """Build the soon panels `keys` once a document's listing has painted (after the
    paint, from the event loop), or SOON_MS from now, whichever comes first."""
    if not keys:
        return

    def build() -> None:
        for key in keys:
            docked.build_pending(key)  # once: a built panel is not built again

    def opened(doc: Any) -> None:
        doc.listingPainted.connect(lambda: QTimer.singleShot(0, window, build))

    workspace.documentOpened.connect(opened)
    QTimer.singleShot(SOON_MS, window, build)


def _build(spec: registry.PanelSpec, workspace: Workspace, services: PanelServices
           ) -> QWidget | None:
    try:
        return spec.factory(workspace, services)
    except Exception:  # a broken panel must not take the window down
        log.exception("building panel %s failed", spec.key)
        return None


def _dock_unbuilt(window: MainWindow, workspace: Workspace, services: PanelServices,
                  docked: DockedPanels, spec: registry.PanelSpec) -> None:
    """A dock (title, View menu entry, saved layout, tab) for a lazy panel, holding an
    empty placeholder; the panel is built in its place when the dock first shows or
    docked[key] asks for it, whichever comes first."""
    placeholder = QWidget()
    placeholder.setObjectName(f"unbuilt{spec.title.replace(' ', '')}")
    area = AREAS[spec.area]
    dock = window.add_panel(spec.title, placeholder, area)
    docked.docks[spec.key] = dock

    def build() -> QWidget | None:
        dock.visibilityChanged.disconnect(on_visible)
        panel = _build(spec, workspace, services)
        if panel is not None:
            scroll = dock.widget()
            scroll.setWidget(panel)  # the placeholder goes with Qt's ownership rules
            window.fit_dock(dock, panel, area)
        return panel

    def on_visible(visible: bool) -> None:
        if visible:
            docked.build_pending(spec.key)

    docked._unbuilt[spec.key] = build
    dock.visibilityChanged.connect(on_visible)


def _page_unbuilt(window: MainWindow, workspace: Workspace, services: PanelServices,
                  docked: DockedPanels, spec: registry.PanelSpec) -> None:
    """A mode (button, View menu entry, Ctrl+N) for a lazy dashboard, its page an
    empty placeholder; the panel is built in its place when the mode is first chosen
    or docked[key] asks for it, whichever comes first."""
    placeholder = QWidget()
    placeholder.setObjectName(f"unbuilt{spec.title.replace(' ', '')}")
    window.add_page(spec.key, spec.title, placeholder, spec.tip)
    modes = window.modes

    def build() -> QWidget | None:
        modes.about_to_show.disconnect(on_mode)
        panel = _build(spec, workspace, services)
        if panel is not None:
            modes.replace(spec.key, panel)
            docked.pages[spec.key] = panel
        return panel

    def on_mode(key: str) -> None:
        if key == spec.key:
            docked.build_pending(spec.key)

    docked._unbuilt[spec.key] = build
    modes.about_to_show.connect(on_mode)
