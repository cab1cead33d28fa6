"""The Memory panel on the real tiny toy, in the real window (offscreen).

The chart must draw the plan the `memory` command prints (core/memory_plan.py, checked
against torch in tests/jobs/test_memory_plan_torch.py): the curve's points are the
plan's live bytes, at the spin boxes' values, redrawn as soon as one changes (no event
loop in between); a click on the chart selects the nearest node through the selection
model; the node the listing is on is marked; the budget line and the verdict follow
the budget box; the gutter and the module tree get the bytes (the "memory" layer).
Deliberate breaks: replan() drawing the traced plan whatever the spin boxes say fails
test_spin_boxes_redraw_at_once; a click index off by one fails the click test.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

from inspector.core.archive import open_archive
from inspector.core.memory_report import model_for
from inspector.ui.panels.memory import MIB, SOURCE


@pytest.fixture
def panel(qtbot, window, toy_tab):
    p = window.show_panel("memory")
    qtbot.waitUntil(lambda: p.plan is not None, timeout=30000)
    return p


def _curve_bytes(panel) -> list[int]:
    _x, y = panel.chart.items.curve.getData()
    return [int(round(v * MIB)) for v in y]


def test_chart_draws_the_commands_plan(panel, toy_archive, window):
    assert panel.program == "decoder"
    with open_archive(toy_archive) as ar:
        model = model_for(ar.program("decoder"), ar)
    want = model.plan()
    assert _curve_bytes(panel) == want.live_bytes.tolist()
    assert set(panel.spins) == {"s70", "s72"}
    assert panel.dims() == want.dims
    assert f"peak {panel.summary.text().split('peak ')[1].split(' at ')[0]}" in panel.summary.text()
    assert want.peak_node() in panel.summary.text()
    px, py = panel.chart.items.peak_dot.getData()
    assert int(px[0]) == want.peak_index
    # bytes in the gutter (heat per node) and per module
    layer = next(lay for lay in window.current_tab().doc.annotations.layers("decoder")
                 if lay.source == SOURCE)
    assert set(layer.heat) == set(model.node_names)
    assert layer.heat[want.peak_node()].value == want.peak_bytes
    assert layer.modules and window.modules.tree.headerItem().text(3) == "Bytes"


def test_spin_boxes_redraw_at_once(panel, toy_archive):
    with open_archive(toy_archive) as ar:
        model = model_for(ar.program("decoder"), ar)
    before = _curve_bytes(panel)
    panel.spins["s72"].setValue(16)  # no event loop between: the curve is already new
    panel.spins["s70"].setValue(200)
    after = _curve_bytes(panel)
    assert after != before
    assert after == model.plan({"s72": 16, "s70": 200}).live_bytes.tolist()


def test_budget_line_and_verdict(panel):
    assert not panel.chart.items.budget_line.isVisible()
    panel.budget.setValue(0.001 * 1024)  # ~1 GiB: the tiny toy fits
    assert panel.chart.items.budget_line.isVisible()
    assert panel.chart.items.budget_line.value() == pytest.approx(panel.budget_bytes() / MIB)
    assert "fits in" in panel.summary.text() and "does not fit" not in panel.summary.text()
    assert "largest that fit" in panel.summary.text()
    panel.budget.setValue(0.0)
    assert not panel.chart.items.budget_line.isVisible() and "fits" not in panel.summary.text()


def test_a_click_selects_the_node_and_the_chart_follows_the_cursor(qtbot, panel, window):
    plan = panel.plan
    i = plan.peak_index
    vb = panel.chart.items.plot.getPlotItem().vb
    scene = vb.mapViewToScene(QPointF(float(i), float(plan.live_bytes[i]) / MIB / 2))
    pos = panel.chart.items.plot.mapFromScene(scene)
    QTest.mouseClick(panel.chart.items.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    sel = window.workspace.selection
    qtbot.waitUntil(lambda: sel.node == plan.model.node_names[i], timeout=10000)
    assert window.current_tab().listing.current_line() >= 0
    assert panel.chart.items.cursor_line.isVisible() and int(panel.chart.items.cursor_line.value()) == i
    # the listing moves elsewhere: the chart's mark follows
    other = plan.model.node_names[3]
    window.workspace.select_node("decoder", other, window.current_tab().doc)
    qtbot.waitUntil(lambda: sel.node == other, timeout=10000)
    assert int(panel.chart.items.cursor_line.value()) == 3


def test_the_encoder_and_back(qtbot, panel, window):
    panel.programs.setCurrentText("encoder")
    qtbot.waitUntil(lambda: panel.plan is not None and panel.program == "encoder", timeout=30000)
    assert set(panel.spins) == {"s99"}
    assert np.all(panel.plan.live_bytes >= panel.plan.baseline_bytes)
