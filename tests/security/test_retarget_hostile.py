"""Retarget on every hostile or broken archive of the corpus (in-process).

The contract: it writes a valid archive or raises InspectorError; it never runs
anything from the file (the marker stays absent) and never leaves a partial file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hostile_corpus import CASES, Base, Case
from inspector.core.archive import open_archive
from inspector.core.errors import InspectorError
from inspector.core.retarget import retarget

# Light cases, plus the weight bomb: an honest reader opens it, and a copy would
# write 3 GB unless retarget refuses it.
LIGHT = [c for c in CASES if not c.heavy or c.name == "zip-bomb-weight-3gb"]


@pytest.mark.parametrize("case", LIGHT, ids=[c.name for c in LIGHT])
def test_retarget_contract(case: Case, base: Base, tmp_path: Path) -> None:
    path, marker = case.make(base, tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "retargeted.pt2"
    try:
        result = retarget(path, out, "cuda")
    except InspectorError:
        assert not list(out_dir.iterdir()), f"{case.name}: left a file behind"
    else:
        with open_archive(out) as archive:  # what we wrote reads back
            assert sorted(archive.program_names) == sorted(p.program for p in result.programs)
    assert not marker.exists(), f"{case.name}: the file ran code"
