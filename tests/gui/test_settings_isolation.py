"""Issue 16 item 7: `--screenshot` and the tests never touch the user's settings or
recent files, and `--screenshot` shows the archive as it opens (nothing typed)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from inspector.ui import settings as keys

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"

USER_INI = """[files]
recent=/home/someone/model-a.pt2, /home/someone/model-b.pt2
last_directory=/home/someone

[search]
case_sensitive=true

[run]
last_options="{\\"batch\\": 3, \\"max_tokens\\": 17}"
"""


def test_tests_use_a_temp_settings_file(temp_settings: Path) -> None:
    path = Path(keys.settings().fileName())
    assert path.is_relative_to(temp_settings), path
    home_config = Path.home() / ".config" / keys.ORGANIZATION
    assert not path.is_relative_to(home_config)


def test_screenshot_leaves_the_users_settings_alone(tmp_path: Path) -> None:
    """A real `pt2-inspector --screenshot` with a user's settings file in place: the
    file is byte for byte the same afterwards and nothing else was written there."""
    config = tmp_path / "config"
    user_dir = config / keys.ORGANIZATION
    user_dir.mkdir(parents=True)
    ini = user_dir / f"{keys.APPLICATION}.ini"
    ini.write_text(USER_INI)
    before = ini.read_bytes()
    png = tmp_path / "shot.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(config),
               HOME=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "inspector", "--screenshot", str(png), str(DEMO)],
                          cwd=ROOT, capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ini.read_bytes() == before
    assert sorted(p.name for p in config.rglob("*")) == sorted(
        [keys.ORGANIZATION, ini.name]), "the screenshot wrote settings"


def test_screenshot_shows_the_archive_as_opened(qapp, temp_settings: Path, monkeypatch,
                                                tmp_path: Path) -> None:
    """What the picture holds: no search typed, no matches, the listing at its top
    (line 1 visible, no horizontal scroll); and the settings in place (this test's
    temp file standing in for the user's) keep their recent files."""
    from inspector.commands import gui
    from inspector.ui.window.main_window import MainWindow

    keys.add_recent_file("/home/someone/model-a.pt2")
    keys.settings().sync()
    user_file = Path(keys.settings().fileName())
    before = user_file.read_bytes()
    seen: dict[str, object] = {}
    grab = MainWindow.grab

    def recording_grab(self, *args):
        tab = self.current_tab()
        seen["search"] = tab.search.text()
        seen["matches"] = tab.match_count()
        seen["first_line"] = tab.listing.first_visible_line()
        seen["hscroll"] = tab.listing.horizontalScrollBar().value()
        seen["settings_file"] = keys.settings().fileName()
        return grab(self, *args)

    monkeypatch.setattr(MainWindow, "grab", recording_grab)
    png = tmp_path / "shot.png"
    args = argparse.Namespace(files=[str(DEMO)], demo=False, screenshot=str(png), debug=False)
    assert gui.run(args) == 0
    assert png.stat().st_size > 10000
    assert seen["search"] == "" and seen["matches"] == 0
    assert seen["first_line"] == 0 and seen["hscroll"] == 0
    assert not Path(str(seen["settings_file"])).is_relative_to(temp_settings)
    keys.use_location(temp_settings)  # back to "the user's" file
    assert user_file.read_bytes() == before
    assert keys.recent_files() == ["/home/someone/model-a.pt2"]
