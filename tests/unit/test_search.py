"""Search over a real listing: the tiny toy GPT-2 decoder exported on CPU (by the
export job in a child process), plus hand-made listings for edge cases."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from export_cache import toy_export

from inspector.core.archive import open_archive
from inspector.core.frames import module_path, parse_stack_trace
from inspector.core.listing import Listing, render_listing
from inspector.core.search import SearchError, SearchIndex, parse_query, scan_lines



@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    given = os.environ.get("PT2I_TEST_TOY_ARCHIVE")
    if given:
        path = Path(given)
    else:
        path = toy_export()[0]  # the real export child, cached (tests/export_cache.py)
    with open_archive(path) as archive:
        listing = render_listing(archive.program("decoder"))
    return listing, SearchIndex(listing)


def _statement_lines(listing: Listing, test) -> list[int]:
    return [i for i, n in enumerate(listing.line_nodes)
            if n is not None and listing.line_of(n) == i and test(n)]


def test_plain_text_is_case_insensitive_and_finds_every_baked_cpu(decoder):
    listing, index = decoder
    result = index.search("cpu")
    assert result.lines == [i for i, t in enumerate(listing.lines) if "cpu" in t.lower()]
    baked = [i for i, t in enumerate(listing.lines) if "device(type='cpu')" in t]
    assert len(baked) >= 10 and set(baked) <= set(result.lines)
    assert index.search(parse_query("CPU", case_sensitive=True)).lines == \
        [i for i, t in enumerate(listing.lines) if "CPU" in t]
    line = listing.lines[baked[0]]
    assert any(line[s:e].lower() == "cpu" for s, e in result.spans(line))


def test_regex(decoder):
    listing, index = decoder
    pat = r"arange_\d+:"
    got = index.search(parse_query(pat, regex=True)).lines
    assert got == [i for i, t in enumerate(listing.lines) if re.search(pat, t, re.I)]
    assert got
    # patterns that could cross a line break still match per line
    pat2 = r"sym_size\S*\s=\s"
    assert index.search(parse_query(pat2, regex=True)).lines == \
        [i for i, t in enumerate(listing.lines) if re.search(pat2, t, re.I)]
    with pytest.raises(SearchError):
        index.search(parse_query("([", regex=True))


def test_field_queries_match_the_program_model(decoder):
    listing, index = decoder
    assert index.search("op:arange").lines == _statement_lines(listing, lambda n: "arange" in n.op_name)
    assert index.search("device:cpu").lines == _statement_lines(
        listing, lambda n: any(a.arg.kind == "as_device" and a.arg.value.get("type") == "cpu"
                               for a in n.inputs))
    assert len(index.search("device:cpu")) == sum("device(type='cpu')" in t for t in listing.lines)
    h0 = "decoder.transformer.h.0"
    assert index.search(f"module:{h0}").lines == _statement_lines(
        listing, lambda n: (module_path(n.nn_module_stack) + ".").startswith(h0 + "."))
    assert index.search("module:GPT2Attention").lines  # class names work too
    gpt2 = index.search("file:modeling_gpt2.py").lines
    assert gpt2 == _statement_lines(listing, lambda n: any(
        f.file.endswith("modeling_gpt2.py") for f in parse_stack_trace(n.stack_trace)))
    assert index.search("target:aten.to.dtype_layout").lines == _statement_lines(
        listing, lambda n: "aten.to.dtype_layout" in n.target)
    assert index.search("name:arange").lines == _statement_lines(listing, lambda n: "arange" in n.name)


def test_terms_combine_and_file_line(decoder):
    listing, index = decoder
    both = index.search("op:arange cpu").lines
    assert both == [i for i in index.search("op:arange").lines if "cpu" in listing.lines[i].lower()]
    # file:line gives the nodes a source line produced
    node = listing.line_nodes[both[0]]
    inner = parse_stack_trace(node.stack_trace)[-1]
    name = inner.file.rsplit("/", 1)[-1]
    lines = index.search(f"file:{name}:{inner.line}").lines
    assert both[0] in lines
    for ln in lines:
        frames = parse_stack_trace(listing.line_nodes[ln].stack_trace)
        assert any(f.file == inner.file and f.line == inner.line for f in frames)
    assert index.source_lines(inner.file, inner.line) == lines


def test_parse_query_and_empty():
    q = parse_query("op:arange  device(type='cpu')")
    assert q.fields == (("op", "arange"),) and q.text == "device(type='cpu')"
    assert parse_query("").empty
    assert parse_query("foo:bar").text == "foo:bar"  # unknown field = plain text


def test_hand_made_listing_spans_and_no_cross_line_matches():
    listing = Listing(lines=["alpha beta", "beta gamma beta", ""],
                      kinds=["statement", "statement", "blank"], line_nodes=[None, None, None])
    index = SearchIndex(listing)
    r = index.search("beta")
    assert r.lines == [0, 1]
    assert r.spans("beta gamma beta") == [(0, 4), (11, 15)]
    assert index.search("beta\nbeta").lines == []
    assert index.search(parse_query(r"beta$", regex=True)).lines == [0, 1]
    assert index.search("zzz").lines == []


# --- free text against a plain scan of the lines ------------------------------------------

# (text, case_sensitive, regex): plain words either case, regexes with a literal the
# index can narrow by and without one, capitals and escapes that lowercasing would
# break ([A-Z], \x41, (?-i:...)), a pattern that can span lines, and texts no line holds
FREE_TEXT = [
    ("arange", False, False), ("ARANGE", False, False), ("arange", True, False),
    ("Torch.ops", True, False), ("torch.ops.aten.", True, False), ("device=", False, False),
    ("f32[", False, False), ("no line holds this", False, False),
    (r"arange_?\d*", False, True), (r"add_\d+: ", True, True), (r"[A-Z]\w+", True, True),
    (r"[A-Z]\w+", False, True), (r"\x41", False, True), (r"(?-i:Tensor)", False, True),
    (r"f32\[\d+, \d+\]", False, True), (r"^\s+#", False, True), (r"cpu|cuda", False, True),
    (r"embedding_\d", False, True), (r"\s$", False, True), (r"zzz\d", False, True),
]


EMPTY_HERE = [r"\s$"]  # no listing line ends in a blank


def _scan(lines: list[str], text: str, case_sensitive: bool, regex: bool):
    """The lines a query must find and the spans in each, by Python's own str/re."""
    if regex:
        pattern = re.compile(text, 0 if case_sensitive else re.IGNORECASE)
        hits = [i for i, line in enumerate(lines) if pattern.search(line)]
        return hits, {i: [m.span() for m in pattern.finditer(lines[i]) if m.end() > m.start()]
                      for i in hits}
    needle = text if case_sensitive else text.lower()
    hay = lines if case_sensitive else [line.lower() for line in lines]
    hits = [i for i, line in enumerate(hay) if needle in line]
    spans = {}
    for i in hits:
        out, at = [], hay[i].find(needle)
        while at >= 0:
            out.append((at, at + len(needle)))
            at = hay[i].find(needle, at + len(needle))
        spans[i] = out
    return hits, spans


@pytest.mark.parametrize("text, case_sensitive, regex", FREE_TEXT)
def test_free_text_finds_what_a_plain_scan_of_the_lines_finds(decoder, text, case_sensitive,
                                                              regex):
    listing, index = decoder
    query = parse_query(text, case_sensitive=case_sensitive, regex=regex)
    want, spans = _scan(listing.lines, text, case_sensitive, regex)
    found = index.search(query)
    assert found.lines == want
    assert {i: found.spans(listing.lines[i]) for i in want} == spans
    scanned = scan_lines(listing.lines, query)  # the window's path before the index is made
    if scanned is not None:
        assert scanned.lines == want


def test_the_free_text_cases_find_something_and_tell_case_apart(decoder):
    listing, _ = decoder
    hits = {(t, c, r): _scan(listing.lines, t, c, r)[0] for t, c, r in FREE_TEXT}
    empty = sorted(t for (t, _, _), h in hits.items() if not h)
    assert empty == sorted(["no line holds this", "Torch.ops", r"zzz\d"] + EMPTY_HERE), empty
    assert hits[("arange", False, False)] == hits[("ARANGE", False, False)]
    assert hits[("Torch.ops", True, False)] == [] != hits[("torch.ops.aten.", True, False)]
    assert hits[("[A-Z]\\w+", True, True)] != hits[("[A-Z]\\w+", False, True)]
