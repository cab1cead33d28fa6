"""Dock the job panels (Audit, Export, Run) into the main window.

The window calls `install_panels(window)` once, at construction. Nothing heavy happens
here: no child process starts until a panel is used (the device list is asked for the
first time a panel offering devices is shown), and the audit runs when an archive opens.
When the window closes, every panel's child process and worker thread is stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt

from inspector.ui.panels.audit import AuditPanel
from inspector.ui.device_list import DeviceSource
from inspector.ui.panels.export import ExportPanel
from inspector.ui.panels.run import RunPanel


@dataclass
class JobPanels:
    devices: DeviceSource
    audit: AuditPanel
    export: ExportPanel
    run: RunPanel
    docks: dict[str, Any]

    def shutdown(self) -> None:
        """Stop every child and worker (idempotent)."""
        for part in (self.export, self.run, self.audit, self.devices):
            try:
                part.shutdown()
            except RuntimeError:  # its C++ side is already gone
                pass


class _CloseWatcher(QObject):
    """Stops the panels' children when the window closes: an export or a GPU run
    must not outlive the window that started it."""

    def __init__(self, window: Any, panels: JobPanels) -> None:
        super().__init__(window)
        self.panels = panels

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Close:
            self.panels.shutdown()
        return False


def install_panels(window: Any) -> JobPanels:
    right = Qt.DockWidgetArea.RightDockWidgetArea
    bottom = Qt.DockWidgetArea.BottomDockWidgetArea
    devices = DeviceSource(window)
    audit = AuditPanel(window, devices)
    export = ExportPanel(window, devices)
    run = RunPanel(window, devices)
    docks = {
        "audit": window.add_panel("Audit", audit, right),
        "export": window.add_panel("Export", export, right),
        "run": window.add_panel("Run", run, bottom),
    }
    # The run chart wants width: share the bottom area with the source pane.
    source_dock = getattr(window, "dock_source", None)
    if source_dock is not None:
        window.tabifyDockWidget(source_dock, docks["run"])
        source_dock.raise_()
    panels = JobPanels(devices, audit, export, run, docks)
    window.installEventFilter(_CloseWatcher(window, panels))
    app = QCoreApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(panels.shutdown)
    window.job_panels = panels  # for tests, benchmarks and menu actions
    return panels
