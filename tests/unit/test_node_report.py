"""node_index (names -> listing lines, modules, frames), the profile report's rollups,
the window's node marks, and the node timers' bookkeeping.

Names are judged by torch: the index of a saved archive must hold exactly the FX
node names torch's loader gives the graph (multi-output getitems, control-flow
get_attrs and all), each at the listing line that defines it."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
from inspector.core.node_index import GET_ATTR, GETITEM, node_index
from inspector.core.node_marks import program_marks
from inspector.core.profile_report import (
    failure_record,
    module_rollup,
    node_records,
    op_rollup,
    source_rollup,
)
from inspector.jobs.node_timers import CudaEventTimer, PerfCounterTimer


@pytest.fixture(scope="module")
def archives(archive_factory: ArchiveFactory) -> dict[str, Path]:
    import torch
    from torch.export import Dim

    nn = torch.nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(6, 6)
            self.norm = nn.LayerNorm(6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.norm(torch.relu(self.lin(x)))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.Sequential(Block(), Block())
            self.head = nn.Linear(6, 2)

        def forward(self, x: torch.Tensor) -> Any:
            h = self.blocks(x)
            values, idx = h.max(dim=1)
            a, b = torch.split(h, [3, 3], dim=1)
            return self.head(h), values, idx, a * b

    class Branchy(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))

    return {
        "net": archive_factory.export("node_report/net", Net().eval(), (torch.randn(4, 6),),
                                      dynamic_shapes=({0: Dim("b", min=2, max=32)},)),
        "branchy": archive_factory.export("node_report/branchy", Branchy(), (torch.randn(3),)),
    }


def _torch_nodes(path: Path) -> list[Any]:
    import torch

    ep = torch.export.load(str(path))
    return [n for n in ep.graph_module.graph.nodes if n.op not in ("placeholder", "output")]


@pytest.mark.parametrize("case", ["net", "branchy"])
def test_index_holds_torch_s_node_names_at_their_lines(archives, case):
    path = archives[case]
    with open_archive(path) as ar:
        program = ar.program("model")
        listing = render_listing(program)
        index = node_index(program, listing)
    nodes = _torch_nodes(path)
    assert sorted(index) == sorted(n.name for n in nodes)
    for n in nodes:
        info = index[n.name]
        text = listing.lines[info.line - 1].lstrip()
        assert text.startswith((f"{n.name}: ", f"{n.name} = "))
        if n.op == "get_attr":
            assert info.target == GET_ATTR
        elif n.target.__name__ == "getitem":
            assert info.target == GETITEM
        else:
            from torch.fx.node import _get_qualified_name

            assert info.target == _get_qualified_name(n.target)  # torch.ops.aten.mm.default


def test_index_carries_module_paths_and_frames(archives):
    with open_archive(archives["net"]) as ar:
        index = node_index(ar.program("model"))
    linear = [i for i in index.values() if i.target == "torch.ops.aten.linear.default"]
    assert {i.module for i in linear} == {"blocks.0.lin", "blocks.1.lin", "head"}
    deep = next(i for i in linear if i.module == "blocks.1.lin")
    assert [m.path for m in deep.modules] == ["", "blocks", "blocks.1", "blocks.1.lin"]
    assert deep.frames and deep.frames[-1].file.endswith("linear.py")
    assert any(f.is_user and f.file.endswith("test_node_report.py") for f in deep.frames)
    record = failure_record(deep.name, index, "boom")
    assert record["line"] == deep.line and record["message"] == "boom"
    assert {"file", "line", "function", "code", "user"} == set(record["frames"][0])
    assert failure_record("ghost", index, "x", "t") == {
        "node": "ghost", "target": "t", "line": None, "message": "x", "frames": []}


def test_rollups_are_inclusive_and_add_up(archives):
    with open_archive(archives["net"]) as ar:
        index = node_index(ar.program("model"))
    names = list(index)
    timed = [(n, float(i + 1)) for i, n in enumerate(names)]  # distinct, known times
    nodes = node_records(timed, index)
    total = sum(ms for _, ms in timed)
    assert [n["name"] for n in nodes] == names
    assert math.isclose(sum(n["share"] for n in nodes), 1.0, abs_tol=1e-5)
    modules = {m["path"]: m for m in module_rollup(nodes, index)}
    in_block0 = [ms for n, ms in timed if index[n].module.startswith("blocks.0")]
    assert modules["blocks.0"]["ms"] == pytest.approx(sum(in_block0))
    assert modules["blocks.0"]["nodes"] == len(in_block0)
    assert modules["blocks.0"]["parent"] == "blocks" and modules["blocks"]["parent"] == ""
    assert modules["blocks.0"]["class"].endswith("Block")
    assert modules["blocks"]["ms"] == pytest.approx(modules["blocks.0"]["ms"]
                                                    + modules["blocks.1"]["ms"])
    ops = op_rollup(nodes)
    assert sum(o["ms"] for o in ops) == pytest.approx(total)
    assert ops == sorted(ops, key=lambda o: -o["ms"])
    sources = source_rollup(nodes, index)
    assert any(s["file"].endswith("linear.py") and s["nodes"] == 3 for s in sources)


def test_marks_join_a_result_to_the_listing(archives):
    with open_archive(archives["net"]) as ar:
        program = ar.program("model")
        listing = render_listing(program)
        index = node_index(program, listing)
    names = list(index)
    nodes = node_records([(n, 2.0 if i == 0 else 1.0) for i, n in enumerate(names)], index)
    nodes.append({"name": "stale_node", "ms": 1.0, "share": 0.0})
    result = {"device": "cpu", "programs": [{
        "name": "model", "ok": False, "nodes": nodes,
        "failures": [failure_record(names[1], index, "Expected all tensors ...")]}]}
    marks = program_marks(result, "model", listing)
    assert marks.missing == ["stale_node"]
    first = marks.marks[names[0]]
    assert first.heat == 1.0 and first.ms == 2.0
    assert listing.lines[first.line].lstrip().startswith(names[0])  # 0-based, as the view
    failed = marks.marks[names[1]]
    assert failed.failure == "Expected all tensors ..." and failed.ms == 1.0
    assert marks.by_line()[failed.line] is failed
    assert marks.slowest(1) == [first]
    assert program_marks(result, "other", listing).marks == {}


def test_perf_counter_timer_measures_the_span():
    # no limit on how long anything takes: the span lies between the sleep inside it
    # (a sleep never returns early) and the span the test measured around it
    timer = PerfCounterTimer(3)
    outer = time.perf_counter()
    timer.start(1)
    time.sleep(0.02)
    timer.stop(1)
    outer_ms = (time.perf_counter() - outer) * 1000.0
    ms = timer.read()
    assert ms[0] is None and ms[2] is None and 19.9 <= ms[1] <= outer_ms
    assert timer.read() == [None, None, None]  # read resets


class _HostEvent:
    """Stand-in for torch.cuda.Event on a machine without CUDA: the same record /
    elapsed_time calls, on the host clock. Exercises CudaEventTimer's bookkeeping
    (pairing, one synchronize per read, nodes that did not run); not CUDA itself."""

    def __init__(self) -> None:
        self.t: float | None = None

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: _HostEvent) -> float:
        assert self.t is not None and end.t is not None
        return (end.t - self.t) * 1000.0


def test_cuda_event_timer_pairs_events_per_node():
    syncs: list[int] = []
    timer = CudaEventTimer(3, _HostEvent, lambda: syncs.append(1))
    outer: dict[int, float] = {}
    for i, pause in ((0, 0.001), (2, 0.03)):
        t0 = time.perf_counter()
        timer.start(i)
        time.sleep(pause)
        timer.stop(i)
        outer[i] = (time.perf_counter() - t0) * 1000.0
    ms = timer.read()
    assert syncs == [1]
    # each node's own span: at least its sleep, at most what the test saw around it
    assert ms[1] is None and 0.99 <= ms[0] <= outer[0] and 29.9 <= ms[2] <= outer[2]
    assert timer.read() == [None, None, None]
