"""The safety contract, case by case (hostile_corpus.CASES).

For every hostile or broken archive, `info`, `list` and `audit`, run as real
child processes, end with exit 0/1 (readable) or exit 2 and one `error: ...`
line; never a traceback, never "internal error", never a side effect (the
payload's marker file stays absent), within 20 s and 1.5 GB each. The same
file is also put through the core API in-process (tests/security/exercise.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from child import ChildResult, run_inspector
from exercise import exercise
from hostile_corpus import CASES, EITHER, ERROR, OK, Base, Case
from inspector.core.errors import InspectorError

COMMANDS = ("info", "list", "audit")
DEADLINE_S = 20.0
MEMORY_MB = 1536.0


def _check_child(case: Case, res: ChildResult, marker: Path) -> None:
    what = f"{case.name}: {res.describe()}"
    assert not res.killed and res.seconds < DEADLINE_S, f"over {DEADLINE_S:.0f} s: {what}"
    assert res.max_rss_mb < MEMORY_MB, f"over {MEMORY_MB:.0f} MB: {what}"
    assert not marker.exists(), f"the file ran code (marker created): {what}"
    assert b"Traceback" not in res.stderr and b"Traceback" not in res.stdout_head, what
    assert res.rc in (0, 1, 2), what
    if res.rc == 2:
        lines = res.stderr.decode("utf-8", "replace").splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), f"not one error line: {what}"
        assert "internal error" not in lines[0], f"a bug, not a clear error: {what}"
        # The message quotes names from the file: it must not carry terminal controls.
        assert not any(ord(c) < 32 or c == "\x7f" for c in lines[0]), f"control chars: {what}"
    else:
        assert b"error" not in res.stderr.lower(), what
    command = res.args[0]
    if case.expect == ERROR:
        assert res.rc == 2, f"expected a clear error: {what}"
        assert case.match in res.stderr.decode("utf-8", "replace").lower(), (
            f"error should mention {case.match!r}: {what}")
    elif case.expect == OK:
        assert res.rc in ((0, 1) if command == "audit" else (0,)), f"expected readable: {what}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cli_contract(case: Case, base: Base, tmp_path: Path) -> None:
    path, marker = case.make(base, tmp_path)
    ran = 0
    for command in COMMANDS:
        res = run_inspector([command, str(path)], timeout=DEADLINE_S + 5, cwd=tmp_path)
        if res.stub:
            continue  # that command is not built yet
        _check_child(case, res, marker)
        ran += 1
    if not ran:
        pytest.skip("no command available yet")


LIGHT = [c for c in CASES if not c.heavy]


@pytest.mark.parametrize("case", LIGHT, ids=[c.name for c in LIGHT])
def test_core_contract(case: Case, base: Base, tmp_path: Path) -> None:
    """The core API (what the window calls) gives the same outcome in-process."""
    path, marker = case.make(base, tmp_path)
    try:
        archive = exercise(path)
    except InspectorError as exc:
        assert case.expect != OK, f"{case.name}: expected readable, got {exc}"
        assert case.match in str(exc).lower(), f"{case.name}: error should mention {case.match!r}: {exc}"
        archive = None
    else:
        assert case.expect != ERROR, f"{case.name}: expected an error mentioning {case.match!r}"
    assert not marker.exists(), f"{case.name}: the file ran code"
    if archive is not None:
        flagged = {r.path for r in archive.records if r.risk}
        missing = set(case.risky) - flagged
        assert not missing, f"{case.name}: records torch would run are not flagged risky: {missing}"


def test_corpus_covers_the_issue() -> None:
    """Every category the issue names has cases, in every outcome we expect."""
    names = " ".join(c.name for c in CASES)
    for needle in ("sample-inputs", "weight-use-pickle", "constant-use-pickle", "custom-obj",
                   "opaque-obj", "shared-library", "symbolic", "node-target", "metadata",
                   "duplicate", "dotdot", "absolute", "lying-size", "bad-crc", "encrypted",
                   "unknown-compression", "bomb", "truncated", "file-empty", "html",
                   "bare-pickle", "deep-nesting", "giant-numbers", "invalid-utf8",
                   "wrong-types", "nulls", "missing-keys", "unknown-fields", "250k-nodes",
                   "archive-format", "archive-version", "no-programs"):
        assert needle in names, needle
    assert {c.expect for c in CASES} == {OK, ERROR, EITHER}
