"""Dock the registered panels (inspector/ui/panels/registry.py) into the main window.

The window calls `install_panels(window, workspace)` once, at construction. Nothing
heavy happens here: no child process starts until a panel is used (the device list is
asked for the first time a panel offering devices is shown), and the audit runs when an
archive opens. When the window closes, every panel's child process and task is stopped.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import QDockWidget, QWidget

from inspector.ui.device_list import DeviceSource
from inspector.ui.panels import registry
from inspector.ui.panels.registry import PanelServices
from inspector.ui.workspace import Workspace

if TYPE_CHECKING:
    from inspector.ui.window.main_window import MainWindow

log = logging.getLogger(__name__)

AREAS = {
    "right": Qt.DockWidgetArea.RightDockWidgetArea,
    "bottom": Qt.DockWidgetArea.BottomDockWidgetArea,
    "left": Qt.DockWidgetArea.LeftDockWidgetArea,
}


class DockedPanels:
    """The window's panels by key (`panels.audit`, `panels["run"]`) and their docks."""

    def __init__(self, devices: DeviceSource) -> None:
        self.devices = devices
        self.panels: dict[str, QWidget] = {}
        self.docks: dict[str, QDockWidget] = {}  # panels of the areas around the listing
        self.pages: dict[str, QWidget] = {}  # "central" panels: modes of the window

    def __getattr__(self, key: str) -> Any:
        panels = self.__dict__.get("panels", {})
        if key in panels:
            return panels[key]
        raise AttributeError(key)

    def __getitem__(self, key: str) -> QWidget:
        return self.panels[key]

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
    for spec in registry.PANELS:  # read now: a panel registered before the window counts
        try:
            panel = spec.factory(workspace, services)
        except Exception:  # a broken panel must not take the window down
            log.exception("building panel %s failed", spec.key)
            continue
        docked.panels[spec.key] = panel
        if spec.area == "central":  # a dashboard: a mode of the window, not a dock
            window.add_page(spec.key, spec.title, panel, spec.tip)
            docked.pages[spec.key] = panel
        else:
            docked.docks[spec.key] = window.add_panel(spec.title, panel, AREAS[spec.area])
    window.dock_source.raise_()
    window.dock_details.raise_()
    window.installEventFilter(_CloseWatcher(window, docked))
    app = QCoreApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(docked.shutdown)
    return docked
