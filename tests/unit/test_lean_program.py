"""The lean parse (core/program/lean.py) against the full one, on real archives.

Every program of the fidelity corpus (ExportDB examples, tiny HuggingFace
models, nested control flow, multi-program archives, legacy files without node
names: fidelity_cases.py) is parsed both ways; the two models must agree field
by field, and their listings line by line. The listing of the lean model is what
test_listing_fidelity.py compares with torch's own print_readable (the archive
reads programs the lean way: checked here), so torch's view is the reference of
both. Also: nodes are made on first access only, malformed text is judged by the
full parse with its messages, and the lean limits refuse what they promise to.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from typing import Any

import orjson
import pytest

from fidelity_cases import program_texts, session_corpus
from inspector.core import archive as archive_mod
from inspector.core.archive import open_archive
from inspector.core.errors import ArchiveError
from inspector.core.listing import render_listing
from inspector.core.program import Graph, Program, parse_program
from inspector.core.program import lean as lean_mod
from inspector.core.program.lean import LazyNodes, LeanUnsupported, parse_program_lean


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    import transformers  # noqa: F401  (pytree types of HF outputs, as the fidelity test)

    archives, _ = session_corpus(tmp_path_factory)
    return archives


def _graph_dump(g: Graph) -> dict[str, Any]:
    return {
        "name": g.name, "depth": g.depth, "single": g.is_single_tensor_return,
        "inputs": g.inputs, "outputs": g.outputs,
        "nodes": [(n.index, n.name, n.target, n.inputs, n.outputs, dict(n.metadata),
                   n.is_hop_single_tensor_return, n.name_in_file, n.graph is g) for n in g.nodes],
        "tensor_values": dict(g.tensor_values.items()),
        "sym": (g.sym_int_values, g.sym_bool_values, g.sym_float_values, g.custom_obj_values),
        "size_hints": g.size_hints,
        "subgraphs": [_graph_dump(s) for s in g.subgraphs],
    }


def _dump(p: Program) -> dict[str, Any]:
    return {
        "name": p.name, "schema": p.schema_version, "torch": p.torch_version,
        "opset": p.opset_version, "verifiers": p.verifiers, "guards": p.guards_code,
        "inputs": p.input_specs, "outputs": p.output_specs, "ranges": p.range_constraints,
        "calls": p.module_call_graph, "metadata": p.metadata, "unknown": p.unknown_fields,
        "graph": _graph_dump(p.graph), "nodes": p.node_count,
    }


def test_lean_model_equals_full_model_across_the_corpus(corpus) -> None:
    programs = 0
    subgraphs = 0
    for archive in corpus:
        for name, text in program_texts(archive.path).items():
            lean, _ = parse_program_lean(text, name)
            whole = parse_program(orjson.loads(text), name, consume=True)  # as the archive did
            assert _dump(lean) == _dump(whole), f"{archive.name}/{name}"
            assert render_listing(lean).lines == render_listing(whole).lines, f"{archive.name}/{name}"
            programs += 1
            subgraphs += sum(1 for _ in lean.graphs()) - 1
    assert programs >= 50 and subgraphs >= 5  # the corpus is broad (control flow included)


def test_the_archive_reads_programs_the_lean_way(corpus) -> None:
    # so test_listing_fidelity.py compares the lean model's listing with torch's
    for archive in corpus:
        with open_archive(archive.path) as ar:
            for name in ar.program_names:
                assert isinstance(ar.program(name).graph.nodes, LazyNodes), archive.name


def test_nodes_are_made_on_first_access_and_kept(small_archive: Path) -> None:
    text = next(iter(program_texts(small_archive).values()))
    program, values = parse_program_lean(text, "model")
    nodes = program.graph.nodes
    assert isinstance(nodes, LazyNodes) and len(nodes) >= 3 and values > 0
    assert nodes.made_count() == 0  # parsed, nothing made yet
    third = nodes[2]
    assert nodes.made_count() == 1 and nodes[2] is third and nodes[-len(nodes) + 2] is third
    assert [n.index for n in nodes] == list(range(len(nodes)))
    assert nodes.made_count() == len(nodes) and nodes[2] is third
    assert nodes[1:3] == [nodes[1], third]


def test_made_nodes_share_one_argument_per_tensor_value(corpus) -> None:
    # each node's text decodes to its own copies: the producer's output and every
    # use of a tensor value are one Argument once made (a third of a made node's
    # bytes were these copies), the node's name one string with that output's
    uses = 0
    for archive in corpus:
        for name, text in program_texts(archive.path).items():
            nodes = parse_program_lean(text, name)[0].graph.nodes
            produced = {}
            for node in nodes:
                for out in node.outputs:
                    if out.kind == "as_tensor" and out.name():
                        produced[out.name()] = out
                        if node.name == out.name():
                            assert node.name is out.value["name"], f"{archive.name}/{node.name}"
            for node in nodes:
                for inp in node.inputs:
                    if inp.arg.kind == "as_tensor" and inp.arg.name() in produced:
                        assert inp.arg is produced[inp.arg.name()], f"{archive.name}/{node.name}"
                        uses += 1
    assert uses >= 1000  # the corpus's graphs use their values


def _with_first_node(text: bytes, node: Any) -> bytes:
    doc = orjson.loads(text)
    doc["graph_module"]["graph"]["nodes"][0] = node
    return orjson.dumps(doc)


@pytest.mark.parametrize("node, message", [
    ([1, 2], "is not an object"),
    ({"target": 7, "inputs": []}, "target is not a string"),
])
def test_text_the_lean_parse_does_not_expect_is_judged_by_the_full_one(
        small_archive: Path, tmp_path: Path, node: Any, message: str) -> None:
    text = _with_first_node(next(iter(program_texts(small_archive).values())), node)
    with pytest.raises(LeanUnsupported):
        parse_program_lean(text, "model")
    with pytest.raises(ArchiveError, match=message):
        parse_program(orjson.loads(text), "model")
    bad = _rewrite(small_archive, tmp_path / "bad.pt2", text)
    with open_archive(bad) as ar, pytest.raises(ArchiveError, match=message):
        ar.program(ar.program_names[0])


def _rewrite(src: Path, dst: Path, program: bytes) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = program if "/models/" in info.filename and info.filename.endswith(".json") \
                else zin.read(info)
            zout.writestr(info, data)
    return dst


def test_a_node_argument_nested_too_deep_is_refused_when_the_program_opens(
        small_archive: Path) -> None:
    # as the full parse refuses it: not later, in whichever view first makes the node
    deep: Any = 1
    for _ in range(40):
        deep = [deep]
    text = _with_first_node(next(iter(program_texts(small_archive).values())), {
        "target": "torch.ops.aten.relu.default",
        "inputs": [{"name": "self", "arg": {"as_ints": deep}, "kind": 1}], "outputs": []})
    with pytest.raises(ArchiveError, match="nests deeper"):
        parse_program_lean(text, "model")
    with pytest.raises(ArchiveError, match="nests deeper"):
        parse_program(orjson.loads(text), "model")


def test_escaped_keys_hide_no_subgraph_or_symbolic_size(corpus) -> None:
    # JSON may spell any key character as \\uXXXX: the lean parse must not miss a
    # control-flow subgraph or a symbolic size written so.
    archive = next(a for a in corpus if a.name == "cond/nested_cond")
    name, text = next(iter(program_texts(archive.path).items()))
    assert b'"as_graph"' in text and b'"as_expr"' in text
    escaped = text.replace(b'"as_graph"', b'"as_gr\\u0061ph"').replace(b'"as_expr"',
                                                                        b'"as_e\\u0078pr"')
    lean, _ = parse_program_lean(escaped, name)
    whole = parse_program(orjson.loads(escaped), name, consume=True)
    plain = parse_program(orjson.loads(text), name, consume=True)
    assert _dump(lean) == _dump(whole) == _dump(plain)
    assert lean.graph.subgraphs and lean.graph.size_hints


def _escaped_json(value: Any) -> bytes:
    """JSON text of `value` with the first character of every string, keys and values
    alike, written as a `\\uXXXX` escape: what any JSON writer may emit."""
    def string(x: str) -> str:
        if not x or ord(x[0]) > 0xFFFF:
            return orjson.dumps(x).decode()
        return '"' + f"\\u{ord(x[0]):04x}" + orjson.dumps(x[1:]).decode()[1:-1] + '"'

    def enc(v: Any) -> str:
        if isinstance(v, dict):
            return "{" + ",".join(f"{string(k)}:{enc(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ",".join(enc(x) for x in v) + "]"
        if isinstance(v, str):
            return string(v)
        return orjson.dumps(v).decode()
    return enc(value).encode()


def _audit_words() -> list[str]:
    """The words the audit asks `mentioning` for: argument kinds, size-argument names,
    `as_scalar_type` (core/audit.py)."""
    from inspector.core import audit

    return sorted({*audit._DEVICE_KINDS, *audit._SIZE_ARG_WORDS, '"as_scalar_type"'})


def test_mentioning_misses_no_escaped_key_or_value_across_the_corpus(corpus) -> None:
    """Every program of the corpus, its keys and values all spelled with `\\u` escapes:
    for each word the audit looks for (and each argument name and string value a
    node holds), `mentioning` finds every node whose inputs, as the full parse reads
    them, hold the word (it may find more: a superset)."""
    checked = escaped_hits = 0
    for archive in corpus:
        for name, text in program_texts(archive.path).items():
            doc = orjson.loads(text)
            escaped = _escaped_json(doc)
            assert orjson.loads(escaped) == doc
            raw = [orjson.dumps(n.get("inputs")) for n in doc["graph_module"]["graph"]["nodes"]]
            values = {f'"{v}"' for n in doc["graph_module"]["graph"]["nodes"]
                      for a in n.get("inputs", []) for v in (a.get("name"), a.get("arg", {}).get("as_string"))
                      if isinstance(v, str)}
            for spelled in (text, escaped):
                lean, _ = parse_program_lean(spelled, name)
                for word in [*_audit_words(), *sorted(values)[:20]]:
                    want = {i for i, r in enumerate(raw) if word.encode() in r}
                    hits = {n.index for n in lean.graph.nodes.mentioning([word])}
                    assert want <= hits, f"{archive.name}/{name}: {word} missed at {sorted(want - hits)[:5]}"
                    checked += 1
                    escaped_hits += len(want) if spelled is escaped else 0
    assert checked > 1000 and escaped_hits > 100


def test_the_audit_of_an_escaped_archive_is_the_audit_of_the_plain_one(tmp_path: Path) -> None:
    """The demo toy with every key and value `\\u`-escaped: the same findings, every
    device literal among them (the lean parse finds them through `mentioning`)."""
    from inspector.core.audit import audit_archive
    from inspector.resources import demo_archive

    plain = demo_archive()
    escaped = tmp_path / "escaped.pt2"
    with zipfile.ZipFile(plain) as zin, zipfile.ZipFile(escaped, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if "/models/" in info.filename and info.filename.endswith(".json"):
                data = _escaped_json(orjson.loads(data))
            zout.writestr(info, data)

    def findings(path: Path) -> list[dict[str, Any]]:
        with open_archive(path) as ar:
            return [f.as_dict() for f in audit_archive(ar)]

    theirs, ours = findings(plain), findings(escaped)
    literals = [f for f in theirs if f["rule"] == "device-literal"]
    assert len(literals) >= 10
    assert ours == theirs


def test_the_value_budget_counts_what_the_model_makes(small_archive: Path, monkeypatch) -> None:
    text = next(iter(program_texts(small_archive).values()))
    _, values = parse_program_lean(text, "model")
    # fewer than the whole text counts: repeated metadata and records count once
    assert values < archive_mod.json_value_count(text)
    monkeypatch.setattr(lean_mod, "MAX_MODEL_VALUES", values - 1)
    with pytest.raises(ArchiveError, match="over the limit"):
        parse_program_lean(text, "model")
    monkeypatch.setattr(lean_mod, "MAX_MODEL_VALUES", values)
    parse_program_lean(text, "model")
    with pytest.raises(ArchiveError, match="plus 1 in programs already open"):
        parse_program_lean(text, "model", held=1)


def test_the_scan_budget_bounds_text_and_copies(small_archive: Path, monkeypatch) -> None:
    text = next(iter(program_texts(small_archive).values()))
    monkeypatch.setattr(lean_mod, "MAX_SCAN_BYTES", len(text) + 100)
    with pytest.raises(ArchiveError, match="limit of"):
        parse_program_lean(text, "model")


def test_threads_making_nodes_at_once_get_the_same_objects(small_archive: Path) -> None:
    import threading

    text = next(iter(program_texts(small_archive).values()))
    for _ in range(5):
        program, _ = parse_program_lean(text, "model")
        start = threading.Barrier(6)
        seen: list[list[int]] = []

        def read() -> None:
            start.wait()
            seen.append([id(n) for n in program.graph.nodes])

        threads = [threading.Thread(target=read) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(seen) == 6 and all(s == seen[0] for s in seen)


def test_tensor_records_past_the_limit_are_refused(small_archive: Path, monkeypatch) -> None:
    text = next(iter(program_texts(small_archive).values()))
    records = len(orjson.loads(text)["graph_module"]["graph"]["tensor_values"])
    monkeypatch.setattr(lean_mod, "MAX_TENSOR_RECORDS", records - 1)
    with pytest.raises(ArchiveError, match="tensor records, over the limit"):
        parse_program_lean(text, "model")
    monkeypatch.setattr(lean_mod, "MAX_TENSOR_RECORDS", records)
    parse_program_lean(text, "model")


def test_a_streamed_listing_is_the_whole_listing_at_every_step(corpus) -> None:
    """render_listing_chunks (the window's big programs): each step is a consistent
    prefix of the whole listing (its parallel lists agree, every node line maps back),
    and the last step is render_listing's listing, maps included."""
    from inspector.core.listing import render_listing_chunks

    streamed = 0
    for archive in corpus:
        with open_archive(archive.path) as ar:
            for name in ar.program_names:
                program = ar.program(name)
                whole = render_listing(program)
                steps = 0
                for listing in render_listing_chunks(program, chunk_lines=5, first_lines=3):
                    n = len(listing.lines)
                    assert len(listing.kinds) == len(listing.line_nodes) == n
                    assert listing.lines == whole.lines[:n], f"{archive.name}/{name}"
                    assert listing.kinds == whole.kinds[:n]
                    for node in listing.line_nodes:
                        if node is not None:
                            assert listing.line_of(node) == whole.line_of(node) < n
                    steps += 1
                assert steps > 1 or len(whole) < 8
                for attr in ("lines", "kinds", "definitions", "printed", "file_names",
                             "aliases", "_node_line"):
                    assert getattr(listing, attr) == getattr(whole, attr), f"{archive.name}/{name}: {attr}"
                assert [id(n) for n in listing.line_nodes] == [id(n) for n in whole.line_nodes]
                streamed += steps > 1
    assert streamed >= 40


def test_the_printed_name_check_reads_the_text_without_making_nodes(small_archive: Path) -> None:
    """_PrintedNames.for_graph (run before the first line): on lean nodes it asks
    the text, and a name FX may not print (a builtin, in a node or an output)
    still selects the renaming namespace."""
    from inspector.core.listing import _ILLEGAL_NAMES, _PrintedNames

    text = next(iter(program_texts(small_archive).values()))
    program, _ = parse_program_lean(text, "model")
    nodes = program.graph.nodes
    assert _PrintedNames.for_graph(program.graph).ns is None and nodes.made_count() == 0
    assert not nodes.may_name(_ILLEGAL_NAMES)
    out = next(n.outputs[0].value["name"] for n in program.graph.nodes
               if n.outputs and n.outputs[0].kind == "as_tensor")
    assert nodes.may_name({out}) and nodes.may_name({nodes[0].name})
    renamed, _ = parse_program_lean(text.replace(f'"{out}"'.encode(), b'"sum"'), "model")
    assert renamed.graph.nodes.may_name(_ILLEGAL_NAMES)
    assert _PrintedNames.for_graph(renamed.graph).ns is not None


def test_a_top_level_key_torch_does_not_write_is_kept_by_the_second_scan(
        small_archive: Path, monkeypatch) -> None:
    # one scan (lean._RawTop) reads torch's keys; any other sends the text to the
    # dict scan, so unknown_fields keeps it as the full parse does
    text = next(iter(program_texts(small_archive).values()))
    doc = orjson.loads(text)
    doc["added_by_a_newer_torch"] = {"a": [1, 2]}
    odd = orjson.dumps(doc)
    scans: list[str] = []
    real = lean_mod._object
    monkeypatch.setattr(lean_mod, "_object", lambda raw, where: scans.append(where) or real(raw, where))
    plain, _ = parse_program_lean(text, "model")
    assert scans == []  # torch's keys only: one scan
    lean, _ = parse_program_lean(odd, "model")
    assert scans and lean.unknown_fields == {"added_by_a_newer_torch": {"a": [1, 2]}}
    assert _dump(lean) == _dump(parse_program(orjson.loads(odd), "model", consume=True))
    assert _dump(plain) == _dump(parse_program(orjson.loads(text), "model", consume=True))


def test_argument_columns_give_each_node_its_own_text(small_archive: Path) -> None:
    # the joined columns (NUL after each text) cut back into the nodes' texts
    text = next(iter(program_texts(small_archive).values()))
    program, _ = parse_program_lean(text, "model")
    cols = program.graph.nodes._cols
    raw_nodes = orjson.loads(text)["graph_module"]["graph"]["nodes"]
    assert len(cols) == len(raw_nodes)
    for i, raw in enumerate(raw_nodes):
        assert orjson.loads(cols.input(i) or b"null") == raw.get("inputs")
        assert orjson.loads(cols.output(i) or b"null") == raw.get("outputs")
        assert cols.targets[i] == raw["target"]
    # mentioning finds exactly the nodes whose input text holds the word
    word = raw_nodes[-1]["inputs"][0]["name"]
    hits = [n.index for n in program.graph.nodes.mentioning([word])]
    assert hits and hits == [i for i, r in enumerate(raw_nodes)
                             if word.encode() in orjson.dumps(r.get("inputs"))]


# --- the scan's own costs (issue 17: the limits re-derived for the lean model) ---------

def _scan_bytes(text: bytes, decode) -> int:
    """Bytes the Python allocator holds for what `decode(text)` returns (tracemalloc
    sees msgspec's objects: it allocates through Python's allocator)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        kept = decode(text)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return held


@pytest.mark.parametrize("char", ["t", "é", "ā", "𝔸"], ids=["ascii", "latin1", "ucs2", "ucs4"])
def test_the_scan_costs_no_more_per_node_than_it_charges(char: str) -> None:
    # the costliest nodes the scan keeps: every span, and a name and a target of
    # the longest it takes, in each of str's storage widths (lean._ChargedNode
    # charges _NODE_FIXED_COST + 4 bytes a character against the budget)
    n, chars = 20_000, lean_mod.MAX_SHORT_TEXT - 8
    nodes = b"[" + b",".join(orjson.dumps({
        "target": char * chars + f"{i:08d}", "name": char * chars + f"{i:08x}", "inputs": [],
        "outputs": [], "metadata": {}}) for i in range(n)) + b"]"
    text = b'{"graph_module":{"graph":{"nodes":' + nodes + b"}}}"
    held = _scan_bytes(text, lambda t: lean_mod._counted(lean_mod._TOP, t, n, "too many"))
    charged = lean_mod._NODE_FIXED_COST + 4 * 2 * lean_mod.MAX_SHORT_TEXT
    assert held / n <= charged, f"{held / n:.0f} bytes per node, {charged} charged"
    if char == "𝔸":  # the widest: the charge is what it costs, not a guess far off
        assert held / n >= 0.85 * charged, f"{held / n:.0f} bytes per node, {charged} charged"


def test_the_scan_costs_no_more_per_record_byte_than_its_budget_says() -> None:
    # the densest tensor records: distinct short keys, the smallest values
    n = 200_000
    span = b"{" + b",".join(b'"%x":0' % i for i in range(n)) + b"}"
    held = _scan_bytes(span, lean_mod._RECORDS.decode)
    assert held / len(span) <= lean_mod._RECORD_COST_PER_BYTE, f"{held / len(span):.1f} per byte"


def test_the_cheapest_node_costs_no_more_made_and_listed_than_its_values() -> None:
    # a node with no name and no arguments is the most nodes for the fewest
    # values: its struct, the name made for it, its two lists and its listing
    # line must stay within what the count charges it (lean._NODE_VALUES and its
    # texts' two brackets, at lean._VALUE_BYTES a value), and near it
    import gc
    import tracemalloc

    n = 20_000
    nodes = b",".join([b'{"target":"t","inputs":[],"outputs":[]}'] * n)
    text = b'{"graph_module":{"graph":{"nodes":[' + nodes + b"]}}}"
    program, values = parse_program_lean(text, "model")
    assert isinstance(program.graph.nodes, LazyNodes)
    charged = (lean_mod._NODE_VALUES + 2) * lean_mod._VALUE_BYTES
    assert values <= n * (lean_mod._NODE_VALUES + 2) + 50  # (the graph's own few)
    gc.collect()
    tracemalloc.start()
    try:
        made = list(program.graph.nodes)
        listing = render_listing(program)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(made) == n and len(listing.lines) > n
    assert held / n <= charged, f"{held / n:.0f} bytes a node made and listed, {charged} charged"
    assert held / n >= charged - lean_mod._VALUE_BYTES, f"{held / n:.0f} bytes, {charged} charged"


def _peak_while_refused(text: bytes, message: str) -> int:
    """The allocator's peak (tracemalloc) while the lean parse refuses `text`."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ArchiveError, match=message):
            parse_program_lean(text, "model")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_scan_stops_at_the_node_limit_as_it_reads(monkeypatch) -> None:
    # msgspec checks a list's length once it is built: the nodes count themselves,
    # so the scan of 100,000 tiny nodes stops after the 2,001st (twice the limit:
    # what nodes as heavy as a real model's may reach; peak: their structs,
    # ~140 kB, not 100,000 of them, ~7 MB)
    monkeypatch.setattr(lean_mod.full, "MAX_NODES", 1000)
    text = (b'{"graph_module":{"graph":{"nodes":[' + b'{"target":""},' * 100_000
            + b'{"target":""}]}}}')
    peak = _peak_while_refused(text, "more than 2,000 nodes")
    assert peak < 1_000_000, f"{peak:,} bytes at the peak"


def test_the_scan_charges_its_nodes_against_the_budget(small_archive: Path, monkeypatch) -> None:
    text = next(iter(program_texts(small_archive).values()))
    nodes = len(orjson.loads(text)["graph_module"]["graph"]["nodes"])
    monkeypatch.setattr(lean_mod, "MAX_SCAN_BYTES", len(text) + nodes * lean_mod._NODE_FIXED_COST)
    with pytest.raises(ArchiveError, match="what its scan keeps of it need more than the limit"):
        parse_program_lean(text, "model")


def test_names_of_other_types_and_long_ones_go_to_the_full_parse(small_archive: Path) -> None:
    # the scan keeps short strings only: a name holding any JSON would be decoded
    # whole by it; the full parse counts values first (and shows such names as
    # absent, as before)
    text = next(iter(program_texts(small_archive).values()))
    node = orjson.loads(text)["graph_module"]["graph"]["nodes"][0]
    for name in ([{"a": 1}] * 3, "n" * (lean_mod.MAX_SHORT_TEXT + 1), 7):
        odd = _with_first_node(text, {**node, "name": name})
        with pytest.raises(LeanUnsupported):
            parse_program_lean(odd, "model")
        parse_program(orjson.loads(odd), "model")  # and the full parse reads it


def test_many_tensor_records_are_counted_before_they_are_decoded(
        small_archive: Path, monkeypatch) -> None:
    text = next(iter(program_texts(small_archive).values()))
    records = len(orjson.loads(text)["graph_module"]["graph"]["tensor_values"])
    monkeypatch.setattr(lean_mod, "MAX_TENSOR_RECORDS", records - 1)
    # a small program: no count of its records could pass the budget, so they are
    # decoded, then found too many
    with pytest.raises(ArchiveError, match=f"has {records:,} tensor records"):
        parse_program_lean(text, "model")
    # where they could: counted first, and refused as the count passes the limit
    monkeypatch.setattr(lean_mod, "_RECORD_COST_PER_BYTE", 10**9)
    with pytest.raises(ArchiveError, match=f"more than {records - 1:,} tensor records"):
        parse_program_lean(text, "model")
    monkeypatch.setattr(lean_mod, "MAX_TENSOR_RECORDS", records)
    counted, _ = parse_program_lean(text, "model")  # counted, then read as before
    assert _dump(counted) == _dump(parse_program(orjson.loads(text), "model", consume=True))


def test_a_big_top_level_beside_the_graph_module_goes_to_the_full_parse(
        small_archive: Path, monkeypatch) -> None:
    text = next(iter(program_texts(small_archive).values()))
    doc = orjson.loads(text)
    doc["added_by_a_newer_torch"] = list(range(2000))
    odd = orjson.dumps(doc)
    parse_program_lean(odd, "model")
    monkeypatch.setattr(lean_mod, "MAX_UNKNOWN_TOP_BYTES", 1000)
    with pytest.raises(LeanUnsupported, match="beside its graph module"):
        parse_program_lean(odd, "model")


def test_layers_that_differ_share_the_metadata_parts_they_repeat(small_archive: Path) -> None:
    # a real model's layers carry the same stack traces and differ in module paths
    # and call counters: the repeated parts are held once, not each whole text
    text = next(iter(program_texts(small_archive).values()))
    doc = orjson.loads(text)
    nodes = doc["graph_module"]["graph"]["nodes"]
    layers = []
    for j in range(3):
        for node in nodes:
            meta = dict(node.get("metadata") or {})
            meta["torch_fn"] = f"call_{j};{meta.get('torch_fn', '')}"
            layers.append({**node, "metadata": meta})
    doc["graph_module"]["graph"]["nodes"] = layers
    odd = orjson.dumps(doc)
    program, _ = parse_program_lean(odd, "model")
    assert _dump(program) == _dump(parse_program(orjson.loads(odd), "model", consume=True))
    parts = program.graph.nodes._cols.meta
    traced = [i for i, n in enumerate(nodes) if "stack_trace" in (n.get("metadata") or {})]
    assert traced
    i, n = traced[0], len(nodes)
    first, third = parts[i], parts[i + 2 * n]
    assert first != third  # their torch_fn differ
    shared = [a for a, b in zip(first[1], third[1]) if a is b]
    assert shared, "the stack trace's text is held once for both layers"
    assert program.graph.nodes[i].stack_trace is program.graph.nodes[i + 2 * n].stack_trace


@pytest.mark.parametrize("metadata, message", [
    ({"stack_trace": "File \"a.py\", line 1, in f\n    " + "x" * 70_000}, None),
    ([1, 2], "metadata is not an object"),
])
def test_metadata_kept_whole_is_decoded_as_the_full_parse_does(
        small_archive: Path, metadata: Any, message: str | None) -> None:
    # over 64 kB, or not an object: not split, decoded whole when its node is made
    text = next(iter(program_texts(small_archive).values()))
    node = orjson.loads(text)["graph_module"]["graph"]["nodes"][0]
    odd = _with_first_node(text, {**node, "metadata": metadata})
    program, _ = parse_program_lean(odd, "model")
    if message is None:
        assert _dump(program) == _dump(parse_program(orjson.loads(odd), "model", consume=True))
        return
    with pytest.raises(ArchiveError, match=message):
        parse_program(orjson.loads(odd), "model")
    with pytest.raises(ArchiveError, match=message):
        program.graph.nodes[0]


def test_metadata_parts_are_charged_as_they_are_made(monkeypatch) -> None:
    # 20,000 nodes with 30 distinct tiny metadata keys each: ~100 bytes of parts
    # per 9 bytes of text; refused once they pass the budget, not after
    nodes = b",".join(orjson.dumps({"target": "t", "metadata": {
        f"k{i}_{j}": 0 for j in range(30)}}) for i in range(20_000))
    text = b'{"graph_module":{"graph":{"nodes":[' + nodes + b"]}}}"
    monkeypatch.setattr(lean_mod, "MAX_SCAN_BYTES", len(text) + 8_000_000)
    peak = _peak_while_refused(text, "need more than the limit")
    assert peak < 20_000_000, f"{peak:,} bytes at the peak"


@pytest.mark.parametrize(("text", "width"), [
    (b'{"a": "plain"}', 1), ('"\u00e9"'.encode(), 1), (b'"\\u00e9"', 1),  # Latin-1: 1 byte
    ('"\u0101"'.encode(), 2), (b'"\\u4e2d"', 2), ('"\u4e2d"'.encode(), 2),
    ('"\U0001F600"'.encode(), 4), (b'"\\ud83d\\ude00"', 4),
])
def test_str_width_is_the_width_python_keeps_the_strings_at(text: bytes, width: int) -> None:
    assert lean_mod.str_width(text) == width
    decoded = orjson.loads(text)
    for s in decoded.values() if isinstance(decoded, dict) else [decoded]:
        # the str's bytes per character, from its size (CPython's compact strings)
        assert (sys.getsizeof(s + s) - sys.getsizeof(s)) // len(s) == width


def _with_stack_trace(stack: str) -> bytes:
    node = {"target": "torch.ops.aten.add.Tensor", "metadata": {"stack_trace": stack}}
    return b'{"graph_module":{"graph":{"nodes":[' + orjson.dumps(node) + b"]}}}"


def test_wide_strings_charge_what_they_widen_to(monkeypatch) -> None:
    # 4 MB of `a`: ASCII, a 4 MB str once decoded; with one emoji, a 16 MB one.
    # A budget with room for the text and its copy opens the first, and refuses
    # the second, whose copy would decode to 4x as much once the text is dropped.
    ascii_text = _with_stack_trace("a" * 4_000_000)
    wide_text = _with_stack_trace("a" * 4_000_000 + "\U0001F600")
    monkeypatch.setattr(lean_mod, "MAX_SCAN_BYTES", 2 * len(wide_text) + 1_000_000)
    program, _ = parse_program_lean(ascii_text, "model")
    assert len(program.graph.nodes[0].stack_trace) == 4_000_000
    with pytest.raises(ArchiveError, match="limit of"):
        parse_program_lean(wide_text, "model")
    monkeypatch.setattr(lean_mod, "MAX_SCAN_BYTES", 5 * len(wide_text) + 1_000_000)
    program, _ = parse_program_lean(wide_text, "model")
    assert program.graph.nodes[0].stack_trace.endswith("\U0001F600")


def test_the_full_parse_refuses_wide_text_past_its_share_of_the_limit(tmp_path: Path) -> None:
    # a JSON record read whole (orjson): wide text may be as big as what ASCII
    # text at the limit decodes to, no bigger
    from inspector.core.archive import Archive

    wide = orjson.dumps({"s": "a" * 300_000 + "\U0001F600"})
    plain = orjson.dumps({"s": "a" * 300_000})
    path = tmp_path / "records.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("wide.json", wide)
        z.writestr("plain.json", plain)
    with zipfile.ZipFile(path) as z:
        archive = Archive(path=path, top="", layout="pt2", archive_version=None, byteorder=None,
                          records=[], program_names=[], _zip=z,
                          _by_folded={archive_mod.fold_name(i.filename): i for i in z.infolist()})
        assert archive.read_json("plain.json", limit=400_000)["s"] == "a" * 300_000
        with pytest.raises(ArchiveError, match="past U\\+FFFF.*4x"):
            archive.read_json("wide.json", limit=400_000)
        assert archive.read_json("wide.json", limit=4 * len(wide))["s"].endswith("\U0001F600")


def test_the_small_parts_charge_their_copy_and_what_it_decodes_to(monkeypatch) -> None:
    # graph_module.metadata is decoded at once, beside the text: text, copy and
    # its decoded str must fit
    note = "a" * 4_000_000
    text = (b'{"graph_module":{"graph":{"nodes":[]},"metadata":{"note":"' + note.encode()
            + b'"}}}')
    monkeypatch.setattr(lean_mod, "MAX_SCAN_BYTES", len(text) + 5_000_000)
    with pytest.raises(ArchiveError, match="limit of"):
        parse_program_lean(text, "model")
    monkeypatch.setattr(lean_mod, "MAX_SCAN_BYTES", len(text) + 9_000_000)
    program, _ = parse_program_lean(text, "model")
    assert program.metadata == {"note": note}


def test_a_metadata_string_counts_one_value_whatever_its_commas() -> None:
    # module paths and stack traces are full of commas: each decodes to one str
    _, plain = parse_program_lean(_with_stack_trace("a" * 2000), "model")
    _, commas = parse_program_lean(_with_stack_trace("a," * 1000), "model")
    _, listed = parse_program_lean(_with_stack_trace(["a"] * 1000), "model")  # not a string
    assert commas == plain and listed >= plain + 999
