"""`diff` on the hostile corpus: every light case against the clean archive it
was made from (and against itself) either diffs or raises InspectorError, runs
nothing, and prints no terminal control; a few through the real CLI process."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from child import run_inspector
from hostile_corpus import CASES, ERROR, OK, Base, Case, by_name
from inspector.commands.diff import format_text
from inspector.core.archive import open_archive
from inspector.core.diff import diff_archives
from inspector.core.errors import InspectorError

LIGHT = [c for c in CASES if not c.heavy]


def _diff(a: Path, b: Path) -> None:
    with open_archive(a) as x, open_archive(b) as y:
        result = diff_archives(x, y)
        for line in format_text(result, "a", "b"):
            line.encode("utf-8")
        orjson.dumps(result.as_dict())
        for p in result.programs:
            al = p.alignment()
            if al is not None:
                row = -1
                while (row := al.next_change(row)) is not None:
                    pass


@pytest.mark.parametrize("case", LIGHT, ids=[c.name for c in LIGHT])
def test_diff_returns_or_raises_our_error(case: Case, base: Base, base_archive: Path,
                                          tmp_path: Path) -> None:
    path, marker = case.make(base, tmp_path)
    for a, b in ((base_archive, path), (path, base_archive), (path, path)):
        try:
            _diff(a, b)
        except InspectorError as exc:
            # diff audits both archives (and reads their weights configs): it
            # refuses what `audit` refuses
            assert case.expect != OK or "audit" in case.refused_by, (
                f"{case.name}: expected readable, got {exc}")
            if case.expect == ERROR or "audit" in case.refused_by:
                assert case.match in str(exc).lower(), f"{case.name}: {exc}"
        else:
            assert case.expect != ERROR, f"{case.name}: expected an error ({case.match!r})"
    assert not marker.exists(), f"{case.name}: the file ran code"


@pytest.mark.parametrize("name", ["format-weird-program-names", "code-in-metadata",
                                  "json-argument-values-of-other-types", "pickle-everywhere"])
def test_cli_diff_contract(name: str, base: Base, base_archive: Path, tmp_path: Path) -> None:
    path, marker = by_name(name).make(base, tmp_path)
    for args in (["diff", str(base_archive), str(path)], ["diff", str(path), str(path), "--json"]):
        res = run_inspector(args, timeout=90, cwd=tmp_path)
        assert res.rc in (0, 1, 2), res.describe()
        assert b"Traceback" not in res.stderr and not res.stdout_escapes, res.describe()
        if res.rc == 2:
            lines = res.stderr.decode("utf-8", "replace").splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), res.describe()
            assert "internal error" not in lines[0], res.describe()
    assert not marker.exists()
