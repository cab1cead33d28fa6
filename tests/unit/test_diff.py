"""`diff` on real exports, checked against what torch says about the same files.

What users check first (issue 13): a retarget changes exactly the nodes whose
statement held the old device literal and no weight; a re-export of the toy
with other Dim ranges (same seed) changes the ranges and nothing else; an
archive against itself is the same; unrelated models diff without trouble;
one inserted node is one added node, however many later nodes FX renamed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory
from audit_models import toy_archive, torch_programs
from diff_models import (
    INSERTED_LINE,
    chain_archive,
    moved_source_archive,
    toy_ranges_archive,
    torch_device_literal_nodes,
    torch_node_count,
    torch_ranges,
)

from inspector.cli import main
from inspector.core import audit
from inspector.core.archive import open_archive
from inspector.core.diff import ArchiveDiff, diff_archives
from inspector.core.diff_align import unified_diff
from inspector.core.listing import STATEMENT
from inspector.core.node_match import ADDED, CHANGED, REMOVED, SAME
from inspector.core.retarget import retarget

PROGRAM_KEYS = {"name", "status", "nodes", "meta_changed", "signature", "ranges", "weights",
                "findings"}
# Small corpus cases with multi-output ops, nested torch.cond, loops, mutations,
# several programs in one archive, and archives without node names.
CORPUS = ["ops/multi_output", "cond/nested_cond", "ops/state_mutation_constants",
          "cond/while_loop_map", "multi/three_programs"]


@pytest.fixture(scope="session")
def root(archive_factory: ArchiveFactory) -> Path:
    return archive_factory.root


@pytest.fixture(scope="session")
def toy(root: Path) -> Path:
    return toy_archive(root)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    from fidelity_cases import session_corpus

    archives, _ = session_corpus(tmp_path_factory, CORPUS)
    assert len(archives) >= 8  # each case plus its variants (dynamic, decomposed, no names)
    return [a.path for a in archives]


def _diff(a: Path, b: Path, program: str | None = None) -> ArchiveDiff:
    with open_archive(a) as x, open_archive(b) as y:
        return diff_archives(x, y, program)


def _cli_json(capsys: pytest.CaptureFixture[str], a: Path, b: Path, *extra: str) -> tuple[int, dict]:
    code = main(["diff", str(a), str(b), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _check_alignment(diff: ArchiveDiff) -> None:
    """Rows cover every line of both listings once, in order, and the change
    stops (F7 / Shift+F7) visit every run of non-same rows."""
    for p in diff.programs:
        if p.listing_a is None or p.listing_b is None:
            continue
        al = p.alignment()
        a_lines = [x for x in al.a if x >= 0]
        b_lines = [x for x in al.b if x >= 0]
        assert a_lines == list(range(len(p.listing_a)))
        assert b_lines == list(range(len(p.listing_b)))
        for r, (a, b, s) in enumerate(zip(al.a, al.b, al.status)):
            assert (s == ADDED) == (a < 0) and (s == REMOVED) == (b < 0)
            assert al.row_of_a(a) == r if a >= 0 else True
        stops, row = [], -1
        while (row := al.next_change(row)) is not None:
            stops.append(row)
        assert stops == al.changes
        assert all(al.status[r] != SAME and (r == 0 or al.status[r - 1] == SAME) for r in stops)
        back, row = [], len(al)
        while (row := al.prev_change(row)) is not None:
            back.append(row)
        assert back == stops[::-1]
        runs = sum(1 for r in range(len(al)) if al.status[r] != SAME
                   and (r == 0 or al.status[r - 1] == SAME))
        assert runs == len(stops)


# --- an archive against itself ---------------------------------------------------------

def test_an_archive_against_itself_is_the_same(toy: Path, corpus: list[Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy.pt2"
    shutil.copy(toy, copy)
    for path, other in [(toy, copy), *((p, p) for p in corpus)]:
        theirs = torch_programs(path)
        diff = _diff(path, other)
        assert not diff.different, path.name
        assert [p.name for p in diff.programs] == sorted(theirs)
        for p in diff.programs:
            assert p.status == SAME
            assert p.nodes_same == p.a.node_count == torch_node_count(theirs[p.name]), path.name
            assert p.changed() == p.added() == p.removed() == [] and p.meta_changed == 0
            assert p.weights.same == len(theirs[p.name].state_dict) + len(theirs[p.name].constants)
            al = p.alignment()
            assert set(al.status) == {SAME} and al.changes == []
            assert al.a == al.b == list(range(len(p.listing_a)))
            assert list(unified_diff(al, p.listing_a, p.listing_b, "a", "b")) == []
        assert diff.records is not None and not diff.records.differs
    code, doc = _cli_json(capsys, toy, copy)
    assert code == 0
    assert [p["status"] for p in doc["programs"]] == ["same", "same"]
    assert main(["diff", str(toy), str(copy)]) == 0
    text = capsys.readouterr().out
    assert "---" not in text and "are the same" in text


# --- retarget ------------------------------------------------------------------------

def test_retarget_changes_exactly_the_device_literal_nodes_and_no_weight(
        toy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    moved = tmp_path / "toy-cuda.pt2"
    retarget(toy, moved, "cuda")
    theirs = torch_programs(toy)
    diff = _diff(toy, moved)
    assert diff.different
    assert diff.records is not None and not diff.records.differs
    for p in diff.programs:
        ep = theirs[p.name]
        literal_nodes = torch_device_literal_nodes(ep, "cpu")
        assert literal_nodes  # the toy's arange / to / _assert_tensor_metadata
        changed = p.changed()
        assert {a for a, _, _ in changed} == literal_nodes
        assert all(a == b and f[0] == "args" and "type" not in f for a, b, f in changed)
        assert p.added() == p.removed() == []
        assert p.nodes_same == torch_node_count(ep) - len(literal_nodes)
        # every other node and input is still recorded on cpu in A: metadata only
        assert p.meta_fields() == {"device": p.meta_changed} and p.meta_changed > p.nodes_same
        assert not p.weights.differs
        assert p.weights.same == len(ep.state_dict) + len(ep.constants)
        assert not p.ranges.differs and not p.signature_differs
        resolved = {f.node for f in p.findings.resolved if f.rule == audit.DEVICE_LITERAL}
        new = {f.node for f in p.findings.new if f.rule == audit.DEVICE_LITERAL}
        assert resolved == new == literal_nodes
        assert {f.group for f in p.findings.new if f.rule == audit.DEVICE_LITERAL} == {"cuda"}
        _check_alignment(diff)
        al = p.alignment()
        changed_rows = [r for r in range(len(al)) if al.status[r] != SAME]
        # one changed row per changed statement (each device literal node is one line)
        assert len(changed_rows) == len(literal_nodes)
        assert {al.status[r] for r in changed_rows} == {CHANGED}
        assert {p.listing_a.node_at(al.a[r]).name for r in changed_rows} == literal_nodes
    code, doc = _cli_json(capsys, toy, moved)
    assert code == 1
    for prog in doc["programs"]:
        assert set(prog) == PROGRAM_KEYS and prog["status"] == "changed"
        assert prog["weights"]["changed"] == [] and prog["nodes"]["added"] == []
    assert main(["diff", str(toy), str(moved)]) == 1
    text = capsys.readouterr().out
    minus = [ln for ln in text.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    total = sum(len(torch_device_literal_nodes(ep, "cpu")) for ep in theirs.values())
    assert len(minus) == len(plus) == total
    assert all("device(type='cpu')" in ln for ln in minus)
    assert all("device(type='cuda')" in ln for ln in plus)
    headers = [ln for ln in text.splitlines() if ln.startswith("@@")]
    assert headers and all(ln.split("@@")[2].strip().startswith(("decoder", "encoder", "<root"))
                           for ln in headers)


# --- a re-export with other ranges ----------------------------------------------------

def test_reexport_with_other_ranges_changes_the_ranges_and_nothing_else(
        toy: Path, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = toy_ranges_archive(root)
    ta, tb = torch_programs(toy), torch_programs(other)
    diff = _diff(toy, other)
    assert diff.different
    for p in diff.programs:
        ra, rb = torch_ranges(ta[p.name]), torch_ranges(tb[p.name])
        assert ra != rb
        changed = {s: ((x.min, x.max), (y.min, y.max)) for s, (x, y) in p.ranges.changed.items()}
        assert changed == {s: (ra[s], rb[s]) for s in ra if ra[s] != rb.get(s)}
        assert p.ranges.added == {} and p.ranges.removed == {}
        assert p.nodes_same == torch_node_count(ta[p.name]) == torch_node_count(tb[p.name])
        assert p.changed() == p.added() == p.removed() == [] and p.meta_changed == 0
        assert not p.weights.differs and not p.signature_differs
        assert p.findings.new == p.findings.resolved == []
        assert set(p.alignment().status) == {SAME}
    # The only other record that differs is the export's own note of its spec
    # (which holds the ranges); sample inputs (same seed) are the same bytes.
    assert diff.records is not None and diff.records.changed == ["extra/pt2_inspector.json"]
    assert diff.records.added == diff.records.removed == []
    code, doc = _cli_json(capsys, toy, other)
    assert code == 1
    for prog in doc["programs"]:
        for sym, change in prog["ranges"]["changed"].items():
            assert set(change) == {"a", "b"} and set(change["a"]) == {"min", "max"}
            assert (change["b"]["min"], change["b"]["max"]) == torch_ranges(tb[prog["name"]])[sym]
    assert main(["diff", str(toy), str(other)]) == 1
    text = capsys.readouterr().out
    assert "\n@@" not in text  # the listings are identical: no hunk
    assert "range s70: [2, 256] -> [4, 128]" in text


# --- one inserted node ----------------------------------------------------------------

def test_one_inserted_node_is_one_added_node_despite_renames(
        root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain, extra = chain_archive(root, extra=False), chain_archive(root, extra=True)
    ta, tb = torch_programs(plain)["model"], torch_programs(extra)["model"]
    (inserted,) = [n for n in tb.graph.nodes
                   if INSERTED_LINE.split("  #")[0] in (n.meta.get("stack_trace") or "")]
    users = {u.name for u in inserted.users}
    diff = _diff(plain, extra)
    (p,) = diff.programs
    assert p.added() == [inserted.name] and p.removed() == []
    # only the node that reads the inserted value now has another argument
    assert {b for _, b, _ in p.changed()} == users
    assert all(f == ("args",) for _, _, f in p.changed())
    assert p.meta_changed == 0 and not p.weights.differs
    assert p.nodes_same + len(p.changed()) == torch_node_count(ta)
    assert p.nodes_same + len(p.changed()) + 1 == torch_node_count(tb)
    # FX renamed the later adds; the match followed them
    renamed = {(x.a.name, x.b.name) for x in p.match.pairs() if x.a.name != x.b.name}
    assert ("add_3", "add_4") in renamed and len(renamed) >= 3
    names_b = {n.name for n in tb.graph.nodes}
    assert all(b in names_b for _, b in renamed)

    _check_alignment(diff)
    al = p.alignment()
    added_statements = [al.b[r] for r in range(len(al)) if al.status[r] == ADDED
                        and p.listing_b.kinds[al.b[r]] == STATEMENT]
    assert [p.listing_b.node_at(j).name for j in added_statements] == [inserted.name]
    assert REMOVED not in set(al.status) or all(
        p.listing_a.kinds[al.a[r]] != STATEMENT for r in range(len(al)) if al.status[r] == REMOVED)

    assert main(["diff", str(plain), str(extra)]) == 1
    text = capsys.readouterr().out.splitlines()
    plus = [ln for ln in text if ln.startswith("+") and not ln.startswith("+++")]
    minus = [ln for ln in text if ln.startswith("-") and not ln.startswith("---")]
    stmt_plus = [ln for ln in plus if " = " in ln and not ln.lstrip("+ ").startswith("#")]
    stmt_minus = [ln for ln in minus if " = " in ln and not ln.lstrip("- ").startswith("#")]
    assert len(stmt_plus) == 1 + len(users) and len(stmt_minus) == len(users)
    assert any(ln.lstrip("+ ").startswith(f"{inserted.name}:") for ln in stmt_plus)
    headers = [ln for ln in text if ln.startswith("@@")]
    assert headers and all(ln.endswith(" block") for ln in headers)
    code, doc = _cli_json(capsys, plain, extra)
    assert code == 1
    (prog,) = doc["programs"]
    assert prog["nodes"]["added"] == [inserted.name]
    assert prog["nodes"]["changed"] == [{"a": a, "b": b, "fields": ["args"]}
                                        for a, b, _ in p.changed()]


def test_other_weights_are_changed_bytes_and_nothing_else(root: Path) -> None:
    import torch

    a, b = chain_archive(root, extra=False, seed=0), chain_archive(root, extra=False, seed=1)
    sa, sb = torch_programs(a)["model"].state_dict, torch_programs(b)["model"].state_dict
    differ = {k for k in sa if not torch.equal(sa[k], sb[k])}
    assert differ
    (p,) = _diff(a, b).programs
    assert {w.name for w, _, _ in p.weights.changed} == differ
    assert all(f == ("bytes",) for _, _, f in p.weights.changed)
    assert p.weights.same == len(sa) - len(differ)
    assert p.changed() == p.added() == p.removed() == [] and p.meta_changed == 0


def test_moved_source_is_a_metadata_only_change(root: Path) -> None:
    a, b = moved_source_archive(root, 0), moved_source_archive(root, 1)
    ep = torch_programs(a)["model"]
    diff = _diff(a, b)
    (p,) = diff.programs
    assert p.status == CHANGED and diff.different
    assert p.changed() == p.added() == p.removed() == []
    assert p.nodes_same == p.meta_changed == torch_node_count(ep)
    assert p.meta_fields()["stack_trace"] == p.meta_changed
    _check_alignment(diff)


# --- unrelated models ------------------------------------------------------------------

def test_unrelated_models_diff_without_trouble(toy: Path, corpus: list[Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    paths = [toy, *corpus]
    counts = {path: {n: torch_node_count(ep) for n, ep in torch_programs(path).items()}
              for path in paths}
    pairs = list(combinations(paths, 2))
    for a, b in pairs:
        diff = _diff(a, b)
        _check_alignment(diff)
        for p in diff.programs:
            na = counts[a].get(p.name) if p.a is not None else 0
            nb = counts[b].get(p.name_b or p.name) if p.b is not None else 0
            if p.a is not None and len(counts[a]) == 1:
                na = next(iter(counts[a].values()))
            if p.b is not None and len(counts[b]) == 1:
                nb = next(iter(counts[b].values()))
            assert p.nodes_same + len(p.changed()) + len(p.removed()) == na, (a.name, b.name)
            assert p.nodes_same + len(p.changed()) + len(p.added()) == nb, (a.name, b.name)
    code, doc = _cli_json(capsys, toy, corpus[0])
    assert code == 1
    for prog in doc["programs"]:
        assert set(prog) - {"name_b"} == PROGRAM_KEYS
        assert set(prog["nodes"]) == {"same", "changed", "added", "removed"}
        assert set(prog["weights"]) == {"same", "changed", "added", "removed"}
        assert set(prog["findings"]) == {"new", "resolved"}
        assert set(prog["ranges"]) == {"changed", "added", "removed"}
    one = next(p for p in corpus if p.name == "ops__multi_output.pt2")
    other = next(p for p in corpus if p.name == "cond__nested_cond.pt2")
    assert main(["diff", str(one), str(other)]) == 1  # one program each: compared
    assert "\n@@ " in capsys.readouterr().out


def test_programs_only_on_one_side_and_program_option(corpus: list[Path],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    multi = next(p for p in corpus if "three_programs" in p.name)
    single = next(p for p in corpus if p.name == "ops__multi_output.pt2")
    diff = _diff(multi, single)
    statuses = {p.name: p.status for p in diff.programs}
    assert statuses == {"multi_output": REMOVED, "nested_cond": REMOVED, "state": REMOVED,
                        "model": ADDED}
    # --program: that program only; present on both sides here
    code, doc = _cli_json(capsys, multi, multi, "--program", "nested_cond")
    assert code == 0 and [p["name"] for p in doc["programs"]] == ["nested_cond"]
    assert "records" not in doc


# --- bad input ---------------------------------------------------------------------------

def test_bad_input_is_one_error_line(toy: Path, tmp_path: Path) -> None:
    not_zip = tmp_path / "bad.pt2"
    not_zip.write_bytes(b"hello")
    broken = tmp_path / "broken.pt2"
    with zipfile.ZipFile(toy) as src, zipfile.ZipFile(broken, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("models/decoder.json"):
                data = b'{"graph_module": 3}'
            dst.writestr(info, data)
    cases = [
        ([str(toy), str(tmp_path / "missing.pt2")], "does not exist"),
        ([str(not_zip), str(toy)], "not a zip file"),
        ([str(toy), str(toy), "--program", "nope"], "no program named 'nope'"),
        ([str(toy), str(broken)], "no graph_module.graph"),
        ([str(toy)], "the following arguments are required"),
    ]
    for args, why in cases:
        proc = subprocess.run([sys.executable, "-m", "inspector", "diff", *args],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
        assert why in proc.stderr and "Traceback" not in proc.stderr
        assert proc.stdout == ""


def test_rows_for_the_side_by_side_view(root: Path) -> None:
    plain, extra = chain_archive(root, extra=False), chain_archive(root, extra=True)
    (p,) = _diff(plain, extra).programs
    al = p.alignment()
    rows = [p.row(r) for r in range(len(al))]
    assert [r.text_a for r in rows if r.text_a is not None] == p.listing_a.lines
    assert [r.text_b for r in rows if r.text_b is not None] == p.listing_b.lines
    first = al.next_change(-1)
    assert first is not None
    change = rows[first:al.change_end(first)]
    # the first change is the inserted node: its comment, statement (and a blank
    # line), B side only
    assert {r.status for r in change} == {ADDED}
    assert {r.node_b for r in change if r.text_b.strip()} == {p.added()[0]}
    assert all(r.text_a is None and r.line_a == -1 for r in change)
    second = al.next_change(first)
    assert second is not None and al.prev_change(second) == first
    (consumer,) = rows[second:al.change_end(second)]
    (a, b, _), = p.changed()
    assert consumer.status == CHANGED and (consumer.node_a, consumer.node_b) == (a, b)
    # a renamed node that did not change is a same row, though its text differs
    renamed = [r for r in rows if r.status == SAME and r.node_a and r.node_a != r.node_b]
    assert renamed and all(r.text_a != r.text_b for r in renamed if r.text_a.strip().startswith(r.node_a))


# --- the signature ------------------------------------------------------------------------

def _torch_signature(path: Path) -> tuple[list[str], list[str]]:
    """(user input names, what each user output returns), as torch loads the file."""
    import torch

    sig = torch.export.load(str(path)).graph_signature
    return ([s.arg.name for s in sig.input_specs if s.kind.name == "USER_INPUT"],
            [s.arg.name for s in sig.output_specs if s.kind.name == "USER_OUTPUT"])


def test_a_changed_signature_is_a_change(archive_factory: ArchiveFactory,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Programs with the same nodes whose signatures differ in what they return (two
    outputs swapped: the `value` field), in how many outputs (one more), in a user
    input's name (the `name` field): each is a changed program and exit 1, and the
    signature lists what torch's own graph_signature says changed."""
    import torch

    class Base(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            return x.relu(), x.sin()

    class Swapped(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            return x.sin(), x.relu()

    class OneMore(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            r = x.relu()
            return r, x.sin(), r

    class Renamed(torch.nn.Module):
        def forward(self, y: torch.Tensor) -> Any:
            return y.relu(), y.sin()

    example = (torch.randn(3, 4),)
    base = archive_factory.export("diff-sig/base", Base(), example)
    cases = {name: archive_factory.export(f"diff-sig/{name}", model, example)
             for name, model in [("swapped", Swapped()), ("one_more", OneMore()),
                                 ("renamed", Renamed())]}
    ins_a, outs_a = _torch_signature(base)
    for name, other in cases.items():
        ins_b, outs_b = _torch_signature(other)
        diff = _diff(base, other)
        (p,) = diff.programs
        # the same nodes either side: only the signature can make this a change
        assert p.nodes_same == p.a.node_count == p.b.node_count, name
        assert p.signature_differs and p.status == CHANGED and diff.different, name
        sig = p.signature()
        # what torch says: outputs paired by position, inputs by position too
        value_changed = [a for a, b in zip(outs_a, outs_b) if a != b]
        assert [c["a"] for c in sig["outputs"]["changed"]] == value_changed, name
        assert all(c["fields"] == ["value"] for c in sig["outputs"]["changed"]), name
        assert len(sig["outputs"]["added"]) == max(len(outs_b) - len(outs_a), 0), name
        assert sig["outputs"]["removed"] == [], name
        renamed = [(a, b) for a, b in zip(ins_a, ins_b) if a != b]
        assert [(c["a"], c["b"]) for c in sig["inputs"]["changed"]] == renamed, name
        assert all("name" in c["fields"] for c in sig["inputs"]["changed"]), name
        assert sig["inputs"]["added"] == sig["inputs"]["removed"] == [], name
        code, doc = _cli_json(capsys, base, other)
        assert code == 1 and doc["programs"][0]["status"] == "changed", name
        assert doc["programs"][0]["signature"] == sig, name
    # each case changes the part it is named after
    assert _torch_signature(cases["swapped"])[1] != outs_a
    assert len(_torch_signature(cases["one_more"])[1]) == len(outs_a) + 1
    assert _torch_signature(cases["renamed"])[0] != ins_a
