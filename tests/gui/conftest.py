"""GUI test setup: offscreen Qt, settings in a temp folder, a real toy archive.

The toy decoder is exported by the real export job in a child process (`python -m
inspector.jobs export --preset tiny`), so this process never imports torch for it,
once per source version (tests/export_cache.py: a disk cache the xdist workers and
later runs share).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from export_cache import toy_export  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402

# Before any test (or a session fixture, or an import) can build a QSettings: the whole
# session, and every child it spawns that honours XDG_CONFIG_HOME, stays away from the
# user's settings and recent files. Each test then gets its own folder (temp_settings).
_SESSION_SETTINGS = tempfile.mkdtemp(prefix="pt2i-test-settings-")
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, _SESSION_SETTINGS)
os.environ["XDG_CONFIG_HOME"] = os.path.join(_SESSION_SETTINGS, "xdg")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def toy_archive() -> Path:
    given = os.environ.get("PT2I_TEST_TOY_ARCHIVE")  # dev loop: reuse one export
    if given:
        return Path(given)
    return toy_export()[0]


@pytest.fixture(autouse=True)
def temp_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every test gets its own settings file (never the user's)."""
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    yield tmp_path / "settings"


@pytest.fixture(autouse=True)
def collection_given_back():
    """A test that started a task moved cycle collection onto a GUI-thread timer
    (ui/gui_gc.py): collect its leftovers here, on the GUI thread, and give
    collection back, since the next test may run no event loop to drive the timer."""
    yield
    from inspector.ui.gui_gc import give_back_collection

    give_back_collection()


@pytest.fixture
def window(qtbot):
    from inspector.ui.window.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1400, 900)
    w.show()
    yield w
    if w.last_error is not None:
        try:
            w.last_error.close()
        except RuntimeError:  # already deleted
            pass
    w.pool.waitForDone(10000)
    w.close()


@pytest.fixture
def open_wait(qtbot, window):
    """open_wait(path) -> the current ArchiveTab once reading has finished."""

    def run(path: Path, timeout: int = 60000):
        with qtbot.waitSignal(window.loadsFinished, timeout=timeout):
            window.open_archive(path)
        return window.current_tab()

    return run


@pytest.fixture
def toy_tab(open_wait, toy_archive):
    return open_wait(toy_archive)
