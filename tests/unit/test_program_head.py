"""A big program's first screen from the head of its text (core/program/head.py,
first_screen.first_screen_lines): on every program of the fidelity corpus (real torch
exports, whose listings test_listing_fidelity.py compares with torch's own
print_readable), as torch wrote it and written compactly (as bench_lean's
programs are), the first screen is the whole listing's first lines, line for
line. A text laid out otherwise gets none, never a wrong one; damaged text
gets none or is refused by the parse that follows, by its CRC.
"""

from __future__ import annotations

import random
import zipfile

import orjson
import pytest

from fidelity_cases import program_texts, session_corpus
from inspector.core.archive import open_archive
from inspector.core.first_screen import first_screen_lines
from inspector.core.errors import ArchiveError
from inspector.core.listing import render_listing
from inspector.core import first_screen
from inspector.core.program import head as head_mod
from inspector.core.program.head import head_program, head_text
from inspector.core.program.lean import parse_program_lean


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory):
    import transformers  # noqa: F401  (pytree types of HF outputs, as the fidelity test)

    archives, _ = session_corpus(tmp_path_factory)
    return archives


def _screen_of_whole(text: bytes, name: str, kept: int) -> list[str]:
    """What the first screen of a head of `kept` nodes must be, read off the whole
    program's listing: every line before the line of its node #kept (1-based), the
    comment above it included; the lines from there on depend on what was cut."""
    program, _ = parse_program_lean(text, name)
    listing = render_listing(program)
    return listing.lines[:listing.line_of(program.graph.nodes[kept - 1])]


def _subgraph_among_first(text: bytes, nodes: int) -> bool:
    """Whether one of the first `nodes` nodes takes a control-flow subgraph (read
    off the JSON itself, keys as torch writes them)."""
    raw = orjson.loads(text)["graph_module"]["graph"]["nodes"][:nodes]
    return any(b'"as_graph"' in orjson.dumps(n.get("inputs")) for n in raw)


# Heads the corpus gets none of though no subgraph is among their nodes: head_text
# stops at a value record it cannot place (measured on torch 2.13: a data-dependent
# slice, `item` then `slice`, among the first nodes). Listed, so that a head lost
# anywhere else fails, and a listed one that comes back says so.
NO_HEAD = {("exportdb/assume_constant_result", "model", 5), ("ops/sym_shapes", "model", 17),
           ("decomp/sym_shapes", "model", 17)}


def test_first_screen_is_the_listings_first_lines_across_the_corpus(corpus) -> None:
    """Every head of every corpus program (torch's spelling and compact) gives the
    whole listing's lines up to its last node, all of them; a program gets no head
    exactly when a control-flow subgraph is among the nodes it would keep, or it is
    one of NO_HEAD."""
    heads = programs = none = 0
    for archive in corpus:
        for name, text in program_texts(archive.path).items():
            count = len(parse_program_lean(text, name)[0].graph.nodes)
            for spelled in (text, orjson.dumps(orjson.loads(text))):  # torch's, compact
                for nodes in (2, 5, 17):
                    if count <= nodes:  # a head needs more nodes than it keeps
                        assert head_program(spelled, name, nodes) is None
                        continue
                    programs += 1
                    head = head_program(spelled, name, nodes)
                    where = f"{archive.name}/{name} {nodes}"
                    listed = (archive.name, name, nodes) in NO_HEAD
                    if head is None:
                        assert _subgraph_among_first(text, nodes) or listed, f"no head: {where}"
                        none += 1
                        continue
                    assert not _subgraph_among_first(text, nodes), where
                    assert not listed, f"a head now (drop it from NO_HEAD): {where}"
                    assert len(head.graph.nodes) == nodes, where
                    lines = first_screen_lines(head)
                    assert lines and lines == _screen_of_whole(text, name, nodes), where
                    heads += 1
    assert programs >= 150 and heads + none == programs and heads > none, (heads, programs)


def test_a_head_holds_its_nodes_and_no_more(corpus) -> None:
    archive = max(corpus, key=lambda a: a.path.stat().st_size)
    name, text = max(program_texts(archive.path).items(), key=lambda kv: len(kv[1]))
    made = head_text(text, 40)
    assert made is not None
    head, kept = made
    assert kept == 40 and len(head) < len(text)
    program, _ = parse_program_lean(head, name)
    whole, _ = parse_program_lean(text, name)
    assert [n.name for n in program.graph.nodes] == [n.name for n in whole.graph.nodes[:40]]
    assert program.input_specs == whole.input_specs  # the text after the records, whole


def _with_records_reversed(text: bytes) -> bytes:
    doc = orjson.loads(text)
    graph = doc["graph_module"]["graph"]
    graph["tensor_values"] = dict(reversed(list(graph["tensor_values"].items())))
    return orjson.dumps(doc)


def test_no_first_screen_where_the_records_are_not_in_node_order(corpus) -> None:
    archive = max(corpus, key=lambda a: a.path.stat().st_size)
    name, text = max(program_texts(archive.path).items(), key=lambda kv: len(kv[1]))
    assert head_program(text, name, 5) is not None
    # the head's records now lie at the end, past the records it takes: its
    # types would be missing, so it gives none (the window waits for the parse)
    assert head_program(_with_records_reversed(text), name, 5) is None


def test_cut_or_damaged_text_gives_no_first_screen_or_a_true_one(corpus) -> None:
    archive = max(corpus, key=lambda a: a.path.stat().st_size)
    name, text = max(program_texts(archive.path).items(), key=lambda kv: len(kv[1]))
    screen = _screen_of_whole(text, name, 5)
    rng = random.Random(17)
    heads = true_heads = 0
    for _ in range(60):
        damaged = bytearray(text)
        for _ in range(rng.randint(1, 4)):  # bytes changed in place: the length stays
            at = rng.randrange(len(damaged))
            width = min(rng.randint(1, 40), len(damaged) - at)
            damaged[at:at + width] = bytes(rng.choice(b'{}[],:"x0 ') for _ in range(width))
        for case in (bytes(damaged), text[:rng.randrange(len(text))]):
            head = head_program(case, name, 5)  # never raises
            if head is None:
                continue
            lines = first_screen_lines(head)
            heads += 1
            # damage after the head's part leaves it true, whole; inside, it shows
            # what the damaged text says, and the parse then refuses or agrees
            if case[:len(text) // 4] == text[:len(text) // 4] and len(case) == len(text):
                assert lines == screen
                true_heads += 1
    assert heads > true_heads > 0


def test_archive_reads_the_text_once_and_its_parse_checks_the_crc(corpus, tmp_path) -> None:
    archive = max(corpus, key=lambda a: a.path.stat().st_size)
    with open_archive(archive.path) as a:
        name = max(a.program_names, key=lambda n: a.record(a.program_path(n)).size)
        head = a.program_head(name, nodes=5)
        assert head is not None
        reads = []
        original = a.read_buffer_checked_later
        a.read_buffer_checked_later = lambda *args, **kw: reads.append(args) or original(*args, **kw)
        whole = render_listing(a.program(name))
        assert reads == []  # the text program_head read
        lines = first_screen_lines(head)
        assert lines == whole.lines[:whole.line_of(a.program(name).graph.nodes[4])]
        assert a.program_head(name, nodes=5) is None  # parsed already: no head needed
    # a stored program with a byte changed inside a string of its head (its
    # headers keep the CRC of the original): the head is made (it cannot know),
    # and the parse then refuses it by its CRC
    with zipfile.ZipFile(archive.path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith(f"models/{name}.json"))
    assert info.compress_type == zipfile.ZIP_STORED  # as torch writes programs
    raw = bytearray(archive.path.read_bytes())
    raw[raw.index(b'"torch.ops.', info.header_offset) + 1] = ord("T")
    damaged = tmp_path / "damaged.pt2"
    damaged.write_bytes(bytes(raw))
    with open_archive(damaged) as a:
        assert a.program_head(name, nodes=5) is not None
        with pytest.raises(ArchiveError, match="CRC"):
            a.program(name)


def _hostile(nodes: bytes, records: bytes) -> bytes:
    return (b'{"graph_module":{"graph":{"inputs":[],"outputs":[],"nodes":[' + nodes
            + b'],"tensor_values":{' + records + b'},"sym_int_values":{}},"signature":{}}}')


@pytest.mark.parametrize("text", [
    _hostile(b'{"target":"x"},' * 3_000_000 + b'{"target":"x"}', b'"a":{"dtype":1}'),  # 45 MB
    _hostile(b'{"target":"x"}' + b"}" + b" " * 16_000_000 + b",", b""),  # a long blank run
    _hostile(b'{"target":"x"},' * 500 + b'{"target":"x"}',
             b'"a":{"dtype":1}' + b'},"' * 5_000_000),  # record cuts that lead nowhere
    _hostile(b'{"target":"x"},' * 500 + b'{"target":"x"}',
             b'"a":{"dtype":1}' + (b'},"' + b"b" * 200) * 70_000),  # long would-be names
], ids=["many-nodes", "blank-run", "record-cuts", "long-names"])
def test_a_hostile_head_is_cut_in_bounded_time(text: bytes) -> None:
    # what the window does with a big file before its parse refuses or opens it:
    # byte searches over bounded windows, no quadratic scan (the hostile-file
    # promise is 20 s of CPU for a whole command; this is a small part of one)
    import time

    start = time.process_time()
    head = head_program(text, "model", 400)
    if head is not None:
        first_screen_lines(head)
    assert time.process_time() - start < 5


def test_a_big_stored_text_is_read_at_its_two_ends_only(corpus, monkeypatch) -> None:
    # Archive.read_ends: the first NEEDED_HEAD bytes and the end back to the last
    # tensor_values key; scaled down so a corpus program counts as big
    archive = max(corpus, key=lambda a: a.path.stat().st_size)
    name, text = max(program_texts(archive.path).items(), key=lambda kv: len(kv[1]))
    part = len(text) // 8
    monkeypatch.setattr(head_mod, "_MAX_PART_BYTES", part)
    monkeypatch.setattr(head_mod, "NEEDED_HEAD", 2 * part)
    with open_archive(archive.path) as a:
        rel = a.program_path(name)
        ends = a.read_ends(rel, 2 * part, head_mod.NEEDED_TAIL_KEY)
        assert ends is not None and len(ends) < len(text)
        assert ends.startswith(text[:2 * part])
        tail = ends[2 * part:]
        assert text.endswith(tail) and tail.startswith(text[len(text) - len(tail):])
        assert head_mod.NEEDED_TAIL_KEY in tail
        assert text.rfind(head_mod.NEEDED_TAIL_KEY) >= len(text) - len(tail)
        head = a.program_head(name, nodes=5)
        assert head is not None and not a.cache.unparsed  # nothing kept: the parse reads it whole
        lines = first_screen_lines(head)
        assert lines and lines == _screen_of_whole(text, name, 5)
        assert a.read_ends(rel, len(text), head_mod.NEEDED_TAIL_KEY) is None  # not big


def _list_output(path: Path, monkeypatch, parsed_at: list[int] | None = None) -> str:
    """`pt2-inspector list PATH`, in-process: its stdout (and, in `parsed_at`, how
    much of it was written when each program's parse began)."""
    import io
    import sys

    from inspector import cli
    from inspector.core.archive import Archive

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    if parsed_at is not None:
        parse = Archive.program
        monkeypatch.setattr(Archive, "program", lambda self, name: (
            parsed_at.append(len(out.getvalue())), parse(self, name))[1])
    assert cli.main(["list", str(path)]) == 0
    return out.getvalue()


def test_list_writes_a_big_programs_first_screen_before_its_parse(corpus, monkeypatch) -> None:
    from pathlib import Path

    archive = max(corpus, key=lambda a: a.path.stat().st_size)
    whole = _list_output(Path(archive.path), monkeypatch)
    monkeypatch.setattr(first_screen, "FIRST_SCREEN_ABOVE_BYTES", 0)  # every program is big
    monkeypatch.setattr(head_mod, "HEAD_NODES", 5)
    parsed_at: list[int] = []
    streamed = _list_output(Path(archive.path), monkeypatch, parsed_at)
    assert streamed == whole  # the same text, byte for byte
    # when each program's parse began, its first lines were out already (more
    # than its `# program:` line), where its head gives a first screen
    import re

    texts = program_texts(archive.path)
    sections = [(m.end(), m.group(1)) for m in re.finditer(r"^# program: (.*)\n", whole, re.M)]
    assert len(parsed_at) == len(sections) == len(texts)
    with_head = 0
    for at, (header_end, name) in zip(parsed_at, sections):
        if head_program(texts[name], name, 5) is not None:
            assert at > header_end, name
            with_head += 1
        else:
            assert at == header_end, name
    assert with_head >= 1


def test_list_refuses_to_go_on_past_first_lines_that_differ(corpus, monkeypatch) -> None:
    from pathlib import Path

    from inspector.commands import listing as listing_cmd

    archive = max(corpus, key=lambda a: a.path.stat().st_size)
    monkeypatch.setattr(listing_cmd, "first_screen_of", lambda a, name: ["not its first line"])
    import io
    import sys

    from inspector import cli

    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert cli.main(["list", str(archive.path)]) != 0  # an internal error, said as such
