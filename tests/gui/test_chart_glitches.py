"""Issue 16 item 5: the Run chart after a stopped run, on empty charts, the failed
state, and a stale traceback when another archive is chosen. Runs are real (the run
job on the tiny toy archive on CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _panel_helpers import ROOT, no_leaks  # noqa: F401
from PySide6.QtWidgets import QApplication

from inspector.ui.panels.run import RunPanel
from inspector.ui.widgets.latency_chart import LatencyChart
from inspector.ui.workspace import Workspace

DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"


def _axes_ok(chart: LatencyChart) -> None:
    """Both plots start at zero (nothing negative) and print no SI multiplier."""
    for plot in (chart.plot, chart.hist_plot):
        (x0, x1), (y0, y1) = plot.plotItem.vb.viewRange()
        assert x0 >= 0 and y0 >= 0 and x1 > x0 and y1 > y0, (x0, x1, y0, y1)
        for name in ("left", "bottom"):
            axis = plot.getAxis(name)
            assert not axis.autoSIPrefix
            assert "x0.001" not in axis.labelString() and "(x" not in axis.labelString()


@pytest.fixture
def panel(qtbot, no_leaks):
    p = RunPanel(Workspace())
    qtbot.addWidget(p)
    p.resize(1000, 620)
    p.show()
    qtbot.waitExposed(p)
    yield p
    p.shutdown()


def test_empty_chart_has_plain_axes_from_zero(qtbot):
    chart = LatencyChart()
    qtbot.addWidget(chart)
    chart.resize(800, 300)
    chart.show()
    QApplication.processEvents()
    _axes_ok(chart)
    # a series that never got a sample, removed again: still plain
    s = chart.add_series("x", expected=10)
    chart.redraw(force_hist=True)
    _axes_ok(chart)
    chart.remove_series(s)
    _axes_ok(chart)
    chart.timer.stop()


@pytest.mark.slow
def test_stopped_run_does_not_squeeze_the_next(qtbot, panel):
    """A 30-repeat run stopped early: once it ended, the x axis fits the samples it
    sent, not the 30 x 64 it announced; the next short run fills the chart."""
    if not panel.has_torch:
        pytest.skip("needs torch for the run job")
    panel.set_archive(str(DEMO))
    qtbot.waitUntil(lambda: panel.ranges is not None, timeout=30000)
    panel.max_tokens.setValue(64)
    panel.warmup.setValue(0)
    panel.repeats.setValue(30)
    assert panel.start_run()
    announced = 64 * 30
    qtbot.waitUntil(lambda: panel.chart.plot.plotItem.vb.viewRange()[0][1] >= announced,
                    timeout=60000)
    qtbot.waitUntil(lambda: panel.records[-1].series.n >= 20, timeout=300_000)
    with qtbot.waitSignal(panel.runner.finished, timeout=30000):
        panel.stop()
    stopped = panel.records[-1]
    assert stopped.state == "stopped"
    n = stopped.series.n
    x_top = panel.chart.plot.plotItem.vb.viewRange()[0][1]
    assert n <= x_top < announced / 2, (n, x_top)
    _axes_ok(panel.chart)
    # the next run: 8 tokens, once; the axis covers both runs' samples, nothing more
    panel.max_tokens.setValue(8)
    panel.repeats.setValue(1)
    with qtbot.waitSignal(panel.runFinished, timeout=300_000):
        assert panel.start_run()
    qtbot.waitUntil(lambda: not panel.runner.is_running(), timeout=30000)
    x_top = panel.chart.plot.plotItem.vb.viewRange()[0][1]
    assert max(n, 8) <= x_top <= max(n, 8) * 2.5
    # cleared, then one short run: the axis is the short run's
    panel.clear()
    assert panel.records == []
    _axes_ok(panel.chart)
    assert panel.start_run()
    qtbot.waitUntil(lambda: not panel.runner.is_running(), timeout=300_000)
    assert panel.records and panel.records[-1].state == "done", panel.status.text()
    assert 8 <= panel.chart.plot.plotItem.vb.viewRange()[0][1] <= 20


def test_failed_run_is_readable_and_cleared_by_another_archive(qtbot, panel, tmp_path):
    if not panel.has_torch:
        pytest.skip("needs torch for the run job")
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"PK\x03\x04 not really a zip")  # the run job refuses it
    panel.set_archive(str(bad))
    panel.warmup.setValue(0)
    with qtbot.waitSignal(panel.runner.finished, timeout=300_000):
        assert panel.start_run()
    assert panel.status.text().startswith("Run failed:")
    # "failed" is not drawn over the bar: the bar is empty and silent, the status
    # line under it says what happened
    assert panel.progress.value() == 0 and not panel.progress.isTextVisible()
    assert panel.details.toPlainText()
    _axes_ok(panel.chart)  # the failed run left no empty legend entry or odd axes
    assert panel.records == []
    # the traceback opens under the chart and the stats, as wide as they are
    panel.details_button.setChecked(True)
    QApplication.processEvents()
    assert panel.details.isVisible()
    assert panel.details.width() >= panel.stats.width() - 2 and panel.details.height() >= 80
    assert panel.details.y() > panel.stats.y()
    # another archive: the stale failure and its traceback go
    panel.set_archive(str(DEMO))
    assert panel.status.text() == ""
    assert panel.details.toPlainText() == "" and not panel.details.isVisibleTo(panel)
    assert not panel.details_button.isVisibleTo(panel)
    assert panel.progress.isTextVisible() and panel.progress.format() == "idle"


def test_switching_tabs_in_the_window_clears_a_stale_failure(qtbot, window, open_wait,
                                                            tmp_path: Path):
    """The same through the window: the Run mode follows the current tab."""
    import shutil

    other = tmp_path / "other.pt2"
    shutil.copy(DEMO, other)
    open_wait(DEMO)
    run = window.show_panel("run")
    run._show_error("the decoder failed", "Traceback (most recent call last): ...")
    assert run.details.toPlainText().startswith("Traceback")
    open_wait(other)
    assert run.archive == str(other)
    assert run.status.text() == "" and run.details.toPlainText() == ""
    window.tabs.setCurrentIndex(0)
    assert run.archive == str(DEMO)
    assert [run.archive_box.itemData(i) for i in range(run.archive_box.count())] == \
        [str(DEMO), str(other)]
