"""`run`'s loader (inspector/jobs/load.py) on every hostile archive (issue 18).

`info`, `list` and `audit` never call torch; `run` must, through load.py. So for
every case of the corpus, in-process: `vet` without consent either refuses with
an InspectorError or passes, and whatever passes is then built by torch
(`load_programs`, the weights and constants it maps) and must not have run
anything (the marker stays absent). Cases whose danger is code torch would
execute must be refused without --trust.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from hostile_corpus import CASES, ERROR, Base, Case, by_name
from inspector.core.errors import InspectorError
from inspector.jobs import load
from inspector.jobs.load import UntrustedArchiveError

LIGHT = [c for c in CASES if not c.heavy]


@pytest.mark.parametrize("case", LIGHT, ids=[c.name for c in LIGHT])
def test_load_without_consent_runs_nothing(case: Case, base: Base, tmp_path: Path) -> None:
    path, marker = case.make(base, tmp_path)
    try:
        vetted = load.vet(path)
    except InspectorError:
        vetted = None
    else:
        # Files the reader refuses as archives (program-level limits such as graph
        # nesting belong to the viewer's parser, which vet does not use).
        assert case.expect != ERROR or case.category == "json", (
            f"{case.name}: vetted a file the reader must refuse")
        refused_by_kind = [r for r in case.risky if "sample_inputs" not in r]
        assert not refused_by_kind, f"{case.name}: vetted records torch would run: {refused_by_kind}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                load.load_programs(vetted)
            except Exception:  # torch may still fail on a broken graph; it must not run code
                pass
    assert not marker.exists(), f"{case.name}: loading ran code from the file"


def test_case_variant_opaque_record_needs_consent(base: Base, tmp_path: Path) -> None:
    """The issue's exploit: the config names opaque_obj_0 (use_pickle false), the
    record is stored as OPAQUE_OBJ_0. Refused without --trust, and the error says why."""
    path, marker = by_name("reader-case-variant-opaque-record").make(base, tmp_path)
    with pytest.raises(UntrustedArchiveError, match="(?i)opaque") as info:
        load.vet(path)
    assert any("opaque_obj_0" in r.lower() for r in info.value.records)
    assert not marker.exists()


@pytest.mark.parametrize("path_name, use_pickle", [
    ("opaque_obj_0", False), ("OPAQUE_OBJ_7", False), ("custom_obj_0", False),
    ("Custom_Obj_3", False), ("tensor_0", True)])
def test_config_entries_naming_code_need_consent(path_name: str, use_pickle: bool) -> None:
    """Refused by the config entry alone, whatever the record is called or classified."""
    entry = {"path_name": path_name, "use_pickle": use_pickle, "tensor_meta": None}
    with pytest.raises(UntrustedArchiveError):
        load.check_payloads("model", {}, {"c": entry}, trust=False)
    load.check_payloads("model", {}, {"c": entry}, trust=True)  # consent given
    load.check_payloads("model", {}, {"c": dict(entry, path_name="tensor_0", use_pickle=False)},
                         trust=False)
