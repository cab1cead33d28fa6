"""Archives load.py used to refuse: derived dims (range keys such as `2*s40 + 1`, from
`torch.export.Dim` arithmetic) and associative_scan (functorch's vmap wrappers as node
targets). Real exports, checked and profiled through real children, and compared with
what torch's own loader makes of the same archive."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from test_profile import _check_names, cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from fidelity_models import custom_builders  # noqa: E402

from inspector.core.archive import open_archive  # noqa: E402
from inspector.jobs import load  # noqa: E402

# a symbol's own name (s40, u3), not a derived dim's printed arithmetic (2*s40 + 1)
PLAIN_SYMBOL = re.compile(r"^[a-z]{1,6}\d{1,9}$")

CASES = ("ops/derived_dims", "cond/associative_scan")


def _linear_shifted() -> Any:
    """A Linear whose second input is one longer than the first (`s0 + 1` key)."""
    import torch

    class Shifted(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return self.lin(x) + y[1:]

    n = torch.export.Dim("n", min=2, max=32)
    return torch.export.export(Shifted(), (torch.randn(5, 4), torch.randn(6, 4)),
                               dynamic_shapes=({0: n}, {0: n + 1}))


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    import torch
    from torch.export.pt2_archive._package import package_pt2

    programs = {name.replace("/", "_"): make() for name, _, make in custom_builders()
                if name in CASES}
    programs["shifted"] = _linear_shifted()
    assert len(programs) == 3
    out = tmp_path_factory.mktemp("derived") / "derived.pt2"
    with torch.no_grad():
        package_pt2(str(out), exported_programs=programs)
    return out, programs


def _ranges(ep: Any) -> dict[str, tuple[int, int]]:
    return {str(k): (int(v.lower), int(v.upper)) for k, v in ep.range_constraints.items()}


def test_loader_keeps_derived_ranges_as_torch_does(archive):
    from torch.export.pt2_archive._package import load_pt2

    path, exported = archive
    theirs = load_pt2(str(path)).exported_programs
    _, ours = load.load(path)
    derived = _ranges(ours["ops_derived_dims"])
    assert {k for k in derived if not PLAIN_SYMBOL.fullmatch(k)} == {
        f"2*{s} + 1" for s in derived if PLAIN_SYMBOL.fullmatch(s)} | {
        f"2*{s}" for s in derived if PLAIN_SYMBOL.fullmatch(s)}
    assert any(k.endswith(" + 1") for k in _ranges(ours["shifted"]))
    for name in exported:
        assert _ranges(ours[name]) == _ranges(theirs[name]) == _ranges(exported[name]), name


def test_associative_scan_loads_and_computes_a_cumulative_sum(archive):
    import torch

    path, _ = archive
    _, ours = load.load(path, programs=["cond_associative_scan"])
    x = torch.arange(12.0).reshape(4, 3)
    got = ours["cond_associative_scan"].module()(x)
    assert torch.equal(got, torch.cumsum(x, 0))
    targets = {str(n.target) for n in ours["cond_associative_scan"].graph.nodes}
    assert any("_vmap_increment_nesting" in t for t in targets)


def test_check_and_profile_cover_them_under_the_listing_names(archive):
    path, exported = archive
    proc = cli("check", str(path), "--device", "cuda", "--json")
    assert proc.returncode == 0, proc.stderr
    checked = json.loads(proc.stdout)
    assert sorted(p["name"] for p in checked["programs"]) == sorted(exported)
    assert all(p["ok"] and not p["unchecked"] for p in checked["programs"]), checked
    # a chosen size of the root dim gives the derived inputs their derived sizes
    with open_archive(path) as ar:
        (root,) = [k for k in ar.program("ops_derived_dims").range_constraints
                   if PLAIN_SYMBOL.fullmatch(k)]
    proc = cli("check", str(path), "--device", "cpu", "--program", "ops_derived_dims",
               "--dim", f"{root}=10", "--json")
    assert proc.returncode == 0, proc.stderr
    (p,) = json.loads(proc.stdout)["programs"]
    assert {i["name"]: i["shape"] for i in p["inputs"]} == {"x": [21], "y": [20]}
    proc = cli("profile", str(path), "--device", "cpu", "--warmup", "0", "--repeats", "1",
               "--json")
    assert proc.returncode == 0, proc.stderr
    profiled = json.loads(proc.stdout)
    assert _check_names(path, profiled, set()) == 3
    shapes = {p["name"]: {i["name"]: i["shape"] for i in p["inputs"]}
              for p in profiled["programs"]}
    x, y = shapes["ops_derived_dims"]["x"], shapes["ops_derived_dims"]["y"]
    assert x[0] == y[0] + 1 and y[0] % 2 == 0
    assert shapes["shifted"]["y"][0] == shapes["shifted"]["x"][0] + 1


def test_loader_rebuilds_the_graph_torch_rebuilds(tiny_archive):
    """load.py's deserializer caches (schema hints, sympified shapes) change nothing:
    the same code, the same symbolic shape on every node, the same ranges as torch's
    own loader on the real toy (whose sizes are products, Min(), derived batch dims)."""
    import transformers.modeling_outputs  # noqa: F401 - registers the HF output types
    from torch.export.pt2_archive._package import load_pt2

    theirs = load_pt2(str(tiny_archive)).exported_programs
    _, ours = load.load(tiny_archive, payloads="meta")
    symbolic = 0
    for name, ep in ours.items():
        ref = theirs[name]
        assert ep.graph_module.code == ref.graph_module.code, name
        assert _ranges(ep) == _ranges(ref), name
        for a, b in zip(ep.graph.nodes, ref.graph.nodes, strict=True):
            va, vb = a.meta.get("val"), b.meta.get("val")
            assert repr(getattr(va, "shape", va)) == repr(getattr(vb, "shape", vb)), (name, a.name)
            symbolic += "s" in repr(getattr(va, "shape", ""))
    assert symbolic > 50
