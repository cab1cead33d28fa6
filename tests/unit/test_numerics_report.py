"""The numerics report's answers and rollups (core/numerics_report.py) and what the window
draws of them (core/numerics_layers.py), on hand-made node records whose answers are
worked out here by hand."""

from __future__ import annotations

import math

from inspector.core.frames import ModuleEntry
from inspector.core.node_index import NodeInfo
from inspector.core.numerics_layers import FLOOR, answers, numerics_layers, points
from inspector.core.numerics_report import (
    first_failing,
    first_nonfinite,
    module_rollup,
    most_amplifying,
)


def _info(name: str, line: int, *paths: str) -> NodeInfo:
    mods = tuple(ModuleEntry(f"k{i}", p, f"pkg.{p.rsplit('.', 1)[-1] or 'Root'}")
                 for i, p in enumerate(paths))
    return NodeInfo(name, line, "torch.ops.aten.add.Tensor", mods, ())


def _node(name: str, line: int, passes: bool = True, max_abs: float = 0.0, **more) -> dict:
    return {"node": name, "line": line, "module": "", "passes": passes, "max_abs": max_abs,
            "max_rel": 0.0, "mean_abs": 0.0, "cosine": 1.0, "nan": False, "inf": False,
            "rtol": 1.6e-2, "atol": 1e-5, **more}


# x (input, error 0.01) -> a [m] -> b [m] -> c [n] -> output
INDEX = {"a": _info("a", 3, "", "m"), "b": _info("b", 4, "", "m"), "c": _info("c", 5, "", "n")}
USES = {"a": ["x"], "b": ["a"], "c": ["b"]}


def test_amplification_is_output_error_over_input_error():
    nodes = [_node("a", 3, max_abs=0.1), _node("b", 4, False, 0.5), _node("c", 5, False, 0.2)]
    errors = {"x": 0.01, "a": 0.02, "b": 0.05, "c": 0.04}
    rows = {r["path"]: r for r in module_rollup(nodes, INDEX, USES, errors, ["c"])}
    m, n = rows["m"], rows["n"]
    assert (m["in_error"], m["out_error"]) == (0.01, 0.05)  # b leaves m, x enters it
    assert m["amplification"] == 0.05 / 0.01
    assert n["amplification"] == 0.04 / 0.05
    assert m["failing"] == 1 and m["first_failing"] == "b" and m["worst"] == "b"
    assert rows[""]["nodes"] == 3 and rows[""]["in_error"] == 0.01
    assert most_amplifying(list(rows.values())) == "m"
    assert first_failing(nodes) == "b"


def test_error_made_from_exact_inputs():
    nodes = [_node("a", 3), _node("b", 4), _node("c", 5, False, 1.0)]
    errors = {"x": 0.0, "a": 0.0, "b": 0.0, "c": 0.3}
    rows = module_rollup(nodes, INDEX, USES, errors, ["c"])
    n = next(r for r in rows if r["path"] == "n")
    assert n["makes_error"] and n["amplification"] is None
    assert most_amplifying(rows) == "n"


def test_first_nan_and_what_made_it():
    nodes = [_node("a", 3), _node("b", 4, nan=True, nonfinite={
        "reference": {"nan": 2, "inf": 0}, "candidate": {"nan": 0, "inf": 0}})]
    got = first_nonfinite(nodes, [{"name": "x", "nan": False}], USES, "nan")
    assert got["node"] == "b" and got["made_by"] == "b" and not got["from_input"]
    assert got["runs"] == ["reference"]
    fed = first_nonfinite([_node("a", 3, nan=True, nonfinite={
        "reference": {"nan": 1}, "candidate": {"nan": 1}})], [{"name": "x", "nan": True}],
        USES, "nan")
    assert fed["made_by"] == "x" and fed["from_input"] and fed["runs"] == ["reference", "candidate"]
    assert first_nonfinite(nodes, [], USES, "inf") is None


def test_layers_chart_and_answers():
    program = {"name": "p", "nodes": [
        _node("a", 3, tol_ratio=0.0), _node("b", 4, False, 0.5, tol_ratio=40.0),
        _node("c", 5, True, 1e-6, tol_ratio=0.1)],
        "first_over_tolerance": "b", "first_nan": None, "first_inf": None,
        "modules": [{"path": "m", "class": "pkg.M", "max_abs": 0.5, "failing": 1, "nodes": 2,
                     "worst": "b", "amplification": 5.0}], "most_amplifying": "m"}
    (layer,) = numerics_layers({"programs": [program]}).values()
    assert layer.marks["b"].severity == "error" and "a" not in layer.marks
    assert layer.heat["b"].value > layer.heat["c"].value > layer.heat["a"].value == 0.0
    assert layer.heat["a"].text == "" and layer.heat["b"].text == "5.0e-01"
    assert layer.modules["m"].value == 0.5
    pts = points(program)
    assert [p.y for p in pts] == [FLOOR, 40.0, 0.1] and [p.passes for p in pts] == [True, False, True]
    said = {a.label: a for a in answers(program)}
    assert said["First over tolerance"].node == "b" and "line 4" in said["First over tolerance"].text
    assert said["First NAN"].node is None
    assert said["Most amplifying module"].node == "b"
    assert math.isclose(pts[1].y, 40.0)
