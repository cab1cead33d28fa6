"""The typed program model: faithful to the JSON, tolerant of what torch adds,
strict about structure."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from inspector.core.program import parser as program_mod  # where the limits live
from inspector.core.archive import ArchiveError, open_archive
from inspector.core.program import parse_program


@pytest.fixture(scope="module")
def doc(small_archive: Path) -> dict:
    with open_archive(small_archive) as a:
        return a.program_json("model")


def test_model_of_a_real_program(doc: dict) -> None:
    p = parse_program(doc, "model")
    assert p.schema_version[0] >= 8
    assert [s.kind for s in p.input_specs] == ["parameter", "parameter", "buffer",
                                               "user_input", "user_input"]
    assert p.input_specs[2].target == "scale" and p.input_specs[2].persistent is True
    x = p.graph.tensor_values["x"]
    assert x.dtype_name == "float32" and str(x.device) == "cpu"
    assert isinstance(x.sizes[0], str) and x.sizes[1] == 4
    (sym,) = p.range_constraints
    assert (p.range_constraints[sym].min, p.range_constraints[sym].max) == (2, 64)
    arange = next(n for n in p.all_nodes() if n.op_name == "arange")
    device = next(i for i in arange.inputs if i.name == "device")
    assert device.arg.kind == "as_device" and device.arg.value["type"] == "cpu"
    maxed = next(n for n in p.all_nodes() if n.op_name == "max")
    assert len(maxed.output_names()) == 2


def test_unknown_fields_and_argument_kinds_are_kept(doc: dict) -> None:
    d = copy.deepcopy(doc)
    d["brand_new_field"] = {"x": 1}
    d["graph_module"]["graph"]["nodes"][0]["inputs"][0]["arg"] = {"as_future_thing": [1, 2]}
    p = parse_program(d, "model")
    assert p.unknown_fields == {"brand_new_field": {"x": 1}}
    assert p.graph.nodes[0].inputs[0].arg.kind == "as_future_thing"
    from inspector.core.listing import render_listing
    assert "as_future_thing" in render_listing(p).text()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("graph_module"), "no graph_module.graph"),
    (lambda d: d["graph_module"]["graph"].__setitem__("nodes", {"a": 1}), "nodes is not a list"),
    (lambda d: d["graph_module"]["graph"]["nodes"].__setitem__(0, 42), "node #0 is not an object"),
    (lambda d: d["graph_module"]["graph"]["nodes"][0].__setitem__("target", None), "target is not a string"),
    (lambda d: d.__setitem__("range_constraints", []), "range_constraints is not an object"),
])
def test_structural_errors_name_the_place(doc: dict, mutate, message: str) -> None:
    d = copy.deepcopy(doc)
    mutate(d)
    with pytest.raises(ArchiveError, match=message):
        parse_program(d, "model")


def test_node_limit(doc: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_mod, "MAX_NODES", 3)
    with pytest.raises(ArchiveError, match="over the limit of 3 nodes"):
        parse_program(doc, "model")


def test_nesting_limit(doc: dict) -> None:
    d = copy.deepcopy(doc)
    graph = d["graph_module"]["graph"]
    inner = {"inputs": [], "outputs": [], "nodes": []}
    for _ in range(program_mod.MAX_GRAPH_NESTING + 2):
        inner = {"inputs": [], "outputs": [], "nodes": [{
            "target": "torch.ops.higher_order.cond", "outputs": [], "metadata": {},
            "inputs": [{"name": "", "kind": 1, "arg": {"as_graph": {"name": "g", "graph": inner}}}],
        }]}
    graph["nodes"].append(inner["nodes"][0])
    with pytest.raises(ArchiveError, match="nest deeper than the limit"):
        parse_program(d, "model")
