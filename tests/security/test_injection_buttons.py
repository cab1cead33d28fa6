"""The window's Check, Profile and Run buttons on injection variants that are live under
plain torch (tests/security/injection.py, issue 27): real Qt offscreen, the real
window, real job children. No marker; the failure is one plain-text line naming the
field, its details say why without a traceback; the window stays responsive.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QSettings, Qt, QTimer  # noqa: E402

from injection import Variant, torch_verdicts, variants  # noqa: E402
from inspector.jobs.runner import child_env  # noqa: E402

# The window's settings and recent files stay in a temp folder (as tests/gui/conftest.py).
_SETTINGS = tempfile.mkdtemp(prefix="pt2i-injection-settings-")
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, _SETTINGS)

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "resources" / "demo" / "toy-tiny.pt2"
JOB_TIMEOUT_MS = 300_000  # a job child may import torch: slow on a busy 2-core machine
# The two routes of the issue: the first runs when the graph runs (check, profile),
# the second when module() builds the code (run's generation loop).
ROUTES = ("operator argument", "keyword name")


@pytest.fixture(autouse=True)
def temp_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Variant]:
    """Each route's toy variant, shown live under plain torch first."""
    out = tmp_path_factory.mktemp("judged")
    vs = list(variants(TOY, "toy", out, program="decoder", fields=list(ROUTES)))
    judged = torch_verdicts(vs, child_env(), sys.executable)
    for v in vs:
        assert judged[v.id]["live"], f"{v.id} is not live under plain torch: the test proves nothing"
    return {v.field: v for v in vs}


@pytest.fixture
def window(qtbot):
    from inspector.ui.window.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    yield w
    w.pool.waitForDone(10000)
    w.close()


def _fresh(field: str, tmp_path: Path) -> Variant:
    (v,) = variants(TOY, "toy", tmp_path, program="decoder", fields=[field])
    return v


def _open(qtbot, window, path: Path):
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.open_archive(path)
    return window.current_tab()


class Ticks:
    """Counts GUI-thread timer ticks: the event loop turning while a job runs."""

    def __init__(self) -> None:
        self.count = 0
        self.timer = QTimer()
        self.timer.setInterval(20)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        self.count += 1


def _assert_plain_refusal(text: str, details: str, v: Variant, word: str) -> None:
    assert not v.marker.exists(), f"{v.id}: the window's job ran the file's code"
    assert "program 'decoder'" in text and word in text, text
    assert "--trust" in text  # says that consent does not widen it
    assert "\n" not in text.strip() and "Traceback" not in text, text
    assert "Traceback" not in details, details[:500]


def _choose(combo, data) -> None:
    index = combo.findData(data)
    assert index >= 0, f"{data!r} not offered"
    combo.setCurrentIndex(index)


@pytest.mark.parametrize("button", ["check", "profile"])
@pytest.mark.parametrize("field", ROUTES)
def test_check_and_profile_buttons_refuse_a_live_variant(qtbot, window, live, tmp_path,
                                                         button, field) -> None:
    v = _fresh(field, tmp_path)
    tab = _open(qtbot, window, v.path)
    assert tab is not None
    panel = window.job_panels["profile"]
    window.job_panels.docks["profile"].show()
    window.job_panels.docks["profile"].raise_()
    _choose(panel.device, "cpu")
    press = panel.check_button if button == "check" else panel.profile_button
    qtbot.waitUntil(press.isEnabled, timeout=60000)
    ticks = Ticks()
    qtbot.mouseClick(press, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.runner.is_running() and "failed" in panel.status_area.text(),
                    timeout=JOB_TIMEOUT_MS)
    ticks.timer.stop()
    assert ticks.count > 0  # the event loop turned while the job ran
    _assert_plain_refusal(panel.status_area.text(), panel.status_area.details.toPlainText(), v,
                          field)
    assert panel.status_area.label.textFormat() == Qt.TextFormat.PlainText
    assert panel.results == {}
    # responsive: the buttons come back, and the listing still answers
    qtbot.waitUntil(press.isEnabled, timeout=10000)
    started = time.monotonic()
    qtbot.wait(1)
    assert time.monotonic() - started < 5
    assert tab.listing.current_line() is not None
    panel.shutdown()


@pytest.mark.parametrize("field", ROUTES)
def test_run_button_refuses_a_live_variant(qtbot, window, live, tmp_path, field) -> None:
    v = _fresh(field, tmp_path)
    _open(qtbot, window, v.path)
    panel = window.show_panel("run")
    assert panel is window.job_panels.run and panel.archive == str(v.path)
    panel.batch.setValue(1)
    panel.max_tokens.setValue(2)
    panel.warmup.setValue(0)
    panel.repeats.setValue(1)
    qtbot.waitUntil(panel.run_button.isEnabled, timeout=60000)
    ticks = Ticks()
    with qtbot.waitSignal(panel.runner.finished, timeout=JOB_TIMEOUT_MS):
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    ticks.timer.stop()
    assert ticks.count > 0
    text = panel.status_area.text()
    assert text.startswith("Run failed:"), text
    _assert_plain_refusal(text, panel.status_area.details.toPlainText(), v, field)
    assert not panel.records
    qtbot.waitUntil(panel.run_button.isEnabled, timeout=10000)
    panel.shutdown()
