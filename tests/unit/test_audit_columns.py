"""The audit's columns (core/audit.py: each graph's device arguments, literal
sizes and op namespaces, made once and kept with a lean program's nodes) give
the findings the node-by-node audit gave, on real archives.

Every program of the fidelity corpus (ExportDB examples, tiny HuggingFace
models, control flow, multi-program archives: fidelity_cases.py) and the toy
decoder is audited the lean way (nodes not made yet: the columns come from a
search of the nodes' texts; or made by the listing: from a walk of the nodes),
again for other targets and rules (the columns kept), and through the full parse
(plain lists: the columns made each time). All must agree finding by finding,
and the columns must hold what a walk of every node of the full model holds.
"""

from __future__ import annotations

import zipfile
from collections import Counter
from pathlib import Path

import orjson
import pytest
from audit_models import toy_archive

from fidelity_cases import session_corpus
from inspector.core import audit
from inspector.core.archive import open_archive
from inspector.core.audit import audit_archive, audit_program
from inspector.core.audit_load import audit_loadability
from inspector.core.device_names import parse_device
from inspector.core.findings import sort_findings
from inspector.core.listing import render_listing
from inspector.core.program import Program, parse_program
from inspector.core.program.lean import LazyNodes

TARGETS = (None, "cpu", "cuda:1", "meta")


@pytest.fixture(scope="session")
def archives(tmp_path_factory: pytest.TempPathFactory, archive_factory) -> list[Path]:
    import transformers  # noqa: F401  (pytree types of HF outputs, as the fidelity test)

    corpus, _ = session_corpus(tmp_path_factory)
    return [toy_archive(archive_factory.root)] + [a.path for a in corpus]


def _full_programs(path: Path) -> dict[str, Program]:
    """The archive's programs parsed the full way: nodes in plain lists."""
    with zipfile.ZipFile(path) as z:
        return {Path(n).stem: parse_program(orjson.loads(z.read(n)), Path(n).stem)
                for n in z.namelist() if "/models/" in n and n.endswith(".json")}


def _dicts(findings) -> list[dict]:
    return [f.as_dict() for f in findings]


def _device(target: str | None):
    return parse_device(target) if target else None


def test_lean_audit_equals_full_parse_audit_across_the_corpus(archives: list[Path]) -> None:
    programs = findings = 0
    for path in archives:
        full = _full_programs(path)
        for made_first in (False, True):  # columns from the texts, or from made nodes
            with open_archive(path) as archive:
                for name in archive.program_names:
                    program = archive.program(name)
                    assert isinstance(program.graph.nodes, LazyNodes), f"{path.name}/{name}"
                    if not made_first:
                        cold = audit_program(program)
                        assert _dicts(cold) == _dicts(audit_program(full[name])), name
                    listing = render_listing(program)
                    whole = render_listing(full[name])
                    for target in TARGETS + TARGETS[::-1]:  # again, the columns kept
                        got = audit_program(program, target=_device(target), listing=listing)
                        want = audit_program(full[name], target=_device(target), listing=whole)
                        assert _dicts(got) == _dicts(want), f"{path.name}/{name} {target}"
                        assert got == sort_findings(got), f"{path.name}/{name}"
                        findings += len(got)
                    for rule in audit.RULES[:5]:
                        got = audit_program(program, rules=[rule], listing=listing)
                        assert _dicts(got) == _dicts(
                            audit_program(full[name], rules=[rule], listing=whole))
                        assert {f.rule for f in got} <= {rule}
                    programs += 1
    assert programs >= 100 and findings >= 2_000  # the corpus is broad, and finds


def test_archive_audit_is_the_sorted_programs_audits(archives: list[Path]) -> None:
    """audit_archive merges the programs' sorted findings instead of sorting them
    all again: the same list as sorting everything, as it did."""
    checked = 0
    for path in archives:
        with open_archive(path) as archive:
            names = list(archive.program_names)
            listings = {n: render_listing(archive.program(n)) for n in names}
            for target in TARGETS:
                device = _device(target)
                found = []
                for n in names:
                    configs = {w: archive.payload_config(n, w) for w in ("weights", "constants")} \
                        if archive.layout == "pt2" else {}
                    found += audit_program(archive.program(n), target=device,
                                           listing=listings[n], payload_configs=configs)
                found += audit.audit_records(archive.records, set(names))
                found += audit_loadability(archive, device, [archive.program(n) for n in names])
                got = audit_archive(archive, target=device, listings=listings)
                assert _dicts(got) == _dicts(sort_findings(found)), f"{path.name} {target}"
                checked += len(got)
            # one program, a rule subset: what the CLI's --program and --rule ask
            got = audit_archive(archive, programs=names[-1:], listings=listings,
                                rules=[audit.PORTABILITY, audit.DEVICE_LITERAL])
            assert {f.rule for f in got} <= {audit.PORTABILITY, audit.DEVICE_LITERAL}
            assert got == sort_findings(got)
    assert checked >= 2_000


def test_columns_hold_what_every_node_holds(archives: list[Path]) -> None:
    """A walk of every node of the full model (no text search, no column) against
    the columns of the lean model and the findings made from them."""
    literals = sizes = 0
    for path in archives:
        full = _full_programs(path)
        with open_archive(path) as archive:
            for name in archive.program_names:
                lean = archive.program(name).graph.nodes
                nodes = full[name].graph.nodes
                column = audit._column(lean, "arguments", audit._Arguments)
                want = [(n.name, arg, device) for n in nodes
                        for arg, device in audit._device_args(n)]
                assert [(n, column.sites[s][1], column.sites[s][2])
                        for n, s in zip(column.names, column.site_of)] == want
                assert [n.index for n in column.nodes] == [
                    n.index for n in nodes for _ in audit._device_args(n)]
                found = [f for f in audit_program(archive.program(name))
                         if f.rule == audit.DEVICE_LITERAL]
                assert Counter((f.node, f.group) for f in found) == Counter(
                    (n, str(d)) for n, _, d in want)
                by_size: dict[int, list[int]] = {}
                for n in nodes:
                    for value in sorted(audit._size_literals(n)):
                        by_size.setdefault(value, []).append(n.index)
                assert {v: list(at) for v, at in column.sizes.items()} == by_size
                assert audit._column(lean, "namespaces", audit._namespace_column) == \
                    audit._namespace_column(nodes)
                literals += len(want)
                sizes += len(by_size)
    assert literals >= 100 and sizes >= 100


def test_columns_are_kept_per_node_sequence(archives: list[Path]) -> None:
    """Made once per graph's nodes and asked again; another archive's program
    (even of the same file) gets its own. Before any view made the nodes, only
    those whose text may hold a device or a size argument are made."""
    toy = archives[0]
    with open_archive(toy) as a, open_archive(toy) as b:
        pa, pb = a.program("decoder"), b.program("decoder")
        audit_program(pa)
        assert 0 < pa.graph.nodes.made_count() < len(pa.graph.nodes) / 2
        render_listing(pb)  # made by the listing: the columns walk them
        first = audit._column(pa.graph.nodes, "arguments", audit._Arguments)
        assert audit._column(pa.graph.nodes, "arguments", audit._Arguments) is first
        other = audit._column(pb.graph.nodes, "arguments", audit._Arguments)
        assert other is not first and other.names == first.names
        assert all(x is not y for x, y in zip(first.nodes, other.nodes))
        assert first.names, "the toy decoder has device literals"


def test_findings_out_of_line_order_are_sorted_as_sort_findings_sorts(archives: list[Path]) -> None:
    """Device literals are made in node order, usually the listing's; where they
    are not (lines of subgraphs, nodes the listing does not show), they are
    sorted by line, ties in the order they were made, as sort_findings does."""
    with open_archive(archives[0]) as archive:
        program = archive.program("decoder")
        made = audit_program(program, rules=[audit.DEVICE_LITERAL])
    assert len(made) >= 4
    lines = [7, None, 3, 3] + [None] * (len(made) - 4)
    lines[-1] = 1
    shuffled = [audit.Finding(f.rule, f.severity, f.program, f.node, line, f.message,
                              f.source, f.fix, f.group) for f, line in zip(made, lines)]
    got = audit._by_line(shuffled, lines)
    assert got == sort_findings(shuffled) and got != shuffled
    in_order = sort_findings(shuffled)
    assert audit._by_line(in_order, [f.line for f in in_order]) is in_order
