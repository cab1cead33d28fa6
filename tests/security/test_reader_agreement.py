"""What we vet is what torch reads (issue 18).

torch reads archives through miniz, which differs from Python's zipfile: it takes
the top folder from the zip's first entry, finds names case-insensitively, reads
offsets as written (zipfile shifts them past bytes before the zip), and extracts
nothing for an entry with the DOS folder attribute. For every file of the hostile
corpus that our reader opens, torch's reader must find the same records with the
same bytes, under every spelling a config could use; every `reader-*` case shows
a real disagreement between torch and a plain zipfile reader (so the refusal is
not vacuous) and is refused by ours.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hostile_corpus import CASES, ERROR, Base, Case
from readers import disagreements, naive, ours

LIGHT = [c for c in CASES if not c.heavy]
READER = [c for c in CASES if c.category == "reader"]


@pytest.mark.parametrize("case", LIGHT, ids=[c.name for c in LIGHT])
def test_torch_reads_what_we_vet(case: Case, base: Base, tmp_path: Path) -> None:
    path, _ = case.make(base, tmp_path)
    if path.is_file():
        assert disagreements(ours, path) == [], case.name


@pytest.mark.parametrize("case", [c for c in READER if c.expect == ERROR],
                         ids=[c.name for c in READER if c.expect == ERROR])
def test_reader_tricks_are_real(case: Case, base: Base, tmp_path: Path) -> None:
    """A plain zipfile reader and torch read these files differently."""
    path, _ = case.make(base, tmp_path)
    assert ours(path) is None, f"{case.name}: our reader should refuse it"
    assert disagreements(naive, path), f"{case.name}: torch and zipfile agree: not a trick"


def test_the_base_archive_agrees_under_both_views(base_archive: Path) -> None:
    # The comparison itself works: an honest archive gives no disagreement.
    assert ours(base_archive) and naive(base_archive)
    assert disagreements(ours, base_archive) == disagreements(naive, base_archive) == []
