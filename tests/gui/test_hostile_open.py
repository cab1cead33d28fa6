"""Hostile archives in the window: the same clear error as the CLI, in a dialog,
nothing run, and the window stays usable (a real archive opens afterwards).

The cases come from tests/security/hostile_corpus.py (built from a real export).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))

from archive_factory import ArchiveFactory  # noqa: E402
from hostile_corpus import EITHER, ERROR, OK, Base, by_name, export_base_archive  # noqa: E402

from inspector.core.archive import open_archive  # noqa: E402
from inspector.core.errors import InspectorError  # noqa: E402

# One or two per category: refused at open, at program parse, and readable ones
# whose danger (pickles, .so, code strings) must be shown, not run.
CASES = [
    "file-html", "file-bare-pickle", "zip-dotdot-name", "zip-encrypted-program",
    "zip-bad-crc-program", "json-deep-nesting", "json-deep-values-under-limit",
    "json-nested-graphs-over-limit", "format-archive-version-99", "format-no-programs",
    "pickle-everywhere", "code-in-symbolic-sizes", "code-in-node-target", "json-in-string-deep",
]


@pytest.fixture(scope="module")
def base(archive_factory: ArchiveFactory) -> Base:
    return Base.load(export_base_archive(archive_factory))


def _core_error(path: Path) -> str | None:
    """What the CLI prints after `error: ` for this file (None: it opens)."""
    try:
        with open_archive(path) as archive:
            for name in archive.program_names:
                archive.program(name)
    except InspectorError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("name", CASES)
def test_hostile_file_gives_a_dialog_and_the_window_stays_usable(
        qtbot, window, tmp_path: Path, base: Base, name: str) -> None:
    case = by_name(name)
    path, marker = case.make(base, tmp_path)
    expected = _core_error(path)
    assert (expected is not None) == (case.expect == ERROR) or case.expect == EITHER

    with qtbot.waitSignal(window.loadsFinished, timeout=30000):
        window.open_archive(path)
    assert not marker.exists(), "opening the file in the window ran code from it"
    box = window.last_error
    if expected is None:
        assert box is None, box.text()
        assert window.tabs.count() == 1
        if case.expect == OK and case.risky:
            risky = {r.path for r in window.current_tab().doc.archive.records if r.risk}
            assert set(case.risky) <= risky
    else:
        assert isinstance(box, QMessageBox) and box.isVisible()
        assert box.text() == expected  # the CLI's `error: <this>`
        assert "internal error" not in box.text()
        box.close()
        assert window.tabs.count() == 0

    good = tmp_path / "good.pt2"
    good.write_bytes(base.path.read_bytes())
    with qtbot.waitSignal(window.loadsFinished, timeout=30000):
        window.open_archive(good)
    assert window.current_tab() is not None and window.current_tab().doc.path == good
    assert not marker.exists()
