"""Jobs room: real child processes (`python -m inspector.jobs ...`) on the tiny preset.

The tiny archive is exported through the real export child once per source version
(tests/export_cache.py: a disk cache shared by the xdist workers and later runs), and
its events are kept so several tests can check them without exporting again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from export_cache import toy_export


@pytest.fixture(scope="session")
def tiny_export() -> tuple[Path, list[dict[str, Any]]]:
    # made by the real export child once per source version (tests/export_cache.py):
    # the archive alone in its folder, and the events the child sent
    return toy_export(["--batch", "1:16", "--seq-len", "2:64"], file="toy-tiny.pt2")


@pytest.fixture(scope="session")
def tiny_archive(tiny_export: tuple[Path, list[dict[str, Any]]]) -> Path:
    return tiny_export[0]

