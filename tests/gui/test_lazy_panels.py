"""Lazy panels (PanelSpec.lazy, issue 33's startup): built when their dock first shows
or when asked for by key, never at launch; built late, a panel starts from the
workspace as it is (the archive already open), and is built once."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QLabel

from inspector.ui.panels import registry
from inspector.ui.window.main_window import MainWindow
from inspector.ui.workspace import Workspace

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "toy-tiny.pt2"


def _settle() -> None:
    for _ in range(5):
        QApplication.processEvents()


def _shown_window(qtbot) -> MainWindow:
    w = MainWindow(remember=False)
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    _settle()
    return w


@pytest.fixture
def demo_window(qtbot):
    """A shown window with the demo archive open (closed after the test)."""
    w = _shown_window(qtbot)
    with qtbot.waitSignal(w.loadsFinished, timeout=60000):
        w.open_archive(DEMO)
    yield w
    w.close()


def test_a_lazy_panel_is_built_on_first_show_from_the_workspace_as_it_is(qtbot, monkeypatch):
    built: list[str | None] = []

    class Probe(QLabel):
        def __init__(self, ws: Workspace) -> None:
            super().__init__("probe")
            built.append(ws.current_path())

    monkeypatch.setattr(registry, "PANELS", [*registry.PANELS, registry.PanelSpec(
        "probe", "Probe", lambda ws, services: Probe(ws), "bottom", lazy=True)])
    w = _shown_window(qtbot)
    try:
        assert built == []  # not at launch
        assert not w.job_panels.is_built("probe") and "probe" in w.job_panels
        assert "Probe" in [a.text() for a in w.view_menu.actions()]  # its dock is there
        with qtbot.waitSignal(w.loadsFinished, timeout=60000):
            w.open_archive(DEMO)
        assert built == []
        dock = w.job_panels.docks["probe"]
        dock.show()
        dock.raise_()  # the user clicks its tab
        qtbot.waitUntil(lambda: built != [], timeout=5000)
        assert built == [str(DEMO)] or Path(built[0]).resolve() == DEMO.resolve()
        probe = w.job_panels["probe"]
        assert isinstance(probe, Probe) and dock.widget().widget() is probe
        assert w.show_panel("probe") is probe
        assert len(built) == 1  # once
    finally:
        w.close()


def test_the_heavy_panels_wait_for_their_tab(qtbot):
    lazy = [spec.key for spec in registry.PANELS if spec.lazy]
    assert {"export", "weights", "graph"} <= set(lazy)
    w = _shown_window(qtbot)
    try:
        assert [k for k in lazy if w.job_panels.is_built(k)] == []
        with qtbot.waitSignal(w.loadsFinished, timeout=60000):
            w.open_archive(DEMO)  # before any of them is built
        for key in [k for k in lazy if k in w.job_panels.docks]:
            dock = w.job_panels.docks[key]
            dock.show()
            dock.raise_()
            qtbot.waitUntil(lambda k=key: w.job_panels.is_built(k), timeout=5000)
            panel = w.job_panels[key]
            assert dock.widget().widget() is panel
            assert dock.minimumWidth() >= 220 or dock.minimumHeight() >= 90
        # built after the archive opened, they show it (the Weights panel its weights)
        model = w.job_panels["weights"].model
        qtbot.waitUntil(lambda: model.rowCount() > 0, timeout=30000)
        for key in ("profile", "numerics"):
            assert DEMO.name in w.job_panels[key].archive_label.text()
    finally:
        w.close()


def test_a_lazy_mode_is_built_when_first_chosen_and_shows_the_open_archive(demo_window):
    spec = next(spec for spec in registry.PANELS if spec.key == "run")
    assert spec.lazy and spec.area == "central"
    w = demo_window
    assert not w.job_panels.is_built("run")
    action = w.modes.actions["run"]
    assert action.shortcut().toString() == "Ctrl+2"  # its button is there from launch
    action.trigger()  # the user clicks the mode button
    assert w.job_panels.is_built("run")
    run = w.job_panels["run"]
    assert w.modes.stack.currentWidget() is run and w.modes.widget("run") is run
    assert w.modes.stack.count() == len(w.modes.pages)  # the placeholder is gone
    # built after the archive opened, it offers that archive to run
    assert Path(run.archive_box.currentData()).resolve() == DEMO.resolve()
    w.set_mode("listing")
    w.set_mode("run")
    assert w.job_panels["run"] is run  # built once


def test_the_memory_chart_is_made_when_it_first_shows_and_draws_the_plan(qtbot, demo_window):
    w = demo_window
    memory = w.job_panels["memory"]
    qtbot.waitUntil(lambda: memory.plan is not None, timeout=30000)
    assert not memory.chart.is_built  # its dock is behind Source: no plot yet
    plan = memory.plan
    memory.budget.setValue(0.5)  # told before the plot exists
    w.show_panel("memory")
    qtbot.waitUntil(lambda: memory.chart.is_built, timeout=5000)
    items = memory.chart.items
    _x, y = items.curve.getData()
    assert [int(round(v * (1 << 20))) for v in y] == memory.plan.live_bytes.tolist()
    assert memory.plan.live_bytes.tolist() == plan.live_bytes.tolist()
    assert int(items.peak_dot.getData()[0][0]) == plan.peak_index
    assert items.budget_line.isVisible()
    assert items.budget_line.value() == pytest.approx(0.5 * 1024)


def test_the_tables_fill_when_their_tab_is_in_front_and_catch_up(qtbot, demo_window):
    w = demo_window
    tables = w.tables
    assert tables.signature.rowCount() == 0  # behind Source: not filled yet
    w.dock_tables.raise_()  # the user clicks its tab
    program = w.current_tab().view.program
    want = len(program.input_specs) + len(program.output_specs)
    qtbot.waitUntil(lambda: tables.signature.rowCount() == want, timeout=5000)
    assert tables.records.rowCount() == len(w.current_tab().doc.archive.records)
    names = {tables.signature.item(r, 2).text() for r in range(want)}
    assert names == {s.name for s in [*program.input_specs, *program.output_specs]}


def test_the_audit_and_the_memory_plan_start_after_the_first_screen_painted(qtbot, monkeypatch):
    """Work for what the first screen does not show waits for its paint: a Python task
    on the pool holds the GIL against the GUI thread that paints the listing."""
    from inspector.ui.panels import audit as audit_panel
    from inspector.ui import workspace as workspace_module
    from inspector.ui.panels import memory as memory_panel

    events: list[str] = []

    def recorded(name, fn):
        def run(*args, **kwargs):
            events.append(name)  # on the worker thread, when the task starts
            return fn(*args, **kwargs)
        return run

    monkeypatch.setattr(audit_panel, "audit_opened", recorded("audit", audit_panel.audit_opened))
    monkeypatch.setattr(memory_panel, "build_model", recorded("memory", memory_panel.build_model))
    # the gate's fallback (a tab never painted) must not open it on a loaded machine
    monkeypatch.setattr(workspace_module, "PAINT_WAIT_MS", 60_000)
    w = _shown_window(qtbot)
    try:
        w.workspace.documentOpened.connect(
            lambda doc: doc.listingPainted.connect(lambda: events.append("painted")))
        w.open_archive(DEMO)
        qtbot.waitUntil(lambda: {"audit", "memory"} <= set(events), timeout=60000)
        assert events.index("painted") < events.index("audit")
        assert events.index("painted") < events.index("memory")
        assert events.count("audit") == 1  # the one asked for twice at open ran once
        memory = w.job_panels["memory"]
        qtbot.waitUntil(lambda: memory.plan is not None, timeout=30000)
    finally:
        w.close()


def test_the_soon_panels_are_built_after_the_first_screen_without_a_click(qtbot, monkeypatch):
    from inspector.ui import workspace as workspace_module
    from inspector.ui.window import docks as docks_module

    soon = [spec.key for spec in registry.PANELS if spec.soon]
    assert {"audit", "memory", "shapes"} <= set(soon)
    # only the first paint may build them here, not the fallback timer
    monkeypatch.setattr(docks_module, "SOON_MS", 60_000)
    monkeypatch.setattr(workspace_module, "PAINT_WAIT_MS", 60_000)
    w = _shown_window(qtbot)
    try:
        assert [k for k in soon if w.job_panels.is_built(k)] == []  # not at launch
        painted: list[bool] = []
        w.workspace.documentOpened.connect(lambda doc: doc.listingPainted.connect(
            lambda: painted.append([k for k in soon if w.job_panels.is_built(k)] == [])))
        w.open_archive(DEMO)
        qtbot.waitUntil(lambda: all(w.job_panels.is_built(k) for k in soon), timeout=60000)
        assert painted and painted[0]  # none was built before the first paint
        # what they publish reaches the listing with their tabs still behind Details
        tab = w.current_tab()
        qtbot.waitUntil(lambda: bool(tab.listing.line_marks()), timeout=60000)
        report = w.job_panels.audit.report
        assert report is not None and report.path == str(DEMO)
        lines = {f.line for f in report.findings if f.line is not None
                 and f.program == tab.view.name}
        assert lines and lines <= set(tab.listing.line_marks())
    finally:
        w.close()


def test_the_soon_panels_are_built_on_an_empty_window_too(qtbot, monkeypatch):
    from inspector.ui.window import docks as docks_module

    monkeypatch.setattr(docks_module, "SOON_MS", 50)
    w = _shown_window(qtbot)
    try:
        soon = [spec.key for spec in registry.PANELS if spec.soon]
        qtbot.waitUntil(lambda: all(w.job_panels.is_built(k) for k in soon), timeout=10000)
    finally:
        w.close()
