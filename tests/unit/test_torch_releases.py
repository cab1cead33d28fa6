"""Archives written by other torch releases (issue 14, items 6 and 7).

tests/data/<release>/ holds small archives that torch 2.5.1, 2.6.0, 2.9.1 and
2.14.1 wrote (2.5 and 2.6 in the legacy layout, schemas 7.3, 8.2, 8.14 and
8.20), each beside what that torch printed after loading it back
(print_readable) and what it said about it (manifest.json: user_inputs,
range constraints). tests/data/make_fixtures.py wrote them; these tests need
none of those releases installed.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import orjson
import pytest

from fidelity_cases import normalize
from inspector.core.archive import open_archive
from inspector.core.audit import PORTABILITY, audit_archive
from inspector.core.listing import COMMENT, render_listing
from inspector.core.summary import program_summary

DATA = Path(__file__).resolve().parents[1] / "data"
RELEASES = sorted(p.name for p in DATA.iterdir() if p.is_dir() and (p / "manifest.json").exists())
FIXTURES = [(r, p.stem) for r in RELEASES for p in sorted((DATA / r).glob("*.pt2"))]


def _program_json(path: Path) -> bytes:
    with zipfile.ZipFile(path) as zf:
        name = next(n for n in zf.namelist() if n.endswith(("models/model.json",
                                                             "serialized_exported_program.json")))
        return zf.read(name)


def test_fixtures_cover_the_releases() -> None:
    assert {"2.5.1", "2.6.0", "2.9.1", "2.14.1"} <= set(RELEASES)
    for release in RELEASES:
        assert len(list((DATA / release).glob("*.pt2"))) >= 5, release
    # what makes the old ones hard is really in them
    block25 = _program_json(DATA / "2.5.1" / "block.pt2")
    assert b"Infinity" in block25 and b'"kind"' not in block25
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(block25)
    assert b'"kind"' not in _program_json(DATA / "2.6.0" / "block.pt2")
    with zipfile.ZipFile(DATA / "2.6.0" / "block.pt2") as zf:
        assert "serialized_exported_program.json" in zf.namelist()  # the legacy layout


@pytest.mark.parametrize(("release", "case"), FIXTURES, ids=[f"{r}/{c}" for r, c in FIXTURES])
def test_listing_is_that_torchs_print_readable(release: str, case: str) -> None:
    theirs = normalize((DATA / release / f"{case}.txt").read_text())
    with open_archive(DATA / release / f"{case}.pt2") as archive:
        program = archive.program("model")
    listing = render_listing(program)
    ours = normalize(listing.lines)
    statements = [line for line in theirs if not line.startswith("#")]
    assert [line for line in ours if not line.startswith("#")] == statements
    # `# File:` comments grouped as that release groups them, and said so
    assert ours == theirs
    assert listing.comments_as.startswith(f"torch {release}")


def test_comment_style_follows_the_torch_asked_for() -> None:
    """The same 2.9.1 archive printed as 2.9 prints it, and as 2.14 does."""
    with open_archive(DATA / "2.9.1" / "unbacked.pt2") as archive:
        program = archive.program("model")
    old = render_listing(program)
    new = render_listing(program, torch_version="2.14.1")
    assert "#" in normalize(old.lines)  # the bare `# ` of a trace without a frame
    assert "# No stacktrace found for following nodes" in normalize(new.lines)
    assert new.comments_as == "torch 2.14.1"
    assert [t for t, k in zip(old.lines, old.kinds) if k != COMMENT and t] == \
        [t for t, k in zip(new.lines, new.kinds) if k != COMMENT and t]


@pytest.mark.parametrize("release", RELEASES)
def test_info_says_what_that_torch_says(release: str) -> None:
    manifest = json.loads((DATA / release / "manifest.json").read_text())
    assert manifest["cases"]
    for case, said in manifest["cases"].items():
        with open_archive(DATA / release / f"{case}.pt2") as archive:
            summary = program_summary(archive.program("model"))
        assert summary["user_inputs"] == said["user_inputs"], case
        assert sorted(summary["range_constraints"]) == said["range_constraints"], case
        assert summary["torch_version"].startswith(release)


def test_unbounded_dims_read_as_unbounded() -> None:
    """`"max_val": Infinity` (torch 2.5) is a Dim without a max."""
    with open_archive(DATA / "2.5.1" / "block.pt2") as archive:
        ranges = archive.program("model").range_constraints
    assert ranges and all(r.max is None for r in ranges.values())


def test_audit_says_when_this_torch_cannot_load_it() -> None:
    import torch

    refused = []
    for release, case in FIXTURES:
        path = DATA / release / f"{case}.pt2"
        try:
            torch.export.load(str(path))
        except Exception as exc:  # noqa: BLE001 - torch 2.13 also trips on 2.6's cond
            if "does not match our current schema version" in str(exc):
                refused.append(path)
        with open_archive(path) as archive:
            findings = [f for f in audit_archive(archive, rules=[PORTABILITY])
                        if f.group == "schema"]
        if path in refused:
            (finding,) = findings
            assert finding.severity == "warning"
            assert f"the installed torch {torch.__version__} cannot load it" in finding.message
            assert "schema version 7." in finding.message
        else:
            assert not findings, (path, findings)
    assert refused and all(p.parent.name == "2.5.1" for p in refused)


def test_bare_constants_stay_bounded() -> None:
    """The fallback parser for torch <= 2.6's bare tokens keeps the limits:
    no giant integers, no deep nesting, no trailing garbage."""
    from inspector.core.archive import _loads_bare_constants as loads

    assert loads(b'{"a": Infinity, "b": [-Infinity, NaN, 3]}') == \
        {"a": "Infinity", "b": ["-Infinity", "NaN", 3]}
    assert loads(b'{"a": 1}') is None  # nothing to fix: orjson's own error stands
    for bad in (b'{"a": NaN, "b": 123456789012345678901234567890}',
                b"[" * 100_000 + b"NaN" + b"]" * 100_000, b'{"a": NaN} trailing',
                b'{"a": NaN, "b": "\xff"}'):
        assert loads(bad) is None


def test_list_as_the_installed_torch_prints_it() -> None:
    """`list --as-torch installed`: the text this torch prints after loading an
    archive another release wrote (checked on every fixture it can load)."""
    import subprocess
    import sys

    import torch

    compared = 0
    for release, case in FIXTURES:
        path = DATA / release / f"{case}.pt2"
        try:
            theirs = torch.export.load(str(path)).graph_module.print_readable(print_output=False)
        except Exception:  # noqa: BLE001 - schema 7.x, and 2.6's cond, which this torch refuses
            continue
        proc = subprocess.run([sys.executable, "-m", "inspector", "list", str(path),
                               "--as-torch", "installed"], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        ours = normalize(proc.stdout)[1:]  # after the `# program: model` line
        assert ours == normalize(theirs), f"{release}/{case}"
        compared += 1
    assert compared >= 12
