"""Helpers for the jobs tests (a plain module: tests/ folders are not packages)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspector.jobs.runner import Job


def run_events(job: str, args: list[str]) -> tuple[list[dict[str, Any]], int]:
    """All events of a child run to its end, and its exit code."""
    child = Job(job, args)
    try:
        events = list(child.events())
    finally:
        code = child.cancel()
    return events, code


def rewrite_archive(src: Path, dst: Path,
                    edit: Callable[[str, bytes], bytes | None] | None = None,
                    add: dict[str, bytes] | None = None) -> Path:
    """Copy a .pt2 record by record; `edit(rel, data)` may change a record (None drops
    it); `add` puts new records (paths relative to the top folder)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        names = zin.namelist()
        top = next(n for n in names if n.endswith("/archive_format"))[: -len("archive_format")]
        for name in names:
            data = zin.read(name)
            rel = name[len(top):]
            if edit is not None:
                data = edit(rel, data)
                if data is None:
                    continue
            zout.writestr(name, data)
        for rel, data in (add or {}).items():
            zout.writestr(top + rel, data)
    return dst
