"""Installing the launcher entry, icons, AppStream and MIME files into a data folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from inspector import desktop_install
from inspector.resources import APP_ID, ICON_SIZES, MIME_TYPE

ROOT = Path(__file__).resolve().parents[2]


def _exec_line(data_home: Path) -> str:
    text = (data_home / "applications" / f"{APP_ID}.desktop").read_text()
    (line,) = [l for l in text.splitlines() if l.startswith("Exec=")]
    return line


def test_install_lays_out_the_freedesktop_tree_and_uninstall_removes_it(tmp_path):
    written = desktop_install.install(tmp_path, command="pt2-inspector")
    expected = {
        f"applications/{APP_ID}.desktop",
        f"metainfo/{APP_ID}.metainfo.xml",
        f"mime/packages/{APP_ID}.xml",
        f"icons/hicolor/scalable/apps/{APP_ID}.svg",
        *(f"icons/hicolor/{s}x{s}/apps/{APP_ID}.png" for s in ICON_SIZES),
    }
    assert {p.relative_to(tmp_path).as_posix() for p in written} == expected
    assert _exec_line(tmp_path) == "Exec=pt2-inspector %F"
    assert not list(tmp_path.rglob(".*.tmp")), "temporary files left behind"
    if shutil.which("update-mime-database"):  # the cache the desktop reads was rebuilt
        assert f"{MIME_TYPE}:*.pt2" in (tmp_path / "mime" / "globs2").read_text()

    removed = desktop_install.uninstall(tmp_path)
    assert {p.relative_to(tmp_path).as_posix() for p in removed} == expected
    assert not [p for p in tmp_path.rglob(APP_ID + "*") if p.is_file()]


def test_command_outside_path_is_written_absolute_and_quoted(tmp_path):
    program = tmp_path / "my apps" / "pt2-inspector"
    desktop_install.install(tmp_path / "share", command=str(program))
    assert _exec_line(tmp_path / "share") == f'Exec="{program}" %F'
    text = (tmp_path / "share" / "applications" / f"{APP_ID}.desktop").read_text()
    assert f"TryExec={program}\n" in text
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate is not installed")
    result = subprocess.run([tool, str(tmp_path / "share" / "applications" / f"{APP_ID}.desktop")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout


def test_exec_quoting_follows_the_desktop_entry_spec():
    assert desktop_install.quote_exec("/usr/bin/pt2-inspector") == "/usr/bin/pt2-inspector"
    # Spec: inside quotes, " ` $ \\ take a backslash, then every backslash doubles.
    assert desktop_install.quote_exec('/a b/$x') == '"/a b/\\\\$x"'


def test_module_runs_as_a_command(tmp_path):
    result = subprocess.run([sys.executable, "-m", "inspector.desktop_install",
                             "--data-home", str(tmp_path)],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert f"installed {len(ICON_SIZES) + 4} files into {tmp_path}" in result.stdout
    assert (tmp_path / "applications" / f"{APP_ID}.desktop").is_file()
