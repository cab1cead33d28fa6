"""Shared by the job-panel tests: the leak check (no child process or pool thread left).

Not a conftest (other tests own that); the panel tests import these by name. The real
toy archive comes from conftest's session fixture `toy_archive`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[2]


def child_pids() -> set[int]:
    """Live (non-zombie) processes whose parent is this test process, plus anything in
    a session one of them leads (what a job child may have spawned)."""
    me = os.getpid()
    procs: dict[int, tuple[int, int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        state, ppid, _pgrp, sid = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
        procs[int(entry)] = (ppid, sid, state)
    kids = {pid for pid, (ppid, _sid, state) in procs.items() if ppid == me and state != "Z"}
    return kids | {pid for pid, (_p, sid, state) in procs.items()
                   if sid in kids and state != "Z"}


def wait_gone(pids: set[int] | None = None, timeout: float | None = 1.5) -> set[int]:
    """Wait until the given pids (default: all our children) are gone; return the rest.
    `timeout=None`: as long as it takes (the test's own timeout bounds it), for tests
    that check that a child ends, not how fast (the benchmarks measure that)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = child_pids() if pids is None else {p for p in pids if _alive(p)}
        if not left or (deadline is not None and time.monotonic() > deadline):
            return left
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("utf-8", "replace")
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


@pytest.fixture
def no_leaks(qapp):
    """Fail a test that leaves a child process or a pool thread running."""
    from PySide6.QtCore import QThreadPool

    before = child_pids()
    yield
    qapp.processEvents()
    left = wait_gone(None, timeout=2.0) - before
    pool = QThreadPool.globalInstance()
    pool.waitForDone(2000)
    assert not left, f"child processes left running: {sorted(left)}"
    assert pool.activeThreadCount() == 0, "a pool thread is still running"
