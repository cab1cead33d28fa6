"""The first screen of a big program's listing, from the head of its text alone.

The lean scan (lean.py) reads the whole text before the listing can start: ~1 s
for a 200 MB program. What the window paints first is a few hundred lines,
which depend only on the graph's first nodes, their tensor records, and the
small parts torch writes after the records (symbolic values, signature,
versions). torch writes them in that order: a graph's inputs, outputs and nodes,
then its tensor records in node order, then the rest. So the first nodes, the
records up to theirs and the text after the records make a small program text of
their own, and its listing up to its last node is the big program's first lines
(first_screen.first_screen_lines; tests/unit/test_program_head.py checks that on
every program of the fidelity corpus, against the whole listing).

Only byte searches cut the text, never a parse: a quote inside a JSON string is
escaped, so `{"target":`, `"tensor_values":` or `"name":{"dtype":` seen in the
text are keys, not string content. The small text is then parsed by the lean
parse, which judges it as it judges any program; a text laid out otherwise (keys
in another order, a node holding a subgraph among the first, a record missing)
gets no first screen (None), and the window waits for the whole parse, as it
did. Nothing is evaluated; the small text is bounded (_MAX_PART_BYTES for each
part), so its parse is too. The first screen is shown only until the whole
listing is ready, which replaces it.
"""

from __future__ import annotations

import re

from inspector.core.errors import ArchiveError
from inspector.core.program.lean import LeanUnsupported, parse_program_lean
from inspector.core.program.model import K, Program

# Nodes in a first screen: ~2.5 listing lines each, several screens.
HEAD_NODES = 400
# Each part taken from the text (before the nodes, the nodes, the records, the
# end): a program whose parts are bigger gets no first screen.
_MAX_PART_BYTES = 16 * 1024 * 1024

# What head_text reads of a text: its first NEEDED_HEAD bytes (the text before the
# nodes and the nodes' window), and its end back to the last NEEDED_TAIL_KEY
# (Archive.read_ends reads no more of a big stored text).
NEEDED_HEAD = 2 * _MAX_PART_BYTES
NEEDED_TAIL_KEY = b'"tensor_values"'

_NODES_KEY = re.compile(rb'"nodes"\s*:\s*\[\s*(?=\{)')
_NEXT_NODE = re.compile(rb'\}\s*,\s*(?=\{\s*"target"\s*:)')
_RECORDS_KEY = re.compile(rb'"tensor_values"\s*:\s*\{\s*')
_NEXT_RECORD = re.compile(rb'\}\s*,\s*(?="(?:[^"\\]|\\.){0,256}"\s*:\s*\{\s*"dtype"\s*:)')
_AFTER_RECORDS = b'"sym_int_values"'
# arguments whose values have tensor records (a symbolic int's is elsewhere)
_TENSOR_KINDS = (K.TENSOR, K.TENSORS)


def head_text(data: bytes, nodes: int = HEAD_NODES) -> tuple[bytes, int] | None:
    """(a program text of `data`'s first `nodes` nodes of its main graph, their
    tensor records and everything after the records; the nodes it holds), or
    None where `data` is not laid out as torch writes it, or holds fewer nodes."""
    opened = _NODES_KEY.search(data, 0, _MAX_PART_BYTES)
    if opened is None:
        return None
    start = opened.end()
    ends = []
    for m in _NEXT_NODE.finditer(data, start, start + _MAX_PART_BYTES):
        ends.append(m.start() + 1)
        if len(ends) == nodes:
            break
    if len(ends) < 2 or (len(ends) < nodes and ends[-1] < start + _MAX_PART_BYTES // 2):
        return None  # a small graph (the whole parse is quick), or nodes too big
    # The main graph's records and what follows them are its last ones: nested
    # graphs (control flow) lie inside its nodes, before.
    after = data.rfind(_AFTER_RECORDS)
    if after < 0 or len(data) - after > _MAX_PART_BYTES:
        return None
    key = data.rfind(NEEDED_TAIL_KEY, ends[-1], after)
    records = _RECORDS_KEY.match(data, key) if key >= 0 else None
    if records is None:
        return None
    first = records.end()
    # the records in node order: the graph's inputs', then each node's; a few
    # more than the head defines (a node defines one to a few values)
    want = 4 * len(ends) + data.count(b'"as_', 0, opened.start())
    cut = first
    for i, m in enumerate(_NEXT_RECORD.finditer(data, first, min(after, first + _MAX_PART_BYTES))):
        cut = m.start() + 1
        if i + 1 >= want:
            break
    if cut == first:
        return None
    text = b"".join((data[:ends[-1]], b'],"tensor_values":{', data[first:cut], b"},",
                     data[after:]))
    return text, len(ends)


def head_program(data: bytes, name: str, nodes: int = HEAD_NODES) -> Program | None:
    """The program of head_text(data): the first lines of its listing, up to its
    last node, are `data`'s (first_screen.first_screen_lines). None where head_text
    gives none, or the head names a value it holds no record for (its types
    would be missing), or holds a subgraph (listed after the main graph)."""
    head = head_text(data, nodes)
    if head is None:
        return None
    try:
        program, _values = parse_program_lean(head[0], name)
    except (LeanUnsupported, ArchiveError):
        return None
    graph = program.graph
    if graph.subgraphs or not len(graph.nodes):
        return None
    records = graph.tensor_values
    defined = [n for arg in graph.inputs if arg.kind in _TENSOR_KINDS for n in arg.tensor_names()]
    for node in graph.nodes:
        defined += (n for out in node.outputs if out.kind in _TENSOR_KINDS
                    for n in out.tensor_names())
    if any(n not in records for n in defined):
        return None  # the records were cut before one of them
    return program
