"""QSettings behind named keys: window geometry, dock/splitter state, recent files,
last options. Tests point QSettings at a temp folder (tests/gui/conftest.py) via
QSettings.setPath, so nothing here hard-codes a location."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

ORGANIZATION = "pt2-inspector"
APPLICATION = "pt2-inspector"

GEOMETRY = "window/geometry"
WINDOW_STATE = "window/state"  # docks and toolbars (QMainWindow.saveState)
WINDOW_STATE_SIZE = "window/state_size"  # the window's size when WINDOW_STATE was saved
RECENT_FILES = "files/recent"
LAST_DIRECTORY = "files/last_directory"
SEARCH_CASE = "search/case_sensitive"
SEARCH_REGEX = "search/regex"
FOLD_LIBRARY_FRAMES = "details/fold_library_frames"

MAX_RECENT = 10


def use_location(folder: str | Path) -> None:
    """Read and write settings under `folder` from now on (this process only):
    `--screenshot` and the tests use a temp folder, so they never change the
    user's layout, recent files or last options."""
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))


def settings() -> QSettings:
    # INI everywhere: one readable file, and the same format the tests redirect.
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                     ORGANIZATION, APPLICATION)


def recent_files() -> list[str]:
    value = settings().value(RECENT_FILES, [])
    if isinstance(value, str):  # QSettings gives a bare str for a one-item list
        value = [value]
    return [str(v) for v in (value or [])]


def add_recent_file(path: str | Path) -> list[str]:
    path = str(Path(path).resolve())
    files = [f for f in recent_files() if f != path]
    files.insert(0, path)
    files = files[:MAX_RECENT]
    settings().setValue(RECENT_FILES, files)
    return files


def clear_recent_files() -> None:
    settings().setValue(RECENT_FILES, [])


def get_bool(key: str, default: bool = False) -> bool:
    value = settings().value(key, default)
    if isinstance(value, str):
        return value.lower() in ("1", "true", "yes")
    return bool(value)


def set_value(key: str, value: object) -> None:
    settings().setValue(key, value)
