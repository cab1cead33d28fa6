"""The fast search paths (core/line_scan.py's numpy literal scan over distinct
lines, a regex run only on the lines holding its required literal, field keys'
lines as one array) give exactly what the straightforward search gives: each
line tested alone with `in` or `re.search`. Over real listings (the tiny toy
GPT-2 decoder and the fidelity corpus of real torch exports), over hand-made
listings with non-ASCII case folding, and over generated ones (hypothesis)."""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity_cases import session_corpus
from test_search import decoder  # noqa: F401  (the toy decoder's listing, exported once)
from inspector.core import line_scan
from inspector.core.archive import open_archive
from inspector.core.line_scan import Groups, LineText
from inspector.core.listing import Listing, render_listing
from inspector.core.search import SearchIndex, _required_literal, parse_query, scan_lines

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@contextmanager
def small_chunks(chunk: int = 7, dense: int = 2) -> Iterator[None]:
    """Scan a few bytes per pass (every chunk boundary is crossed by some match)
    and take the two-byte first pass for nearly every needle."""
    old = line_scan.CHUNK, line_scan.DENSE
    line_scan.CHUNK, line_scan.DENSE = chunk, dense
    try:
        yield
    finally:
        line_scan.CHUNK, line_scan.DENSE = old


def plain(lines: list[str], needle: str, case_sensitive: bool) -> list[int]:
    if not needle or "\n" in needle:
        return []
    if case_sensitive:
        return [i for i, t in enumerate(lines) if needle in t]
    low = needle.lower()
    return [i for i, t in enumerate(lines) if low in t.lower()]


def regex(lines: list[str], pattern: str, case_sensitive: bool) -> list[int]:
    pat = re.compile(pattern, re.MULTILINE | (0 if case_sensitive else re.IGNORECASE))
    return [i for i, t in enumerate(lines) if pat.search(t)]


def queries_of(lines: list[str], seed: int, count: int = 12) -> tuple[list[str], list[str]]:
    """Plain needles and regexes taken from the listing itself: words, slices of
    lines, their capitals, and patterns built around words."""
    rng = random.Random(seed)
    words = sorted({w for t in lines for w in _WORD.findall(t)})
    text_lines = [t for t in lines if t.strip()]
    if not words or not text_lines:
        return [], []
    picked = rng.sample(words, min(count, len(words)))
    needles = list(picked) + [w.upper() for w in picked[:3]] + ["zzz_not_there_", "=", "(", " "]
    for _ in range(count):
        t = rng.choice(text_lines)
        a = rng.randrange(len(t))
        needles.append(t[a:a + rng.randint(1, 12)])
    pats = [r"zzz_not\d+"]
    for w in picked[:count // 2]:
        e = re.escape(w)
        pats += [e + r"\w*", r"\b" + e + r"\b", e + r"(?:_\d+)?\s*[:=]", "^\\s+" + e, e + "$",
                 "(" + e[:2] + ")" + e[2:], re.escape(w.upper()), "(?i)" + re.escape(w.title())]
    pats += [r"_\d+:", r"\w+_\d+", r"ops\.aten\.\w+\.default", r"f32\[\d+"]
    return needles, pats


def assert_same(lines: list[str], needles: list[str], pats: list[str], label: str) -> None:
    index = SearchIndex(Listing(lines=list(lines), kinds=["statement"] * len(lines),
                                line_nodes=[None] * len(lines)))
    # scan_lines (the lines so far, while the index builds) finds what it finds
    for needle in needles:
        for cs in (False, True):
            got = index.search(parse_query(needle, case_sensitive=cs)).lines if needle.strip() else None
            if got is not None and not parse_query(needle).fields:
                assert got == plain(lines, needle, cs), (label, needle, cs)
                assert scan_lines(lines, parse_query(needle, case_sensitive=cs)).lines == got, \
                    (label, needle, cs, "scan_lines")
    for pat in pats:
        if parse_query(pat).fields:
            continue
        for cs in (False, True):
            got = index.search(parse_query(pat, cs, regex=True)).lines
            assert got == regex(lines, pat, cs), (label, pat, cs)
            assert scan_lines(lines, parse_query(pat, cs, regex=True)).lines == got, \
                (label, pat, cs, "scan_lines")


def test_scan_lines_leaves_field_queries_to_the_index(toy_listing):
    lines = toy_listing.lines
    assert scan_lines(lines, "op:arange") is None
    assert scan_lines(lines, "op:arange cpu") is None
    assert scan_lines(lines, "").lines == []
    assert scan_lines(lines[:40], "cpu").lines == [i for i in scan_lines(lines, "cpu").lines
                                                   if i < 40]


@pytest.fixture(scope="module")
def toy_listing(decoder) -> Listing:
    return decoder[0]


def test_toy_listing_fast_paths_match_line_by_line(toy_listing):
    lines = toy_listing.lines
    scan = LineText(lines, lower=True)
    # the repeated stack-trace comments are stored once: the dedup path is taken
    assert scan._readers is not None and len(scan.distinct) < len(lines)
    needles, pats = queries_of(lines, seed=17, count=30)
    needles += ["cpu", "device(type='cpu')", "# File:", "modeling_gpt2.py", "arange"]
    pats += [r"arange_\d+", r"Arange_\d+", r"sym_size\S*\s=\s", r"torch\.ops\.aten\.(add|mul)\."]
    assert_same(lines, needles, pats, "toy")
    with small_chunks():  # the same with every chunk boundary in play
        assert_same(lines, needles[:20], pats[:12], "toy, small chunks")


def test_toy_field_terms_match_a_scan_of_the_keys(toy_listing):
    index = SearchIndex(toy_listing)
    for fname in ("op", "target", "name"):
        table = index.keys[fname]
        rng = random.Random(fname)
        for key in rng.sample(sorted(table), min(15, len(table))):
            for value in (key, key[1:4], key[-3:].upper()):
                want = sorted({ln for k, lst in table.items() if value.lower() in k.lower()
                               for ln in lst})
                assert index.field_lines(fname, value) == want, (fname, value)


def test_corpus_listings_fast_paths_match_line_by_line(tmp_path_factory):
    import transformers  # noqa: F401  (pytree types of HF outputs, as the fidelity test)

    only = [x for x in os.environ.get("FIDELITY_ONLY", "").split(",") if x]
    archives, _ = session_corpus(tmp_path_factory, only or None)
    assert archives
    checked = 0
    for n, archive in enumerate(archives):
        with open_archive(archive.path) as opened:
            for name in opened.program_names:
                lines = render_listing(opened.program(name)).lines
                needles, pats = queries_of(lines, seed=n, count=6)
                assert_same(lines, needles, pats, f"{archive.name}/{name}")
                checked += 1
    assert checked >= len(archives)


def test_case_folding_outside_ascii():
    # "ſ" and "K" (Kelvin) match "s" and "k" ignoring case but lowercase to
    # themselves / to "k"; "İ" lowercases to two characters; a final sigma
    # lowercases by what follows it; duplicate and empty lines
    lines = ["ΣΑΣ σας", "ſa = 1", "Kelvin K", "İstanbul", "plain ascii", "dup", "dup",
             "", "SA", "kelvin", "ΟΔΟΣ"]
    needles = ["sa", "SA", "ſ", "k", "K", "i", "İ", "i̇", "σ", "ς", "Σ", "dup", "σας", "ος"]
    pats = [r"sa", r"S\w", r"ſa", r"k\w+", r"K", r"^i", r"ς$", r"σ\b", r"dup$", r"[a-z]+"]
    assert_same(lines, needles, pats, "non-ascii")
    with small_chunks(chunk=3):
        assert_same(lines, needles, pats, "non-ascii, small chunks")


def test_required_literal_is_in_every_match():
    cases = {r"arange_\d+": "arange_", r"a?bc\sd": "bc", r"(ara)nge_x": "arange_x", r"a|b": "",
             r"(?x) a b \d c": "ab", r"x{2}y": "y", r"(?i)Foo": "Foo", r"\.": ".",
             r"(?:ab|ac)d": "a", r"(?i:ab)cd": "cd"}
    for pattern, literal in cases.items():
        assert _required_literal(re.compile(pattern)) == literal, pattern
    rng = random.Random(3)
    for pattern in cases:
        pat = re.compile(pattern)
        literal = _required_literal(pat)
        for _ in range(300):
            s = "".join(rng.choice("abcdfxyz_ .0123\nFOo") for _ in range(12)) + "arange_7 ab y"
            m = pat.search(s)
            if m and literal:
                assert literal in m.group() or (pat.flags & re.I
                                                and literal.lower() in m.group().lower()), pattern


_TEXT = st.text(alphabet="ab_\n1 Aσſé", max_size=10)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.text(alphabet="ab_1 Aσſé", max_size=10), max_size=12), needle=_TEXT,
       lower=st.booleans(), dedupe=st.booleans(), chunk=st.sampled_from([1, 2, 5, 64, 1 << 20]))
def test_line_text_finds_what_in_finds(lines, needle, lower, dedupe, chunk):
    with small_chunks(chunk=chunk, dense=64 if chunk > 5 else 2):
        got = LineText(lines, lower=lower, dedupe=dedupe).find_lines(needle)
    hay = [s.lower() for s in lines] if lower else lines
    want = [] if not needle or "\n" in needle else [i for i, s in enumerate(hay) if needle in s]
    assert got == want


@settings(max_examples=50, deadline=None)
@given(lines=st.lists(_TEXT, min_size=1, max_size=8), needle=st.text(alphabet="ab", min_size=1,
                                                                      max_size=2))
def test_line_text_lines_holding_a_newline(lines, needle):
    # a line with a newline inside (never in a listing) still maps to itself
    assert LineText(lines).find_lines(needle) == [i for i, s in enumerate(lines) if needle in s]


@settings(max_examples=100, deadline=None)
@given(lists=st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=5), max_size=10),
       data=st.data())
def test_groups_union_is_a_set_union(lists, data):
    groups = Groups.of_lists(lists)
    picked = sorted(data.draw(st.sets(st.integers(0, max(len(lists) - 1, 0)))) if lists else [])
    assert groups.union(picked) == sorted({x for g in picked for x in lists[g]})
