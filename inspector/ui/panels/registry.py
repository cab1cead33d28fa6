"""The panels the window docks, in order. Adding a panel = one entry here:

    from inspector.ui.panels.registry import PanelSpec, PANELS
    PANELS.append(PanelSpec("profile", "Profile", ProfilePanel, area="bottom"))

`factory(workspace, services)` builds the panel; `services` (PanelServices) carries
what panels share (the device list). The window wraps each panel in a scroll area
and a dock (object name `dock<Title>`, a View menu entry, saved layout), tabs it with
the Details dock (area "right") or the Source dock (area "bottom"), and calls the
panel's `shutdown()` (when it has one) as the window closes. A panel reaches the
window only through the Workspace: `ws.current`, `ws.open(path)`, `ws.select_node(...)`,
`ws.annotate(...)` for gutter marks and heat.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QWidget

from inspector.ui.device_list import DeviceSource

if TYPE_CHECKING:
    from inspector.ui.workspace import Workspace


@dataclass
class PanelServices:
    """Shared by the panels of one window (one devices job for all of them)."""

    devices: DeviceSource | None = None


@dataclass(frozen=True)
class PanelSpec:
    key: str  # window.job_panels[key]; also the settings/dock name
    title: str  # dock title and View menu entry
    factory: Callable[[Workspace, PanelServices], QWidget]
    area: str = "right"  # "right" (tabbed with Details), "bottom" (with Source), "left"


def _audit(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.audit import AuditPanel

    return AuditPanel(ws, services.devices)


def _export(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.export import ExportPanel

    return ExportPanel(ws, services.devices)


def _run(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.run import RunPanel

    return RunPanel(ws, services.devices)


def _profile(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.profile import ProfilePanel

    return ProfilePanel(ws, services.devices)


def _shapes(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.shapes import ShapesPanel

    return ShapesPanel(ws)


PANELS: list[PanelSpec] = [
    PanelSpec("audit", "Audit", _audit, "right"),
    PanelSpec("export", "Export", _export, "right"),
    PanelSpec("shapes", "Shapes", _shapes, "right"),
    PanelSpec("run", "Run", _run, "bottom"),
    PanelSpec("profile", "Profile", _profile, "bottom"),
]
