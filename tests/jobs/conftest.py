"""Jobs room: real child processes (`python -m inspector.jobs ...`) on the tiny preset.

The tiny archive is exported once per session, through the real export child, and its
events are kept so several tests can check them without exporting again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jobs_helpers import run_events

from inspector.jobs.runner import JobError


@pytest.fixture(scope="session")
def tiny_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("tiny") / "toy-tiny.pt2"
    events, code = run_events("export", ["--preset", "tiny", "--batch", "1:16",
                                         "--seq-len", "2:64", "-o", str(out)])
    if code != 0:
        raise JobError(f"tiny export failed: {events[-1] if events else 'no events'}")
    return out, events


@pytest.fixture(scope="session")
def tiny_archive(tiny_export: tuple[Path, list[dict[str, Any]]]) -> Path:
    return tiny_export[0]

