"""core/weight_table.py: the Weights panel's rows without Qt. Each weight's placeholder
and users are torch's own (the loaded ExportedProgram's graph), the statistics pass
gives `program_weights`'s rows (those of `weights --json`), and cancelling keeps the
rows done so far and marks the rest."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

from inspector.core.archive import open_archive
from inspector.core.weight_stats import program_weights
from inspector.core.weight_table import CANCELLED_NOTE, table_stats, weight_entries


@pytest.fixture(scope="module")
def exported(archive_factory: ArchiveFactory) -> tuple[Path, Any]:
    import torch
    from torch import nn

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(8, 8)
            self.b = nn.Linear(8, 8)
            self.b.weight = self.a.weight  # tied: one record, two names
            self.register_buffer("scale", torch.full((8,), 2.0))
            self.register_buffer("unused", torch.zeros(3))
            self.big = nn.Parameter(torch.randn(300_000))
            self.c = torch.randn(8)

        def forward(self, x: Any) -> Any:
            y = self.b(self.a(x)) * self.scale + self.c
            return y + self.big[:8] + self.big[8:16]

    path = archive_factory.export("weight_table/m", M(), (torch.randn(2, 8),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = torch.export.load(str(path))
    return path, loaded


def test_placeholders_and_users_are_torchs(exported: tuple[Path, Any]) -> None:
    path, ep = exported
    torch_ph = {s.target: s.arg.name for s in ep.graph_signature.input_specs if s.target}
    nodes = {n.name: n for n in ep.graph.nodes}
    with open_archive(path) as a:
        entries = weight_entries(a, "model", a.program("model"))
    assert {e.info.name for e in entries} == set(ep.state_dict) | set(ep.constants)
    for e in entries:
        assert e.placeholder == torch_ph.get(e.info.name), e.info.name
        if e.placeholder is None:
            assert e.users == []
            continue
        users = [u.name for u in nodes[e.placeholder].users if u.op != "output"]
        assert sorted(e.users) == sorted(users), e.info.name
    big = next(e for e in entries if e.info.name == "big")
    assert len(big.users) == 2  # two slices read it


def test_the_rows_make_no_node_until_users_are_asked(exported: tuple[Path, Any]) -> None:
    """The window lists the weights before the listing paints: the readers of each
    placeholder are found on the first ask only, and then only the nodes whose
    argument text names a placeholder are made (add_1, add_2 read none)."""
    path, ep = exported
    with open_archive(path) as a:
        program = a.program("model")
        nodes = program.graph.nodes
        entries = weight_entries(a, "model", program)
        assert nodes.made_count() == 0
        scale = next(e for e in entries if e.info.name == "scale")
        torch_users = [u.name for u in next(n for n in ep.graph.nodes
                                            if n.name == scale.placeholder).users]
        assert scale.users == torch_users
        assert 0 < nodes.made_count() < len(nodes)


def test_users_are_torchs_across_the_corpus(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every weight's readers, on every program of the fidelity corpus, against the
    users torch's loaded graph gives its placeholder."""
    from fidelity_cases import session_corpus, torch_programs

    archives, _ = session_corpus(tmp_path_factory)
    # nameless nodes (an old torch's file) carry no name of their own to compare
    archives = [a for a in archives if "#noname" not in a.name]
    checked = 0
    for archive in archives:
        with open_archive(archive.path) as a:
            for name, ep in torch_programs(archive).items():
                nodes = {n.name: n for n in ep.graph.nodes}
                for e in weight_entries(a, name, a.program(name)):
                    if e.placeholder is None:
                        continue
                    want = [u.name for u in nodes[e.placeholder].users if u.op != "output"]
                    assert sorted(e.users) == sorted(want), (archive.name, e.info.name)
                    checked += 1
    assert checked > 200


def test_rows_are_the_commands(exported: tuple[Path, Any]) -> None:
    path, _ = exported
    with open_archive(path) as a:
        entries = weight_entries(a, "model", a.program("model"))
        seen: list[float] = []
        result = table_stats(a, [e.info for e in entries], progress=seen.append)
        assert not result.cancelled
        assert result.rows == program_weights(a, "model")
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0)


@pytest.mark.parametrize("reports", [3, 8])  # inside `big` (5 blocks, first), and past it
def test_cancel_keeps_what_was_done(exported: tuple[Path, Any], reports: int) -> None:
    path, _ = exported
    with open_archive(path) as a:
        infos = [e.info for e in weight_entries(a, "model", a.program("model"))]
        full = program_weights(a, "model")
        calls = [0]

        def count(fraction: float) -> None:
            calls[0] += 1

        # asked between blocks and between weights: stop after that many reports
        result = table_stats(a, infos, progress=count, should_cancel=lambda: calls[0] >= reports)
    assert result.cancelled
    done = [r for r in result.rows if r["stats"] is not None]
    assert len(done) < len(infos)
    big = next(r for r in result.rows if r["name"] == "big")
    if reports == 3:  # stopped within a weight: that weight is not half-counted
        assert big["stats"] is None and big["note"] == CANCELLED_NOTE and not done
    else:
        assert big["stats"] is not None and done
    for row, ref in zip(result.rows, full):
        if row["stats"] is not None:
            assert row == ref
        else:
            assert row["note"] == (ref["note"] or CANCELLED_NOTE)
    assert len(result.rows) == len(infos)
