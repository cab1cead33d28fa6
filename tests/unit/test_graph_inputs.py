"""core/inputs.py: inputs planned from a program's JSON alone, judged by torch.

Each model is exported with real torch; the plan made from the saved archive (no
torch in the planner) must be a call torch's own `ep.module()` accepts (its guards
check every dim against the ranges and the relations export recorded), and every
spec mistake must be an InputSpecError naming the fix."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

from inspector.core.archive import open_archive
from inspector.core.inputs import (
    DEFAULT_SIZE,
    InputPlan,
    InputSpecError,
    parse_dims,
    parse_shapes,
    plan_inputs,
    plan_programs,
)


def _export(archives: ArchiveFactory, name: str, module: Any, args: tuple, shapes: Any = None,
            kwargs: dict | None = None) -> tuple[Path, Any]:
    import torch

    ep = torch.export.export(module, args, kwargs, dynamic_shapes=shapes)
    return archives.save(f"graph_inputs/{name}", ep), ep


def _doc(path: Path) -> dict[str, Any]:
    with open_archive(path) as ar:
        return ar.program_json("model")


def _call(ep: Any, plan: Any) -> Any:
    """Make torch values for the plan the way the job does, then call torch."""
    import torch

    from inspector.jobs.inputs import user_values

    values = user_values(torch, plan, torch.device("cpu"))
    ordered = [values[i.name] for i in plan.inputs]
    return ep.module()(*ordered)


@pytest.fixture(scope="module")
def models(archive_factory: ArchiveFactory) -> dict[str, tuple[Path, Any]]:
    import torch
    from torch.export import Dim

    nn = torch.nn

    class Embed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(11, 4)

        def forward(self, ids: torch.Tensor, mask: torch.Tensor, x: torch.Tensor) -> Any:
            return self.emb(ids) * mask.unsqueeze(-1) + x

    b, s = Dim("b", min=2, max=8), Dim("s", min=3, max=40)
    out = {"embed": _export(archive_factory, "embed", Embed(), (
        torch.zeros(3, 5, dtype=torch.long), torch.ones(3, 5, dtype=torch.bool),
        torch.randn(3, 5, 4)), ({0: b, 1: s}, {0: b, 1: s}, {0: b, 1: s}))}

    class Consts(nn.Module):
        def forward(self, x: torch.Tensor, n: int, scale: float, flag: bool) -> Any:
            return x * n * scale if flag else x

    out["consts"] = _export(archive_factory, "consts", Consts(), (torch.randn(4, 6), 3, 0.5, True),
                            ({0: Dim("rows", min=2, max=9)}, None, None, None))

    class Pair(nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> Any:
            return torch.cat([a, b], dim=0)[: a.shape[0] * 2]

    d = Dim("d", min=2, max=30)
    out["derived"] = _export(archive_factory, "derived", Pair(), (torch.randn(4, 3), torch.randn(8, 3)),
                             ({0: d}, {0: 2 * d}))

    class Conv(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, img: torch.Tensor) -> Any:
            return self.conv(img).mean()

    out["conv"] = _export(archive_factory, "conv", Conv(), (torch.randn(2, 3, 16, 16),),
                          ({0: Dim("n", min=1, max=4), 2: Dim("h", min=8, max=64),
                            3: Dim("w", min=8, max=64)},))
    return out


@pytest.mark.parametrize("case", ["embed", "consts", "derived", "conv"])
def test_default_plan_is_a_call_torch_accepts(models, case):
    path, ep = models[case]
    plan = plan_inputs(_doc(path), "model")
    _call(ep, plan)  # torch's guards raise on any dim out of range or relation broken


def test_defaults_are_the_traced_sizes_and_fills_follow_dtypes(models):
    plan = plan_inputs(_doc(models["embed"][0]), "model")
    by = plan.by_name()
    assert by["ids"].shape == (3, 5) and by["ids"].fill == "zeros"
    assert by["mask"].fill == "ones" and by["x"].fill == "random"
    assert by["x"].describe() == {"name": "x", "shape": [3, 5, 4], "dtype": "float32"}


def test_constant_inputs_take_their_recorded_values(models):
    plan = plan_inputs(_doc(models["consts"][0]), "model")
    values = {i.name: i.value for i in plan.inputs if i.kind == "constant"}
    assert values == {"n": 3, "scale": 0.5, "flag": True}


def test_dims_and_shapes_override_and_torch_accepts_them(models):
    path, ep = models["embed"]
    doc = _doc(path)
    sym_b, sym_s = [s for s in plan_inputs(doc, "model").symbols]
    plan = plan_inputs(doc, "model", parse_dims([f"{sym_s}=17"]))
    assert plan.by_name()["x"].shape[1] == 17
    _call(ep, plan)
    plan = plan_inputs(doc, "model", {}, parse_shapes(["ids=7x33"]))
    assert plan.by_name()["mask"].shape == (7, 33)  # the same symbols follow
    assert _call(ep, plan).shape == (7, 33, 4)


def test_derived_dims_are_evaluated(models):
    path, ep = models["derived"]
    doc = _doc(path)
    (sym,) = plan_inputs(doc, "model").symbols
    plan = plan_inputs(doc, "model", {sym: 5})
    assert plan.by_name()["a"].shape == (5, 3) and plan.by_name()["b"].shape == (10, 3)
    _call(ep, plan)
    with pytest.raises(InputSpecError, match="expression of .* makes it 10, not 11"):
        plan_inputs(doc, "model", {}, {"a": (5, 3), "b": (11, 3)})


def test_without_hints_a_small_size_inside_the_range(models, tmp_path):
    path, ep = models["conv"]
    doc = _doc(path)

    def drop_hints(value: Any) -> None:
        if isinstance(value, dict):
            if "as_expr" in value and isinstance(value["as_expr"], dict):
                value["as_expr"].pop("hint", None)
            for v in value.values():
                drop_hints(v)
        elif isinstance(value, list):
            for v in value:
                drop_hints(v)

    drop_hints(doc)
    plan = plan_inputs(doc, "model")
    n, _, h, w = plan.by_name()["img"].shape
    assert n == DEFAULT_SIZE and h == w == 8  # min 8 > DEFAULT_SIZE: the range wins
    _call(ep, plan)


@pytest.mark.parametrize("dims, shapes, why", [
    (["s9=1"], [], "has no symbol of that name"),
    ([], ["img=2x3x16"], "has 4 dimensions, not 3"),
    ([], ["img=2x4x16x16"], "fixed at 3"),
    ([], ["nope=2"], "has no input of that name"),
    ([], ["img=9x3x16x16"], "outside its range 1..4"),
])
def test_bad_specs_name_the_fix(models, dims, shapes, why):
    doc = _doc(models["conv"][0])
    with pytest.raises(InputSpecError, match=why):
        plan_inputs(doc, "model", parse_dims(dims), parse_shapes(shapes))


def test_range_is_checked_for_dims(models):
    doc = _doc(models["conv"][0])
    sym = next(s for s, v in plan_inputs(doc, "model").symbols.items() if v == 2)
    with pytest.raises(InputSpecError, match=f"{sym} = 5 is outside its range 1..4"):
        plan_inputs(doc, "model", {sym: 5})


@pytest.mark.parametrize("spec", ["s70", "s70=", "=3", "s70=-1", "S70=3", "s70=3.5"])
def test_dim_specs_that_do_not_parse(spec):
    with pytest.raises(InputSpecError, match="does not parse"):
        parse_dims([spec])


@pytest.mark.parametrize("spec", ["x", "x=2x", "x=2,3", "x=-2", "1x=2", "x=2xx3"])
def test_input_specs_that_do_not_parse(spec):
    with pytest.raises(InputSpecError, match="does not parse"):
        parse_shapes([spec])


def test_zero_d_and_conflicting_specs():
    assert parse_shapes(["x="]) == {"x": ()}
    with pytest.raises(InputSpecError, match="given twice"):
        parse_dims(["s1=2", "s1=3"])


def test_several_programs_share_one_spec(models):
    docs = {"a": _doc(models["conv"][0]), "b": _doc(models["embed"][0])}
    # a symbol of b's that a does not have (separate exports may reuse names)
    sym = next(s for s in plan_inputs(docs["b"], "b").symbols
               if s not in plan_inputs(docs["a"], "a").symbols)
    plans = plan_programs(docs, {sym: 4})
    assert sym not in plans["a"].symbols
    assert sym in plans["b"].symbols and plans["b"].symbols[sym] == 4
    with pytest.raises(InputSpecError, match="no program .* has a symbol"):
        plan_programs(docs, {"zz9": 4})


def test_planning_reads_only_json(models, tmp_path):
    """The planner's input is the archive's JSON text: a copy of the program record
    with every weight removed still plans the same."""
    path = models["embed"][0]
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith("models/model.json"))
        doc = json.loads(z.read(name))
    assert plan_inputs(doc, "model") == plan_inputs(_doc(path), "model")


def test_the_window_s_plan_without_the_nodes_is_the_full_parse_s(tmp_path_factory):
    """plan_document (the Profile panel: the JSON without its nodes) plans what the
    whole JSON plans, on every program of the fidelity corpus and of the archives
    of other torch releases (where it declines a text, the panel reads it whole)."""
    from fidelity_cases import session_corpus

    from inspector.core.inputs import plan_document

    archives, _ = session_corpus(tmp_path_factory)
    paths = [a.path for a in archives] + sorted(Path(__file__).parents[1].glob("data/*/*.pt2"))
    planned = declined = 0
    for path in paths:
        with open_archive(path) as ar:
            for name in ar.program_names:
                slim = plan_document(ar.program_text(name))
                if slim is None:
                    declined += 1
                    continue
                outcomes = []
                for doc in (ar.program_json(name), slim):
                    try:
                        outcomes.append(plan_inputs(doc, name))
                    except InputSpecError as exc:
                        outcomes.append(str(exc))
                assert outcomes[1] == outcomes[0], (path.name, name)
                planned += isinstance(outcomes[0], InputPlan)
    assert planned > 50 and declined < planned / 10
