"""The Run panel: a real run of the tiny toy archive on CPU, drawn live; stop; errors;
saving; the "needs torch" state."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from _panel_helpers import ROOT, _alive, no_leaks, wait_gone  # noqa: E402,F401
from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402

from inspector.core.run_results import run_label  # noqa: E402
from inspector.ui.panels.run import RunPanel  # noqa: E402


@pytest.fixture
def toy(toy_archive):
    return toy_archive


@pytest.fixture
def panel(qtbot, no_leaks):
    p = RunPanel()
    qtbot.addWidget(p)
    p.resize(1000, 650)
    p.show()
    qtbot.waitExposed(p)
    yield p
    p.shutdown()


def _small(panel: RunPanel, tokens: int = 8) -> None:
    panel.batch.setValue(1)
    panel.max_tokens.setValue(tokens)
    panel.warmup.setValue(0)
    panel.repeats.setValue(1)


def test_draws_a_real_run_and_stays_responsive(qtbot, panel, toy, tmp_path):
    assert panel.has_torch and not panel.torch_banner.isVisibleTo(panel)
    assert not panel.run_button.isEnabled()  # no archive yet
    panel.set_archive(str(toy))
    assert panel.run_button.isEnabled()
    _small(panel)
    # The event loop's own order of events: a heartbeat timer next to the child's samples.
    order: list[str] = []
    heart = QTimer()
    heart.timeout.connect(lambda: order.append("beat") if panel.runner.is_running() else None)
    heart.start(20)
    panel.runner.sample.connect(lambda _e: order.append("sample"))
    panel.runner.progress.connect(lambda _s, _f: order.append("progress"))
    redraws_while_running: list[int] = []
    panel.chart.redrawn.connect(
        lambda: redraws_while_running.append(1) if panel.runner.is_running() else None)
    with qtbot.waitSignal(panel.runFinished, timeout=300_000) as blocker:
        assert panel.start_run()
        assert panel.stop_button.isEnabled() and not panel.run_button.isEnabled()
    heart.stop()
    record = blocker.args[0]
    result = record.result
    n = record.series.n
    assert n == len(result["per_token_ms"]) == result["tokens"] * result["repeats"]
    assert [round(v, 4) for v in record.series.values()] == result["per_token_ms"]
    assert record.steps == list(range(n))
    # The chart shows every sample and was redrawn by its timer while the child ran.
    x, y = panel.chart.curve(record.series).getData()
    assert len(y) == n
    assert redraws_while_running
    assert panel.chart.frames > 0
    # The event loop kept turning while the child worked: heartbeats came between its
    # first event ("import torch") and its first sample. How long a stall may be is
    # bench_ui_jobs.py's to measure, not a test's.
    first, sampled = order.index("progress"), order.index("sample")
    assert "beat" in order[first:sampled] and order.count("sample") == n
    row = panel.stats_rows()[0]
    assert row[0] == run_label(record.spec)
    assert row[1] == _fmt(result["p50_ms"])
    assert "tokens/s" in panel.status.text()
    qtbot.waitUntil(lambda: panel.run_button.isEnabled(), timeout=5000)

    # A second run (eager) overlays the first, with a legend entry each.
    panel.mode.setCurrentIndex(panel.mode.findData("eager"))
    panel.max_tokens.setValue(4)
    with qtbot.waitSignal(panel.runFinished, timeout=300_000) as blocker:
        assert panel.start_run()
    eager = blocker.args[0]
    legend = panel.chart.plot.plotItem.legend
    assert [label.text for _sample, label in legend.items] == [record.label, eager.label]
    assert eager.label.startswith("eager") and len(panel.stats_rows()) == 2
    assert panel.chart.curve(record.series).getData()[1] is not None and len(panel.chart.curve(record.series).getData()[1]) == n
    qtbot.waitUntil(lambda: panel.run_button.isEnabled(), timeout=5000)

    # Save: CSV rows per token, JSON with the result, PNG of the chart.
    rows = list(csv.DictReader(panel.save_results(tmp_path / "r.csv").open()))
    assert len(rows) == n + eager.series.n
    assert rows[0]["mode"] == "export" and rows[0]["device"] == "cpu" and rows[-1]["mode"] == "eager"
    doc = json.loads(panel.save_results(tmp_path / "r.json").read_text())
    assert doc[0]["result"]["p50_ms"] == result["p50_ms"] and doc[1]["label"] == eager.label
    image = QImage(str(panel.save_chart(tmp_path / "c.png")))
    assert image.width() >= 800 and image.height() > 100


def test_stop_ends_the_child_and_keeps_the_samples(qtbot, panel, toy):
    panel.set_archive(str(toy))
    _small(panel, tokens=64)
    panel.repeats.setValue(1000)  # 64,000 tokens: a child that ends soon was stopped
    with qtbot.waitSignal(panel.runner.sample, timeout=300_000):
        assert panel.start_run()
    pid = panel.runner.pid()
    assert _alive(pid)  # running when stopped
    panel.stop()
    record = panel.records[-1]
    kept = record.series.n
    # Gone (how fast is bench_ui_jobs.py's to measure), and nothing of it came after stop.
    assert not wait_gone({pid}, timeout=60.0)
    qtbot.waitUntil(lambda: not panel.runner.reaping(), timeout=60_000)  # all it wrote is read
    assert record.series.n == kept
    assert record.state == "stopped" and 1 <= kept < 64 * 1000
    assert "(stopped)" in panel.stats_rows()[-1][0]
    assert panel.run_button.isEnabled() and not panel.stop_button.isEnabled()


def test_archive_without_the_two_programs_is_a_clear_error(qtbot, panel, small_archive):
    panel.set_archive(str(small_archive))
    _small(panel, tokens=2)
    with qtbot.waitSignal(panel.runner.finished, timeout=300_000):
        assert panel.start_run()
    text = panel.status.text()
    assert text.startswith("Run failed:") and "encoder" in text, text
    assert not panel.records  # a run with no samples leaves no empty legend entry
    again = RunPanel()  # the last options come back
    qtbot.addWidget(again)
    assert again.max_tokens.value() == 2 and again.warmup.value() == 0
    # The child's traceback is one click away, and it ends in the error the status shows.
    assert panel.details_button.isVisibleTo(panel)
    details = panel.details.toPlainText()
    assert details.startswith("Traceback") and text.removeprefix("Run failed: ") in details


def test_needs_torch_message_without_torch(tmp_path):
    """In a Python where torch cannot be imported, the panel says so and cannot run."""
    code = textwrap.dedent("""
        import importlib.abc, os, sys
        class NoTorch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ModuleNotFoundError(name)
                return None
        sys.meta_path.insert(0, NoTorch())
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        from PySide6.QtWidgets import QApplication
        app = QApplication([])
        from inspector.ui.panels.run import RunPanel
        p = RunPanel()
        p.set_archive(sys.argv[1])
        print(p.has_torch, p.torch_banner.isVisibleTo(p), p.run_button.isEnabled(),
              p.start_run(), "torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.pt2")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "False", "False", "False"]


def test_window_process_never_imports_torch(tmp_path):
    code = ("import os, sys; os.environ['QT_QPA_PLATFORM']='offscreen';"
            "from PySide6.QtWidgets import QApplication; app=QApplication([]);"
            "from inspector.ui.panels.run import RunPanel; p=RunPanel(); p.show();"
            "app.processEvents(); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def _fmt(v: float) -> str:
    from inspector.ui.panels.run import _num

    return _num(v)


def test_docked_panel_follows_the_window(qtbot, no_leaks, window, toy_tab, toy_archive):
    panel = window.job_panels.run
    assert panel.archive == str(toy_archive)
    assert panel.run_button.isEnabled()
    # a mode of the window (registry area "central"), not a dock
    assert "run" not in window.job_panels.docks
    assert window.show_panel("run") is panel and panel.isVisible()
    assert window.modes.current == "run"


def test_many_void_qt_calls_do_not_abort_the_interpreter():
    """PySide6 6.12 on Python 3.11 loses a reference to None per void call; without the
    fix in inspector/ui/pyside_refcounts.py this aborts with "deallocating None"."""
    code = ("import os; os.environ['QT_QPA_PLATFORM']='offscreen';"
            "from PySide6.QtWidgets import QApplication, QLabel; app=QApplication([]);"
            "import inspector.ui; w=QLabel()\n"
            "for i in range(200_000): w.setText('x'); w.setEnabled(True)\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_device_picker_is_filled_by_the_devices_job(qtbot, no_leaks):
    from inspector.ui.device_list import DeviceSource

    devices = DeviceSource()
    starts: list[str] = []
    devices.runner.started.connect(starts.append)
    panel = RunPanel(devices=devices)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(devices.changed, timeout=120_000) as blocker:
        panel.show()  # the first show asks the devices job, once
    ids = [d.id for d in blocker.args[0]]
    assert ids[0] == "cpu"
    assert [panel.device.itemData(i) for i in range(panel.device.count())] == ids
    assert devices.torch_version
    panel.hide()
    panel.show()
    assert starts == ["devices"]  # asked once, not on every show
    devices.shutdown()
    panel.shutdown()


def test_a_shut_down_device_source_starts_no_child(qtbot, no_leaks):
    """The Run panel's first look at the devices is deferred to after its first
    layout; when the window closes first, that late look must start nothing (a child
    whose QProcess dies with the window, still running)."""
    from inspector.ui.device_list import DeviceSource

    devices = DeviceSource()
    starts: list[str] = []
    devices.runner.started.connect(starts.append)
    panel = RunPanel(devices=devices)
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    devices.shutdown()  # the window closes ...
    panel.show()  # ... before the panel's deferred first look
    qtbot.wait(50)
    devices.refresh()  # and a click on refresh that reaches it late
    assert starts == [] and not devices.runner.is_running()
    panel.shutdown()
