"""The graph picture's layout (core/graph_layout.py, graph_picture.py), checked on
archives torch wrote (the demo toy, the release fixtures of tests/data): no two boxes
of a level overlap and an open group holds its contents, every edge leaves its
source's bottom side and enters its target's top side, layers run one way (down),
and an edge drawn against the flow closes a real cycle of the level."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from inspector.core.archive import open_archive
from inspector.core.graph_layout import dot_available
from inspector.core.graph_model import GraphModel, graph_paths
from inspector.core.graph_picture import GraphPicture, Picture

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "resources" / "demo" / "toy-tiny.pt2"
FIXTURES = sorted((ROOT / "tests" / "data").glob("*/*.pt2"))
EPS = 1.0  # px: dot writes two decimals of an inch

pytestmark = pytest.mark.skipif(not dot_available(), reason="needs Graphviz's dot (apt install graphviz)")


def check_picture(pic: Picture) -> int:
    """The picture's properties; the number of edges checked."""
    boxes = {b.id: b for b in pic.boxes}
    assert len(boxes) == len(pic.boxes), "a box id twice"
    siblings = defaultdict(list)
    for b in pic.boxes:
        siblings[b.parent].append(b)
        assert b.w > 0 and b.h > 0
        if b.parent is not None:  # inside its open group's frame
            f = boxes[b.parent]
            assert f.open
            assert f.x - EPS <= b.x and b.x + b.w <= f.x + f.w + EPS, (b.id, f.id)
            assert f.y - EPS <= b.y and b.y + b.h <= f.y + f.h + EPS, (b.id, f.id)
    for group in siblings.values():
        group.sort(key=lambda b: b.x)
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if b.x >= a.x + a.w - EPS:
                    break
                assert not (b.y < a.y + a.h - EPS and a.y < b.y + b.h - EPS), (a.id, b.id)
    forward = defaultdict(set)
    for e in pic.edges:
        if not e.back:
            forward[e.src].add(e.dst)
    for e in pic.edges:
        s, t = boxes[e.src], boxes[e.dst]
        assert boxes[e.src].parent == e.parent == boxes[e.dst].parent
        (x0, y0), (x1, y1) = e.points[0], e.points[-1]
        assert len(e.points) >= 4 and len(e.points) % 3 == 1, e.points
        assert abs(y0 - (s.y + s.h)) <= EPS and s.x - EPS <= x0 <= s.x + s.w + EPS, (e.src, e.dst)
        assert abs(y1 - t.y) <= EPS and t.x - EPS <= x1 <= t.x + t.w + EPS, (e.src, e.dst)
        if e.back:  # only where the level has a cycle: a way back along the flow
            assert _reaches(forward, e.dst, e.src), (e.src, e.dst)
        else:
            assert t.y >= s.y + s.h - EPS, (e.src, e.dst)
    return len(pic.edges)


def _reaches(forward: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for nxt in forward[todo.pop()]:
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def test_every_level_of_the_toy_decoder_and_encoder() -> None:
    checked = levels = 0
    with open_archive(TOY) as ar:
        for name in ar.program_names:
            painter = GraphPicture(GraphModel(ar.program(name)))
            for scope in ["", *painter.model.modules]:
                checked += check_picture(painter.picture(scope))
                levels += 1
            # the whole tree open: frames in frames
            checked += check_picture(painter.picture("", painter.model.modules))
    assert levels > 50 and checked > 500


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_release_fixtures_open_to_every_depth(path: Path) -> None:
    with open_archive(path) as ar:
        program = ar.program(ar.program_names[0])
    for path in graph_paths(program):
        painter = GraphPicture(GraphModel(program, path))
        for depth in (1, 2, 8):
            check_picture(painter.picture("", painter.opened_to_depth("", depth)))


def test_opening_a_group_lays_out_it_and_the_levels_holding_it_only() -> None:
    with open_archive(TOY) as ar:
        painter = GraphPicture(GraphModel(ar.program("decoder")))
    opened = {"decoder", "decoder.transformer"}
    first = painter.picture("", opened)
    assert first.laid_out == 3
    assert painter.picture("", opened).laid_out == 0  # all from the cache
    # opening h.0: h.0's level, then transformer's and decoder's and the root's
    # (their sizes changed); h.1, the other levels: cached or closed
    again = painter.picture("", opened | {"decoder.transformer.h.0"})
    assert again.laid_out == 4
    block = again.box("m:decoder.transformer.h.0")
    assert block is not None and block.open
    inside = [b for b in again.boxes if b.parent == "m:decoder.transformer.h.0"]
    assert {"m:decoder.transformer.h.0.attn", "m:decoder.transformer.h.0.mlp"} <= {
        b.id for b in inside}
    # closing it again: every level from the cache
    assert painter.picture("", opened).laid_out == 0


def test_a_cycle_between_collapsed_groups_is_drawn_back_and_checked() -> None:
    """A program whose module is called twice around a root op: at the root the
    module's box feeds the op and the op feeds it back (a cycle only the collapse
    makes), so one edge runs against the flow; opened, the group is still one frame
    at the root (it holds both calls), so the edge back stays."""
    from inspector.core.program.parser import parse_program

    doc = _two_calls_program()
    program = parse_program(doc, "m")
    painter = GraphPicture(GraphModel(program))
    pic = painter.picture("")
    assert any(e.back for e in pic.edges)
    check_picture(pic)
    opened = painter.picture("", {"blk"})
    assert [(e.src, e.dst) for e in opened.edges if e.back] == [
        (e.src, e.dst) for e in pic.edges if e.back]
    check_picture(opened)


def _two_calls_program() -> dict:
    def tensor(name: str) -> dict:
        return {"as_tensor": {"name": name}}

    def node(name: str, target: str, args: list[str], stack: str | None) -> dict:
        meta = {"nn_module_stack": stack} if stack else {}
        return {"name": name, "target": target,
                "inputs": [{"name": f"a{i}", "arg": tensor(a), "kind": 1}
                           for i, a in enumerate(args)],
                "outputs": [tensor(name)], "metadata": meta}

    blk = "L__self___blk,blk,torch.nn.Module"
    meta = {"dtype": 7, "sizes": [{"as_int": 2}], "strides": [{"as_int": 1}],
            "device": {"type": "cpu"}, "requires_grad": False, "layout": 0,
            "storage_offset": {"as_int": 0}}
    nodes = [node("a", "torch.ops.aten.relu.default", ["x"], blk),
             node("b", "torch.ops.aten.neg.default", ["a"], None),
             node("c", "torch.ops.aten.relu.default", ["b"], blk)]
    return {"graph_module": {"graph": {
        "inputs": [tensor("x")], "outputs": [tensor("c")], "nodes": nodes,
        "tensor_values": {n: meta for n in ("x", "a", "b", "c")},
        "sym_int_values": {}, "sym_bool_values": {}, "sym_float_values": {},
        "custom_obj_values": {}, "is_single_tensor_return": True},
        "signature": {"input_specs": [{"user_input": {"arg": tensor("x")}}],
                      "output_specs": [{"user_output": {"arg": tensor("c")}}]},
        "module_call_graph": []},
        "opset_version": {"aten": 10}, "range_constraints": {}, "schema_version":
        {"major": 8, "minor": 20}, "verifiers": [], "torch_version": "2.13.0"}
