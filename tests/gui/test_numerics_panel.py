"""The Numerics panel against the real toy archive, a real job child and the real CLI:
what the window shows must be what `pt2-inspector numerics --json` says."""

from __future__ import annotations

import json
import os
import subprocess
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from _panel_helpers import ROOT, child_pids, no_leaks, wait_gone  # noqa: E402,F401
from PySide6.QtCore import Qt  # noqa: E402

JOB_TIMEOUT_MS = 300_000


@pytest.fixture
def panel(qtbot, no_leaks, window, toy_tab):
    p = window.job_panels["numerics"]
    window.job_panels.docks["numerics"].show()
    window.job_panels.docks["numerics"].raise_()
    yield p
    p.shutdown()


def choose(combo, data) -> None:
    index = combo.findData(data)
    assert index >= 0, f"{data!r} not offered"
    combo.setCurrentIndex(index)


def line_of(tab, name: str) -> int:
    return tab.view.listing.definitions[("", name)]


def test_bf16_comparison_heat_chart_answers_and_selection(qtbot, panel, window, toy_tab,
                                                          toy_archive):
    choose(panel.device, "cpu")
    choose(panel.program, "decoder")
    choose(panel.candidate, "precision:bf16")
    qtbot.waitUntil(panel.run_button.isEnabled, timeout=5000)
    with qtbot.waitSignal(panel.compared, timeout=JOB_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.runner.is_running(), timeout=10000)
    result = blocker.args[0]
    proc = subprocess.run([sys.executable, "-m", "inspector", "numerics", str(toy_archive),
                           "--device", "cpu", "--program", "decoder", "--precision", "bf16",
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:]
    expected = json.loads(proc.stdout)["programs"][0]
    (mine,) = result["programs"]
    assert [n["node"] for n in mine["nodes"]] == [n["node"] for n in expected["nodes"]]
    assert mine["first_over_tolerance"] == expected["first_over_tolerance"] is not None

    # every compared node has heat in the listing's gutter; the failing ones a mark
    heat = toy_tab.listing.line_heat()
    for n in mine["nodes"]:
        assert line_of(toy_tab, n["node"]) in heat, n["node"]
    # the chart: one point per compared node, in program order
    assert [p.name for p in panel.chart.points] == [n["node"] for n in mine["nodes"]]
    assert panel.failing.topLevelItemCount() == mine["failing"]

    # the first divergence is a click away, and the chart follows the selection
    go = panel.findChild(type(panel.clear_button), "numericsGo0")
    assert go is not None
    qtbot.mouseClick(go, Qt.MouseButton.LeftButton)
    first = mine["first_over_tolerance"]
    qtbot.waitUntil(lambda: toy_tab.listing.current_line() == line_of(toy_tab, first))
    qtbot.waitUntil(lambda: panel.chart.cursor.isVisible())
    index = next(i for i, n in enumerate(mine["nodes"]) if n["node"] == first)
    assert panel.chart.cursor.value() == index
    assert first in panel.selected.text()

    # a click on a chart point selects its node
    last = mine["nodes"][-1]["node"]
    spot = [s for s in panel.chart.scatter.points() if s.data() == last]
    panel.chart._clicked(panel.chart.scatter, spot)
    qtbot.waitUntil(lambda: toy_tab.listing.current_line() == line_of(toy_tab, last))

    # a module row selects that module's first failing node
    item = panel.modules.topLevelItem(0)
    panel._module_clicked(item)
    target = item.data(0, Qt.ItemDataRole.UserRole)
    qtbot.waitUntil(lambda: toy_tab.listing.current_line() == line_of(toy_tab, target))

    # closing the document drops its results
    doc = toy_tab.doc
    window.close_tab(window.tabs.indexOf(toy_tab))
    qtbot.waitUntil(lambda: doc not in panel.results)
    assert panel.chart.points == []


def test_cancel_stops_the_child(qtbot, panel):
    before = child_pids()
    choose(panel.candidate, "on:device")
    qtbot.waitUntil(panel.run_button.isEnabled, timeout=5000)
    with qtbot.waitSignal(panel.runner.progress, timeout=60000):
        panel.start()
    pid = panel.runner.pid()
    assert pid and pid in child_pids()
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert not panel.runner.is_running()
    # it ends, and takes nothing with it left running (how fast: bench_ui_jobs.py)
    assert wait_gone({pid}, timeout=None) == set()
    assert wait_gone(None, timeout=None) - before == set()
    assert panel.run_button.isEnabled()
    assert panel.chart.points == []
