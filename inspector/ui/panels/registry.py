"""The panels the window docks, in order. Adding a panel = one entry here:

    from inspector.ui.panels.registry import PanelSpec, PANELS
    PANELS.append(PanelSpec("profile", "Profile", ProfilePanel, area="bottom"))

`factory(workspace, services)` builds the panel; `services` (PanelServices) carries
what panels share (the device list). Where it goes (`area`):

- "right" / "bottom" / "left": a dock (object name `dock<Title>`, a View menu entry,
  saved layout) in a scroll area, tabbed with the Details dock ("right"), the Source
  dock ("bottom") or the module tree ("left"): HOME_PANELS, docked first and
  without a scroll area (the four that follow the cursor: Modules, Details, Source,
  Tables; registered like any other panel, written against the Workspace and its
  selection model, workspace.selection, with nothing of them in ui/window/). For what reads beside the listing
  (audit, shapes, weights). A side panel should reflow down to about 300 px wide
  (the window makes the dock no narrower than the panel's minimum size hint).
- "central": a mode of the window (a button on the mode bar, View menu, Ctrl+N): the
  whole central area, the listing's docks put away while it shows. For dashboards
  that need room (Run's chart and stats; a profile table, a diff).

The window calls the panel's `shutdown()` (when it has one) as the window closes. A panel reaches the
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
    area: str = "right"  # "right" (tabbed with Details), "bottom" (with Source), "left", "central"
    tip: str = ""  # status tip of a central panel's mode button
    home: bool = False  # the dock its area's later panels are tabbed with (no scroll area)
    # Built the first time its dock shows (its mode is chosen, for "central") or
    # someone asks for it (window.job_panels[key]), not at launch: for a panel that
    # reads the workspace's state when it is built and puts nothing on the other views
    # until it is used. The window then shows sooner
    # (issue 33: Export alone costs ~0.17 s, superqt's import; the five ~0.26 s of ~0.5 s;
    # Run ~0.13 s, pyqtgraph's import with it).
    lazy: bool = False
    # Built right after the first screen is on screen (a document's listing painted,
    # or SOON_MS after launch when none is opened), not on demand: for a panel that
    # puts something on the other views without being used (the audit's marks in
    # the listing, the memory plan's bytes in Details and the module tree), kept off
    # the way to the first screen.
    soon: bool = False


def _modules(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.modules import ModulesPanel

    return ModulesPanel(ws)


def _details(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.details import DetailsPanel

    return DetailsPanel(ws)


def _source(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.source import SourcePanel

    return SourcePanel(ws)


def _tables(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.tables import TablesPanel

    return TablesPanel(ws)


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


def _numerics(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.numerics import NumericsPanel

    return NumericsPanel(ws, services.devices)


def _shapes(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.shapes import ShapesPanel

    return ShapesPanel(ws)


def _graph(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.graph import GraphPanel

    return GraphPanel(ws)


def _weights(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.weights import WeightsPanel

    return WeightsPanel(ws)


def _memory(ws: Workspace, services: PanelServices) -> QWidget:
    from inspector.ui.panels.memory import MemoryPanel

    return MemoryPanel(ws)


# The cursor's panes, docked first (each area's home: the panels below are tabbed
# with the first of their area). The window names their docks dock_modules,
# dock_details, dock_source, dock_tables.
HOME_PANELS: list[PanelSpec] = [
    PanelSpec("modules", "Modules", _modules, "left", home=True),
    PanelSpec("details", "Details", _details, "right", home=True),
    PanelSpec("source", "Source", _source, "bottom", home=True),
    PanelSpec("tables", "Tables", _tables, "bottom", home=True),
]

PANELS: list[PanelSpec] = [
    PanelSpec("audit", "Audit", _audit, "right", soon=True),
    PanelSpec("export", "Export", _export, "right", lazy=True),
    PanelSpec("shapes", "Shapes", _shapes, "right", soon=True),
    PanelSpec("run", "Run", _run, "central",
              "time the archive's generator on a device, charted live", lazy=True),
    PanelSpec("weights", "Weights", _weights, "bottom", lazy=True),
    PanelSpec("profile", "Profile", _profile, "bottom", lazy=True),
    PanelSpec("numerics", "Numerics", _numerics, "bottom", lazy=True),
    PanelSpec("graph", "Graph", _graph, "right", lazy=True),
    PanelSpec("memory", "Memory", _memory, "bottom", soon=True),
]
