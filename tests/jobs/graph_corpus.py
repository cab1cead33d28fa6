"""Archives this project never wrote, for the check/profile tests: the fidelity
corpus's models (tests/unit/fidelity_models.py, fidelity_cases.py: HF architectures,
torch.export feature cases, ExportDB examples), packaged as one multi-program archive
so one job child (one torch import) runs them all.

Left out: cases whose custom operators exist only in the process that registered
them (a job child cannot resolve them, and load.py refuses non-ATen targets)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from fidelity_cases import _exportdb_builders, strip_node_names  # noqa: E402
from fidelity_models import custom_builders, hf_builders  # noqa: E402

NOT_LOADABLE = ("ops/custom_ops", "decomp/custom_ops")


def program_name(case: str, sub: str | None = None) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", case)
    return f"{base}__{sub}" if sub else base


def build(out: Path, groups: Iterable[str] = ("custom", "hf"),
          exportdb: Iterable[str] = ()) -> tuple[Path, dict[str, Any], list[str]]:
    """Export every case of `groups` (plus the named ExportDB examples) and save them
    as one archive: (path, program name -> ExportedProgram, skipped cases)."""
    import torch
    from torch.export.pt2_archive._package import package_pt2

    builders: list[tuple[str, Any]] = []
    if "custom" in groups:
        builders += [(n, b) for n, _, b in custom_builders() if n not in NOT_LOADABLE]
    if "hf" in groups:
        builders += [(n, b) for n, _, b in hf_builders()]
    wanted = set(exportdb)
    builders += [(n, b) for n, _, b in _exportdb_builders() if n.split("/", 1)[1] in wanted
                 and n.startswith("exportdb/")]
    programs: dict[str, Any] = {}
    skipped: list[str] = []
    for name, make in builders:
        try:
            result = make()
        except Exception as exc:  # noqa: BLE001 - a case this torch cannot export
            skipped.append(f"{name}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        if isinstance(result, dict):
            for sub, ep in result.items():
                programs[program_name(name, sub)] = ep
        else:
            programs[program_name(name)] = result
    with torch.no_grad():
        package_pt2(str(out), exported_programs=programs)
    # programs load.py refuses (targets outside its allow-list) would fail the
    # whole archive: leave them out, named in `skipped`
    from inspector.jobs import load

    refused = []
    for name in list(programs):
        try:
            load.vet(out, programs=[name])
        except load.UnsafeProgramError as exc:
            refused.append(name)
            skipped.append(f"{name}: refused by load.py ({str(exc)[:120]})")
    if refused:
        for name in refused:
            programs.pop(name)
        out.unlink()
        with torch.no_grad():
            package_pt2(str(out), exported_programs=programs)
    return out, programs, skipped


def cached_build(groups: Iterable[str] = ("custom", "hf"), exportdb: Iterable[str] = ()
                 ) -> tuple[Path, list[str], list[str]]:
    """build(groups, exportdb) made once per source version in the suite's disk cache
    (tests/export_cache.py: shared by the xdist workers and later runs, keyed by
    torch/transformers, the builders' files and the inspector package, whose load.py
    decides what is left out): (path, program names, skipped cases)."""
    import hashlib
    import json

    from export_cache import INSPECTOR, cached_dir, source_key

    groups, exportdb = sorted(groups), sorted(exportdb)
    here = Path(__file__).resolve()
    unit = here.parents[1] / "unit"
    what = json.dumps([groups, exportdb])
    key = source_key(here, unit / "fidelity_cases.py", unit / "fidelity_models.py", INSPECTOR,
                     extra=what)
    name = "graph-corpus-" + hashlib.sha256(what.encode()).hexdigest()[:8]  # one per case list

    def make(folder: Path) -> None:
        _, programs, skipped = build(folder / "corpus.pt2", groups, exportdb)
        (folder / "manifest.json").write_text(json.dumps({"programs": sorted(programs),
                                                          "skipped": skipped}))

    folder = cached_dir(name, key, make)
    manifest = json.loads((folder / "manifest.json").read_text())
    return folder / "corpus.pt2", manifest["programs"], manifest["skipped"]


def without_names(src: Path, dst: Path) -> Path:
    """The archive as older torch wrote it: no node names (the deserializer names them)."""
    strip_node_names(src, dst)
    return dst
