"""`--screenshot` no longer prints Qt's "propagateSizeHints()" noise; any other Qt
message still reaches stderr (real processes: pytest-qt's own handler stays out)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from inspector.jobs.runner import child_env
from inspector.resources import demo_archive

NOISE = "This plugin does not support propagateSizeHints()"


def test_screenshot_is_quiet(tmp_path: Path) -> None:
    out = tmp_path / "shot.png"
    proc = subprocess.run([sys.executable, "-m", "inspector", "--screenshot", str(out),
                           str(demo_archive())], capture_output=True, text=True, timeout=300,
                          env=child_env({"QT_QPA_PLATFORM": "offscreen"}))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000
    assert NOISE not in proc.stderr


def test_only_that_message_is_dropped() -> None:
    code = ("from PySide6.QtCore import qWarning; from inspector.ui import qt_messages; "
            "qt_messages.install(); qt_messages.install(); "
            f"qWarning({NOISE!r}); qWarning('something else went wrong')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=child_env({"QT_QPA_PLATFORM": "offscreen"}))
    assert proc.returncode == 0, proc.stderr
    assert NOISE not in proc.stderr
    assert proc.stderr.count("something else went wrong") == 1
