"""`--screenshot` follows the CLI contract when an archive cannot be read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_screenshot_of_an_unreadable_archive_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pt2"
    bad.write_text("<html>not an archive</html>")
    png = tmp_path / "shot.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-m", "inspector", "--screenshot", str(png), str(bad)],
                          capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert errors == ["error: bad.pt2 is not a zip file, so not a .pt2 archive "
                      "(no end-of-archive record: not a zip, or truncated)"]
    assert "Traceback" not in proc.stderr
    assert not png.exists()
