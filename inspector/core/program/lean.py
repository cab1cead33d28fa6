"""The lean parse of a program's JSON: the same model, without the whole document.

parser.py builds the model from a document orjson parsed whole: for a
100,000-node program (200 MB) that tree alone is ~1.3 GB and 1.1 s, and the
model built from it another 3 s. Here msgspec (measured against pysimdjson's
lazy proxies and a bare orjson.loads in tests/benchmarks/lean_parsers.py: the
fastest and leanest first screen) scans the text once into small structs of
byte spans (`msgspec.Raw`, views into the one bytes object), copied out as
columns (_NodeColumns: a few objects for all the nodes, built at C speed):

- `Graph.nodes` is a `LazyNodes` sequence: node i becomes a model `Node` (the
  same class, the same validation as parser.py) the first time it is asked for,
  and stays (the listing maps nodes by identity). Its metadata (stack trace,
  module stack, torch_fn) is decoded then, one shared dict per distinct text:
  nodes of one source line, and repeated layers, carry the same bytes.
- `Graph.tensor_values` is a `LazyTensorValues` mapping: one `TensorMeta` per
  distinct record text, decoded when asked. Only records with a symbolic size
  (`as_expr`) are decoded at parse, for the size hints and the used ranges.
- Everything else (signature, ranges, graph inputs/outputs, small tables, and
  every node that holds a control-flow subgraph) goes through parser.py as it
  is, so both parses give the same Program (tests/unit/test_lean_program.py).

Anything this parse does not expect (a node that is not an object, a target that
is not a string, JSON nested past msgspec's recursion) raises `LeanUnsupported`,
and the caller parses the file the full way, which names the problem as before.
Nothing from the file is evaluated.
"""

from __future__ import annotations

import re
import threading
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import accumulate
from operator import attrgetter
from typing import Annotated, Any, TypeVar

import msgspec
import orjson

from inspector.core.errors import ArchiveError
from inspector.core.program import parser as full
from inspector.core.program.model import Argument, Graph, Node, Program, TensorMeta

_Raw = msgspec.Raw
_NO_RAW = msgspec.Raw()


class LeanUnsupported(Exception):
    """The text is not what the lean parse expects: parse it the full way."""


# Node names and targets, and tensor record keys, longer than this go the full
# way: the scan's copies of them stay bounded (see "what the model may cost").
MAX_SHORT_TEXT = 128
_Short = Annotated[str, msgspec.Meta(max_length=MAX_SHORT_TEXT)]


class _Counted(threading.local):
    """Structs the scan in this thread may still make, and bytes: msgspec checks
    a list's length only once it is built, so each struct counts itself
    (__post_init__) and the scan stops at the limit, not after millions."""

    left = 0
    room = 0  # nodes: each charges its struct and spans, and its strings' worst


_COUNTED = _Counted()
# A node struct, its list slot, its three spans and its two strings' headers
# (tests/unit/test_lean_program.py measures it); each character of its name and
# target costs up to 4 bytes more (a str of astral characters).
_NODE_FIXED_COST = 64 + 9 + 3 * 48 + 2 * 80
_NODE_MOST = _NODE_FIXED_COST + 4 * 2 * MAX_SHORT_TEXT


def _count_one(_struct: Any) -> None:
    """A struct's __post_init__: one more made by the scan in this thread."""
    counted = _COUNTED
    counted.left -= 1
    if counted.left < 0:
        raise ValueError("too many")


class _RawNode(msgspec.Struct, array_like=False, gc=False):
    """One node's fields as spans of the text (gc=False: holds no containers
    the cyclic collector must scan; 100k of them would slow every collection).
    A name or a hop flag of another type is for the full parse to judge."""

    target: _Short
    name: _Short | None = None
    inputs: _Raw = _NO_RAW
    outputs: _Raw = _NO_RAW
    metadata: _Raw = _NO_RAW
    is_hop_single_tensor_return: bool | None = None

    __post_init__ = _count_one  # ~0.05 s per 100,000 nodes


class _ChargedNode(_RawNode, gc=False):
    """A _RawNode that also charges its bytes: for a text so big that MAX_NODES
    nodes at their most (_NODE_MOST) could pass the budget (~0.15 s more per
    100,000 nodes than counting alone)."""

    def __post_init__(self) -> None:
        counted = _COUNTED
        counted.left -= 1
        counted.room -= _NODE_FIXED_COST + 4 * (len(self.target) + len(self.name or ""))
        if counted.left < 0 or counted.room < 0:
            raise ValueError("too many")


class _CountedObject(msgspec.Struct, gc=False):
    """Any JSON object, skipped and counted (the counting pass over the tensor
    records: _records)."""

    __post_init__ = _count_one


class _RawGraph(msgspec.Struct, gc=False):
    """A graph: its nodes as structs of spans, its tensor records as spans,
    the rest (small) as spans for parser.py. Fields parser.py does not read
    are skipped."""

    nodes: list[_RawNode] | None = None
    tensor_values: _Raw = _NO_RAW  # decoded after the scan, once counted (_records)
    inputs: _Raw = _NO_RAW
    outputs: _Raw = _NO_RAW
    sym_int_values: _Raw = _NO_RAW
    sym_bool_values: _Raw = _NO_RAW
    sym_float_values: _Raw = _NO_RAW
    custom_obj_values: _Raw = _NO_RAW
    is_single_tensor_return: _Raw = _NO_RAW


class _RawGraphModule(msgspec.Struct, gc=False):
    graph: _RawGraph
    signature: _Raw = _NO_RAW
    module_call_graph: _Raw = _NO_RAW
    metadata: _Raw = _NO_RAW


class _RawTop(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """The document in one scan, when it holds only the keys torch writes
    (parser._KNOWN_TOP): any other key (kept as unknown_fields) makes this fail,
    and the document is then scanned twice, as a dict and then its graph_module."""

    graph_module: _RawGraphModule
    opset_version: _Raw = _NO_RAW
    range_constraints: _Raw = _NO_RAW
    schema_version: _Raw = _NO_RAW
    verifiers: _Raw = _NO_RAW
    torch_version: _Raw = _NO_RAW
    guards_code: _Raw = _NO_RAW
    dialect: _Raw = _NO_RAW


class _LooseTop(msgspec.Struct, gc=False):
    """The graph module's span alone: every other key is skipped, whatever it is."""

    graph_module: _Raw = _NO_RAW


class _ChargedGraph(_RawGraph, gc=False):
    nodes: list[_ChargedNode] | None = None


class _ChargedGraphModule(_RawGraphModule, gc=False):
    graph: _ChargedGraph


class _ChargedTop(_RawTop, gc=False, forbid_unknown_fields=True):
    graph_module: _ChargedGraphModule


_TOP_FIELDS = tuple(f for f in _RawTop.__struct_fields__ if f != "graph_module")
_SMALL_GRAPH_FIELDS = ("inputs", "outputs", "sym_int_values", "sym_bool_values",
                       "sym_float_values", "custom_obj_values", "is_single_tensor_return")
_OBJECT = msgspec.json.Decoder(dict[str, _Raw])
_LOOSE_TOP = msgspec.json.Decoder(_LooseTop)
_RECORDS = msgspec.json.Decoder(dict[_Short, _Raw])
_RECORD_COUNT = msgspec.json.Decoder(dict[_Short, _CountedObject])
_GRAPH_MODULE = msgspec.json.Decoder(_RawGraphModule)
_TOP = msgspec.json.Decoder(_RawTop)
_CHARGED = {False: (_TOP, _GRAPH_MODULE),
            True: (msgspec.json.Decoder(_ChargedTop), msgspec.json.Decoder(_ChargedGraphModule))}


def _object(raw: _Raw | bytes, where: str) -> dict[str, _Raw]:
    try:
        return _OBJECT.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise LeanUnsupported(f"{where}: {exc}") from None


def _loads(raw: _Raw | bytes | None) -> Any:
    """A span as orjson parses it (orjson, not msgspec: the same values as the
    full parse, which refuses integers past 64 bits)."""
    if raw is None or not len(raw):
        return None
    try:
        return orjson.loads(bytes(raw))
    except orjson.JSONDecodeError as exc:
        raise LeanUnsupported(str(exc)) from None


# --- what the model may cost ------------------------------------------------------
# The scan makes objects only down to each node's fields and each tensor record:
# per node a struct, its spans and its name and target (at most MAX_SHORT_TEXT
# characters each), charged as they are made against MAX_SCAN_BYTES less the
# text (_NODE_FIXED_COST + 4 bytes a character: ~1.4 kB at most), and it stops
# past MAX_NODES (_Counted), so a text of millions of `{"target":""}` (13 bytes:
# 70 bytes of struct each) costs no more than 400,000 nodes. Tensor records cost
# ~130 bytes from as little as 6 bytes of text (`"k":0,`): they are counted
# first where that could pass the budget (_records). Nothing else in the text is
# decoded by the scan (values it does not type are skipped, or kept as spans).
# The text is held only while it is scanned: nodes and tensor records are then
# copied out as compact bytes (metadata and records once per distinct text), and
# the text is dropped. A copy decodes to at most its size in str bytes, unless
# its strings hold a character past U+00FF: Python keeps a str at its widest
# character's width, so 350 MB of `a` and one emoji (a hostile stack trace)
# decodes to 1.4 GB. Each copy that may widen (str_width) charges its widening
# too, so the copies and their strings stay within text plus copies (the small
# parts, signature and the like, are charged as copies as well). What stays
# decoded grows with the JSON values the model makes from those copies (node
# arguments, distinct metadata and records, the small parts), counted before any
# is made as archive.json_value_count counts:
# 100-120 bytes per value for the densest hostile text, ~100 all-in (model and
# listing) for real programs. The genuine 400,000-node program (tests/benchmarks/
# bench_lean.py: 805 MB of JSON, 33.6M values by that count of the whole text)
# makes 10.0M (2.5M per 100k nodes): its repeated stack traces and tensor
# records cost nothing more after the first, which is how it is told from a
# bomb of the same size, whose values are all distinct or all arguments
# (tests/security: 64 MB of `{"a":1},` counts 16.8M and is refused).
# 12M values keeps the densest text under ~1.45 GB; text plus copies stays
# under MAX_SCAN_BYTES, the peak while scanning. A program whose layers differ
# in module paths and call counters, as a real model's do, makes ~27 values a
# node (bench_lean.py's "distinct" program: 10.8M at 400,000 nodes, 1.33 GB
# once listed whole): it opens at the node limit.
MAX_MODEL_VALUES = 12_000_000
# The bytes a counted value may cost at most (MAX_MODEL_VALUES' unit).
_VALUE_BYTES = 120
# A node's values beyond the commas and brackets of its argument texts: each
# text's last element (2), and the node's own objects, made and listed (2): its
# struct, a name made where its text has none, its listing line. With its two
# texts' brackets that is 6 values (720 bytes) for the cheapest node, which
# costs ~650-690 made and listed (tests/unit/test_lean_program.py measures it).
# (It was 8 before that was measured: 1.6M more at 400,000 nodes.)
_NODE_VALUES = 4
MAX_SCAN_BYTES = 1_400 * 1024 * 1024
# Tensor records per graph: torch writes one per tensor value a node or input
# defines (100,595 for the 100k-node program), so twice the node limit is more
# than any program has; records cost little here (one copy per distinct text),
# but each is a key the listing, search and audit may look up.
MAX_TENSOR_RECORDS = 2 * 2 * full.MAX_NODES  # twice the most nodes (HEAVY_NODE_FACTOR)
# What the tensor records' scan costs at most per byte of their text (its key,
# its span, the dict's slot: measured by tests/unit/test_lean_program.py).
_RECORD_COST_PER_BYTE = 24
# Nodes per program: past full.MAX_NODES a program opens only if its nodes are
# heavy, making at least LIGHT_NODE_VALUES JSON values each on average (a real
# model's make ~25: stack traces, module stacks, tensor arguments; the cheapest
# hostile ones 6-14, the time bomb the node limit is there for), up to
# HEAVY_NODE_FACTOR x the limit; memory stays bounded by MAX_MODEL_VALUES and
# MAX_SCAN_BYTES either way. Padding nodes to 20 values to pass costs a bomb
# author ~5x the text per node, and MAX_MODEL_VALUES holds such a program to
# 600,000 nodes (~1.5x the time of the node limit's).
LIGHT_NODE_VALUES = 20
HEAVY_NODE_FACTOR = 2
# Text beside the graph module when the top level holds keys torch does not
# write: decoded as a mapping (up to ~24x its size), else for the full parse.
MAX_UNKNOWN_TOP_BYTES = 16 * 1024 * 1024


def parse_program_lean(data: bytes, name: str, held: int = 0) -> tuple[Program, int]:
    """The program of `data` (a program's JSON text) and the JSON values its
    model may make (MAX_MODEL_VALUES; `held`: those of programs already open).
    Nodes and tensor records are kept in compact columns of their text until
    asked for. Raises LeanUnsupported for text the full parse must judge,
    ArchiveError as parser.py does and for a program over the limits."""
    where = f"program {name!r}"
    small_top, gm, room = _scan(data, where)
    g = gm.graph
    raw_nodes = g.nodes or []
    raw_records = _records(g.tensor_values, room, where)
    if len(raw_records) > MAX_TENSOR_RECORDS:
        raise ArchiveError(f"{where} has {len(raw_records):,} tensor records, over the "
                           f"limit of {MAX_TENSOR_RECORDS:,} per graph")
    interned = _Interned()
    small_gm = {k: bytes(getattr(gm, k)) for k in ("signature", "module_call_graph", "metadata")
                if len(getattr(gm, k))}
    small_graph = {k: bytes(getattr(g, k)) for k in _SMALL_GRAPH_FIELDS if len(getattr(g, k))}
    budget = _Budget(where, MAX_SCAN_BYTES - len(data))
    # Each copy charges its bytes and, where its strings widen once decoded
    # (str_width), its widening: the copies and what they decode to then stay
    # within what the text and the copies took. The small parts are decoded
    # here, beside the text: they charge what they decode to as well.
    budget.take(sum(2 * len(t) + _widening(t) for part in (small_top, small_gm, small_graph)
                    for t in part.values()))
    columns = _NodeColumns(raw_nodes, interned.strings, budget)
    node_values = columns.charge(budget)
    _check_light_nodes(len(raw_nodes), node_values, where)
    records, record_values = _compact_records(raw_records, budget)
    values = node_values + record_values + sum(
        _count(t) for part in (small_top, small_gm, small_graph) for t in part.values())
    del gm, g, raw_nodes, raw_records  # the spans of the text: it is freed when the caller drops it
    if values + held > MAX_MODEL_VALUES:
        also = f" (plus {held:,} in programs already open)" if held else ""
        raise ArchiveError(f"{where} would make about {values:,} JSON values{also}, over the "
                           f"limit of {MAX_MODEL_VALUES:,} values in memory at once")
    texts: set[str] = set()
    graph = _lean_graph({k: _loads(v) for k, v in small_graph.items()}, columns, records,
                        where, interned, texts)
    # The small parts (signature, ranges, versions, module call graph) as the
    # full parse reads them: a document with the graph left out.
    doc = {k: _loads(v) for k, v in small_top.items()}
    gm_doc = {k: _loads(v) for k, v in small_gm.items()}
    program = full.assemble_program(doc, gm_doc, graph, name, where, _symbol_texts(graph, texts))
    return program, values


def _check_light_nodes(count: int, values: int, where: str) -> None:
    """Past full.MAX_NODES, only nodes as heavy as a real model's (LIGHT_NODE_VALUES)."""
    if count > full.MAX_NODES and values < LIGHT_NODE_VALUES * count:
        raise ArchiveError(
            f"{where} has {count:,} nodes of about {values / count:.0f} JSON values each, over "
            f"the limit of {full.MAX_NODES:,} nodes per program for nodes that light (a real "
            f"model's make ~25 each and open up to {HEAVY_NODE_FACTOR * full.MAX_NODES:,}, "
            f"within the memory budget; set {full.NODE_LIMIT_ENV}=N to raise the limit)")


def _scan(data: bytes, where: str) -> tuple[dict[str, bytes], _RawGraphModule, int]:
    """(the top level's small parts as text, the graph module as spans, the bytes
    of MAX_SCAN_BYTES left): one scan of the text when its top level holds only
    torch's keys (a 200 MB program: ~0.2 s a scan), more otherwise. Makes at
    most MAX_NODES node structs, within the budget (past either: ArchiveError)."""
    most = HEAVY_NODE_FACTOR * full.MAX_NODES
    nodes = (most, f"{where} has more than {most:,} nodes, over the limit of {most:,} nodes "
                   f"per program ({HEAVY_NODE_FACTOR}x {full.MAX_NODES:,} for nodes as heavy as "
                   f"a real model's; set {full.NODE_LIMIT_ENV}=N to raise {full.MAX_NODES:,})",
             MAX_SCAN_BYTES - len(data), _over_budget(where))
    # nodes charge their bytes only where the most nodes can cost could pass the
    # budget (a text over ~900 MB); else counting them bounds them
    charged = len(data) + most * _NODE_MOST > MAX_SCAN_BYTES
    top_decoder, gm_decoder = _CHARGED[charged]

    def room(gm: _RawGraphModule) -> int:
        return _COUNTED.room if charged else (
            MAX_SCAN_BYTES - len(data) - len(gm.graph.nodes or ()) * _NODE_MOST)

    try:
        top = _counted(top_decoder, data, *nodes)
    except LeanUnsupported:
        pass
    else:
        return {k: bytes(getattr(top, k)) for k in _TOP_FIELDS if len(getattr(top, k))}, \
            top.graph_module, room(top.graph_module)
    # Another key beside torch's: its value is kept (Program.unknown_fields), so
    # the top level is decoded as a mapping, if what lies outside the graph
    # module is too small for its keys to cost much, however many; a bigger rest
    # is for the full parse, which counts every value before it makes any.
    gm_raw = _counted(_LOOSE_TOP, data, 0, "").graph_module
    if not len(gm_raw):
        raise LeanUnsupported(where)
    if len(data) - len(gm_raw) > MAX_UNKNOWN_TOP_BYTES:
        raise LeanUnsupported(f"{where}: {len(data) - len(gm_raw):,} bytes beside its graph module")
    parts = _object(data, where)
    gm = _counted(gm_decoder, gm_raw, *nodes)
    return {k: bytes(v) for k, v in parts.items() if k != "graph_module"}, gm, room(gm)


def _over_budget(where: str) -> str:
    return (f"{where}: its JSON and what its scan keeps of it need more than the limit of "
            f"{MAX_SCAN_BYTES:,} bytes")


def _counted(decoder: msgspec.json.Decoder, text: Any, limit: int, refusal: str,
             room: int = 1 << 62, over_room: str = "") -> Any:
    """`decoder.decode(text)`, stopped as soon as it has made more than `limit`
    counted structs (ArchiveError(refusal)), or structs charging more than `room`
    bytes (ArchiveError(over_room)); LeanUnsupported for text msgspec refuses."""
    counted = _COUNTED
    counted.left, counted.room = limit, room
    try:
        return decoder.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        if counted.left < 0:
            raise ArchiveError(refusal) from None
        if counted.room < 0:
            raise ArchiveError(over_room) from None
        raise LeanUnsupported(str(exc)) from None


def _records(span: _Raw, room: int, where: str) -> dict[str, _Raw]:
    """The tensor records' spans by value name. msgspec makes ~130 bytes per
    record (its key, its span, the dict's slot), from as little as 6 bytes of
    text: where that could pass `room`, the records are first counted (a
    validating pass that keeps nothing, stopped past MAX_TENSOR_RECORDS)."""
    if not len(span) or (len(span) == 4 and bytes(span) == b"null"):
        return {}
    if len(span) * _RECORD_COST_PER_BYTE > room:
        _counted(_RECORD_COUNT, span, MAX_TENSOR_RECORDS,
                 f"{where} has more than {MAX_TENSOR_RECORDS:,} tensor records, over the "
                 f"limit of {MAX_TENSOR_RECORDS:,} per graph")
    return _counted(_RECORDS, span, 0, "")


def _count(text: bytes) -> int:
    # archive.json_value_count, without importing the archive (it imports us)
    return text.count(b",") + text.count(b"{") + text.count(b"[") + 1


# A character past U+FFFF (a UTF-8 lead byte of four, or a surrogate escape), and
# one past U+00FF (a lead byte of two for U+0100 on, or of three; or an escape).
_ASTRAL = re.compile(rb"[\xf0-\xf4]|\\u[dD][89abAB]")
_PAST_LATIN1 = re.compile(rb"[\xc4-\xef]|\\u(?:0[1-9a-fA-F]|[1-9a-fA-F])")


def str_width(text: bytes | bytearray) -> int:
    """The bytes a character of the strings in JSON `text` may take once decoded:
    Python keeps a str at its widest character's width, so 1 MB of `a` with one
    emoji is a 4 MB str (an escaped backslash before `u` counts too: an upper
    bound). 1 for ASCII without escapes, what torch writes (ensure_ascii) for an
    ASCII source; at C speed."""
    # (memchr for a backslash first: `\\u` is slow to find among stack traces' `\\n`)
    if text.isascii() and (b"\\" not in text or b"\\u" not in text):
        return 1
    if _ASTRAL.search(text):
        return 4
    return 2 if _PAST_LATIN1.search(text) else 1


def _widening(text: bytes) -> int:
    """The bytes `text`'s strings take once decoded beyond one a byte of text
    (0 for ASCII without escapes: what torch writes)."""
    return (str_width(text) - 1) * len(text)


class _Budget:
    """Bytes the copies may take beside the text (MAX_SCAN_BYTES)."""

    __slots__ = ("where", "left")

    def __init__(self, where: str, left: int) -> None:
        self.where, self.left = where, left

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise ArchiveError(f"{self.where}: its JSON and the copies kept of its nodes "
                               f"need more than the limit of {MAX_SCAN_BYTES:,} bytes")


# Every byte but the separator and the brackets that open a nested value.
_NOT_OPENERS = bytes(b for b in range(256) if b not in b"\0[{")
_TARGET_OF, _NAME_OF, _HOP_OF, _INPUTS_OF, _OUTPUTS_OF, _METADATA_OF = (
    attrgetter(f) for f in ("target", "name", "is_hop_single_tensor_return", "inputs",
                            "outputs", "metadata"))


class _Canonical(dict):
    """The first of equal keys, for each (`canon[k]` stores k if new): mapped
    over many keys at C speed, where setdefault needs a Python-level loop."""

    def __missing__(self, key: Any) -> Any:
        self[key] = key
        return key


class _NodeColumns:
    """The nodes' compact form, a column per field instead of an object per node
    (400,000 nodes are a few dozen objects, built by C-level maps): targets
    (interned), names, is_hop_single_tensor_return; the argument texts joined
    into one bytes each, a NUL after each node's text (JSON text holds no raw
    NUL), with each node's start; each node's metadata as _MetadataParts."""

    __slots__ = ("targets", "names", "hops", "inputs", "in_starts", "outputs", "out_starts",
                 "meta", "_n", "_open")

    def __init__(self, raw: list[_RawNode], strings: _Canonical, budget: _Budget) -> None:
        self._n = len(raw)
        self.targets = list(map(strings.__getitem__, map(_TARGET_OF, raw)))
        self.names = list(map(_NAME_OF, raw))
        self.hops = list(map(_HOP_OF, raw))
        self.inputs, self.in_starts = _joined(list(map(_INPUTS_OF, raw)))
        self.outputs, self.out_starts = _joined(list(map(_OUTPUTS_OF, raw)))
        self.meta = _MetadataParts(raw, strings, budget)
        self._open: tuple[bytes, bytes] | None = None  # charge() -> deep()

    def __len__(self) -> int:
        return self._n

    def input(self, i: int) -> bytes:
        return self.inputs[self.in_starts[i]:self.in_starts[i + 1] - 1]

    def output(self, i: int) -> bytes:
        return self.outputs[self.out_starts[i]:self.out_starts[i + 1] - 1]

    def charge(self, budget: _Budget) -> int:
        """Take the columns' bytes from `budget`; the JSON values their texts
        make (each node's arguments, each distinct metadata text once)."""
        n = self._n
        budget.take(len(self.inputs) + len(self.outputs) + _widening(self.inputs)
                    + _widening(self.outputs)
                    + 200 * n)  # + each node's slots, name and argument lists
        # _count of each argument text, at C speed over the joined ones (the
        # opening brackets: the NUL-separated text deep() splits), and each
        # node's own values (_NODE_VALUES)
        values = self.meta.values() + _NODE_VALUES * n
        self._open = self._openers()
        for text, openers in zip((self.inputs, self.outputs), self._open):
            values += text.count(b",") + len(openers) - n
        return values

    def _openers(self) -> tuple[bytes, bytes]:
        """The input and the output texts' opening brackets and NULs alone."""
        return (self.inputs.translate(None, _NOT_OPENERS),
                self.outputs.translate(None, _NOT_OPENERS))

    def deep(self, limit: int) -> list[int]:
        """The nodes whose argument texts open more than `limit` brackets (their
        values may nest that deep): the opening brackets alone, split per node."""
        ins, outs = (t.split(b"\0") for t in self._open or self._openers())
        self._open = None
        if max(map(len, ins)) + max(map(len, outs)) <= limit:
            return []
        return [i for i, (a, b) in enumerate(zip(ins, outs)) if len(a) + len(b) > limit]

    def inputs_holding(self, pattern: re.Pattern[bytes], *spelled: bytes) -> list[int]:
        """The nodes whose input text `pattern` matches (it must not match a NUL).
        `spelled`: literals one of which any match holds; a text holding none is
        passed over at memchr speed (a regex alternation reads each byte)."""
        if spelled and not any(s in self.inputs for s in spelled):
            return []
        starts, hits = self.in_starts, []
        for m in pattern.finditer(self.inputs):
            i = bisect_right(starts, m.start()) - 1
            if not hits or hits[-1] != i:
                hits.append(i)
        return hits


# A metadata text up to this long, of up to this many keys (torch writes 3 to 6),
# is split into its keys' values; another (only a hostile file writes one) is
# kept whole, decoded as the full parse does.
_SPLIT_METADATA_BYTES = 64 * 1024
_SPLIT_METADATA_KEYS = 32
# Whole metadata texts remembered, so a repeated one is not split again: up to
# this many bytes of them (the texts of a real model's layers differ in module
# paths and call counters, and would all be held beside the program's text).
_WHOLE_METADATA_BYTES = 32 * 1024 * 1024
_METADATA_CHUNK = 4096  # nodes looked up at C speed at a time


class _MetadataParts:
    """Each node's metadata as a record (its keys, the JSON text of each value),
    keys and value texts shared by every node and record that repeat them: nodes
    of one source line share a stack trace, the layers of a model share stack
    traces and module paths and differ in a call counter. Holding each distinct
    whole text instead took 484 MB for a 400,000-node model whose layers differ
    (tests/benchmarks/bench_lean.py's "distinct" program), beside its 834 MB of
    JSON. A record is (keys, values), or (None, (text,)) for a text kept whole."""

    __slots__ = ("of_node", "_records", "_texts")

    def __init__(self, raw: list[_RawNode], strings: _Canonical, budget: _Budget) -> None:
        split = _MetadataSplitter(strings, budget)
        whole: dict[bytes, tuple] = {}
        held = 0
        of_node: list[tuple] = []
        for start in range(0, len(raw), _METADATA_CHUNK):
            chunk = list(map(bytes, map(_METADATA_OF, raw[start:start + _METADATA_CHUNK])))
            found = list(map(whole.get, chunk))  # the repeated texts at C speed
            for j, record in enumerate(found):
                if record is None:
                    text = chunk[j]
                    record = whole.get(text)  # (a text first seen in this chunk)
                    if record is None:
                        record = split(text)
                        if held < _WHOLE_METADATA_BYTES:
                            whole[text] = record
                            held += len(text)
                    found[j] = record
            of_node += found
        budget.take(8 * len(of_node))
        self.of_node = of_node
        self._records = list(split.records)
        self._texts = list(split.texts)

    def __getitem__(self, i: int) -> tuple:
        return self.of_node[i]

    def texts(self) -> list[bytes]:
        """Every distinct value text (and every text kept whole)."""
        return self._texts

    def values(self) -> int:
        """The JSON values decoding them all makes (archive.json_value_count's count
        of each distinct value text, one object per record; a value text that is
        a string is one: stack traces and module paths are full of commas)."""
        return sum(map(_value_count, self._texts)) + len(self._records)


def _value_count(text: bytes) -> int:
    """_count of one JSON value's text: 1 for a string (its commas are its own)."""
    return 1 if text[:1] == b'"' else _count(text)


class _MetadataSplitter:
    """A metadata text -> its shared record (_MetadataParts), each new key, key
    tuple, value text and record taken from the budget at what it costs: the
    parts cost up to ~15x their text (`"k":0,` -> a key and a value text, ~100
    bytes), so they are charged as they are made, not after."""

    __slots__ = ("strings", "budget", "keys", "texts", "records")

    def __init__(self, strings: _Canonical, budget: _Budget) -> None:
        self.strings, self.budget = strings, budget  # keys interned with the program's
        self.keys, self.texts, self.records = _Canonical(), _Canonical(), _Canonical()

    def __call__(self, text: bytes) -> tuple:
        parts = None
        if len(text) <= _SPLIT_METADATA_BYTES:
            try:
                parts = _OBJECT.decode(text)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                pass
        if parts is None or len(parts) > _SPLIT_METADATA_KEYS:
            record: tuple = (None, (self._text(text),))
        else:
            record = (self._keys(tuple(parts)), tuple(map(self._text, map(bytes, parts.values()))))
        if record not in self.records:
            self.budget.take(72 + 8 * len(record[1]))  # its two tuples
        return self.records[record]

    def _text(self, text: bytes) -> bytes:
        if text not in self.texts:
            # the bytes object and its slot (and what its strings widen to)
            self.budget.take(41 + len(text) + _widening(text))
        return self.texts[text]

    def _keys(self, names: tuple[str, ...]) -> tuple[str, ...]:
        if names not in self.keys:
            strings = self.strings
            self.budget.take(56 + 8 * len(names)
                             + sum(80 + 4 * len(k) for k in names if k not in strings))
            names = tuple(map(strings.__getitem__, names))
        return self.keys[names]


def _joined(texts: list[_Raw]) -> tuple[bytes, array]:
    """The texts joined, a NUL after each, and where each starts (one more
    start: the end)."""
    return b"\0".join(texts + [b""]), array("q", accumulate(map((1).__add__, map(len, texts)),
                                                             initial=0))


def _compact_records(raw: dict[str, _Raw], budget: _Budget) -> tuple[dict[str, bytes], int]:
    """(name -> the record's text, one bytes per distinct text; values they make)."""
    distinct = _Canonical()
    out = dict(zip(raw, map(distinct.__getitem__, map(bytes, raw.values()))))
    budget.take(sum(map(len, distinct)) + sum(map(_widening, distinct)))
    return out, sum(_count(t) for t in distinct) + 2 * len(out)  # + each key and slot


class _Decoded(dict):
    """A JSON text -> its value, decoded on the first ask (`decoded[text]`)."""

    def __missing__(self, text: bytes) -> Any:
        self[text] = value = _loads(text)
        return value


class _Interned:
    """One decoded value per distinct text, for one program: metadata and
    tensor records repeat across nodes and layers."""

    __slots__ = ("metadata", "values", "tensors", "strings", "tensor_args")

    def __init__(self) -> None:
        self.metadata: dict[tuple, dict[str, str]] = {}  # by _MetadataParts records
        self.values = _Decoded()  # a metadata value's text -> its value
        self.tensors: dict[bytes, TensorMeta] = {}
        self.strings = _Canonical()
        # a made node's tensor arguments, one per value (parser._argument)
        self.tensor_args: dict[str, Argument] = {}


def _lean_graph(small: dict[str, Any], columns: _NodeColumns, records: dict[str, bytes],
                where: str, interned: _Interned, texts: set[str]) -> Graph:
    """The main graph; `texts` gets the symbolic texts of its tensor records."""
    gw = f"{where}, graph main"
    # the graph without its nodes and tensor records, through the full parser
    counter = [len(columns)]
    most = HEAVY_NODE_FACTOR * full.MAX_NODES  # its nodes passed _check_light_nodes
    graph = full.parse_graph(small, "", 0, counter, where, limit=most)
    values = LazyTensorValues(records, gw, interned)
    graph.tensor_values = values  # type: ignore[assignment]  # a read-only Mapping
    # a symbolic size: its hint and its symbols count now (each distinct text
    # once, in the records' order: records repeat across layers)
    symbolic = [t for t in dict.fromkeys(records.values()) if _may_hold(t, b"as_expr")]
    if symbolic:
        # each text's first key: the reversed pairs, so the first key is set last
        first_key = dict(zip(reversed(records.values()), reversed(records.keys())))
        for text in symbolic:
            full.collect_size_hints(_loads(text), graph.size_hints)
            full.add_symbol_texts(values[first_key[text]], texts)
    nodes = LazyNodes(columns, graph, gw, interned)
    graph.nodes = nodes  # type: ignore[assignment]  # a read-only Sequence
    # Nodes whose arguments open enough brackets to nest past the limit are made
    # now, so a too-deep argument is refused when the archive opens, as the full
    # parse refuses it, not later in whichever view first asks for that node.
    for i in columns.deep(full.MAX_ARGUMENT_DEPTH):
        nodes[i]
    # Nodes holding a control-flow subgraph are made now: their subgraphs
    # belong to the program's graph tree (and count against the node limit).
    for i in columns.inputs_holding(_SUBGRAPH, b'"as_graph"', b"\\"):  # (memchr speed)
        node = nodes[i]
        for inp in node.inputs:
            if inp.arg.kind == "as_graph" and isinstance(inp.arg.value, dict):
                sub_name = str(inp.arg.value.get("name", f"subgraph_{len(graph.subgraphs)}"))
                graph.subgraphs.append(full.parse_graph(
                    inp.arg.value.get("graph"), sub_name, 1, counter, where,
                    interned.strings, most))
    return graph


# a subgraph argument's key, spelled out or hidden behind a `\u` escape
_SUBGRAPH = re.compile(rb'"as_graph"|\\u')


def _opened(inputs: bytes, outputs: bytes) -> int:
    """The brackets a node's argument texts open: the deepest they can nest."""
    return inputs.count(b"[") + inputs.count(b"{") + outputs.count(b"[") + outputs.count(b"{")


def _may_hold(text: bytes, key: bytes) -> bool:
    """Whether a record's text may hold `key`: spelled out, or hidden behind
    a `\\u` escape (JSON lets any key character be escaped)."""
    return key in text or b"\\u" in text


def _symbol_texts(graph: Graph, texts: set[str]) -> set[str]:
    """The symbolic texts the range constraints are kept by (parser._used_ranges):
    `texts` (the main graph's tensor records, collected by _lean_graph), its
    symbolic values, and everything of its subgraphs (parsed in full)."""
    for g in graph.walk():
        if g is not graph:
            for meta in g.tensor_values.values():
                full.add_symbol_texts(meta, texts)
        for values in (g.sym_int_values, g.sym_bool_values, g.sym_float_values):
            texts.update(v for v in values.values() if isinstance(v, str))
    return texts


_T = TypeVar("_T")


class LazyNodes(Sequence[Node]):
    """A graph's nodes, each made from its columns on first access (then kept)."""

    __slots__ = ("_cols", "_made", "_graph", "_where", "_interned", "_hits", "_lock", "_memo")

    def __init__(self, columns: _NodeColumns, graph: Graph, where: str,
                 interned: _Interned) -> None:
        self._hits: dict[bytes, list[int]] = {}
        self._memo: dict[str, Any] = {}
        # The window's tasks and the audit read one program from several
        # threads: a node is made once, or the listing's node -> line map
        # (by identity) would miss the copy another thread made.
        self._lock = threading.Lock()
        self._cols = columns
        self._made: list[Node | None] = [None] * len(columns)
        self._graph = graph
        self._where = where
        self._interned = interned

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._made)))]
        node = self._made[index]
        return node if node is not None else self._make(index % len(self._made))

    def __iter__(self) -> Iterator[Node]:
        made = self._made
        for i in range(len(made)):
            node = made[i]
            yield node if node is not None else self._make(i)

    def mentioning(self, words: Iterable[str]) -> Iterator[Node]:
        """The nodes whose argument text may hold one of `words` (argument kinds,
        argument names): a superset found in the compact texts, so a rule that
        looks at a few nodes of 400,000 makes only those (the audit)."""
        alternatives = b"|".join(re.escape(w.encode()) for w in sorted(words))
        hits = self._hits.get(alternatives)
        if hits is None:  # one search of all the input texts; or an escaped key
            hits = self._hits[alternatives] = self._cols.inputs_holding(
                re.compile(alternatives + rb"|\\u"))
        return (self[i] for i in hits)

    def may_name(self, words: Iterable[str]) -> bool:
        """Whether a node may be named, or name an output, one of `words`: a
        superset found in the names and the outputs' texts, so the listing's
        check for names FX may not print makes no node (it runs before the
        first line is written)."""
        words = set(words)
        if not words.isdisjoint([n for n in self._cols.names if type(n) is str]):
            return True
        # one pass over all the texts: cut at every quote, then a set test. The
        # pieces are every string's text (and the punctuation between strings,
        # which spells no name); an escaped quote only cuts a string further,
        # and a `\\u` escape may spell any word.
        text = self._cols.outputs
        if b"\\" in text and b"\\u" in text:  # the first at memchr speed
            return True
        return not {w.encode() for w in words}.isdisjoint(text.split(b'"'))

    def targets(self) -> list[str]:
        """Each node's target, without making the nodes."""
        return list(self._cols.targets)

    def names_in_file(self) -> list[str | None]:
        """Each node's `name` as the file holds it (None: none), without making the
        nodes (the audit's code-in-names rule)."""
        return list(self._cols.names)

    def suspects(self, arguments: re.Pattern[bytes],
                 metadata: Callable[[str | None, bytes], bool]) -> list[int]:
        """The nodes whose argument texts (inputs or outputs) match `arguments`, or
        one of whose metadata values `metadata(key, value text)` says is suspect
        (key None: a metadata text kept whole): one search of the joined texts,
        one call per distinct metadata record's value, no node made."""
        cols = self._cols
        hits = set(cols.inputs_holding(arguments))
        starts = cols.out_starts
        for m in arguments.finditer(cols.outputs):
            hits.add(bisect_right(starts, m.start()) - 1)
        of_node = cols.meta.of_node
        bad = set()
        for record in set(of_node):
            keys, texts = record
            if any(metadata(k, t) for k, t in zip(keys or (None,) * len(texts), texts)):
                bad.add(record)
        if bad:
            hits.update(i for i, record in enumerate(of_node) if record in bad)
        return sorted(hits)

    def memo(self, key: str, make: Callable[[LazyNodes], _T]) -> _T:
        """`make(self)`, made once per key: what a reader derives from every node
        whatever it asks next (the audit's columns: core/audit.py). Kept here, so
        it lives as long as the nodes and no longer."""
        value = self._memo.get(key)
        if value is None:  # two threads may both make it: the first kept wins
            value = self._memo.setdefault(key, make(self))
        return value

    def made_count(self) -> int:
        """How many nodes have been made so far (tests, benchmarks)."""
        return sum(n is not None for n in self._made)

    def _make(self, i: int) -> Node:
        where = f"{self._where}, node #{i}"
        try:
            with self._lock:
                node = self._made[i]
                return node if node is not None else self._decode(i, where)
        except LeanUnsupported as exc:  # valid to msgspec's scan, not to orjson
            raise ArchiveError(f"{where} is not valid JSON ({exc})") from None

    def _decode(self, i: int, where: str) -> Node:
        cols = self._cols
        interned = self._interned
        record = cols.meta[i]
        metadata = interned.metadata.get(record)
        if metadata is None:
            keys, texts = record
            if keys is None:  # kept whole
                metadata = full.node_metadata(_loads(texts[0]), where)
            else:
                metadata = full.node_metadata(
                    dict(zip(keys, map(interned.values.__getitem__, texts))), where)
            strings = interned.strings
            for k, v in metadata.items():
                metadata[k] = strings.setdefault(v, v)
            interned.metadata[record] = metadata
        inputs, outputs = cols.input(i), cols.output(i)
        record = {"target": cols.targets[i], "name": cols.names[i], "inputs": _loads(inputs),
                  "outputs": _loads(outputs), "is_hop_single_tensor_return": cols.hops[i]}
        # A value nests no deeper than the brackets its text opens: most nodes
        # open a dozen, and then the per-argument depth walk is skipped.
        node = full.parse_node(record, i, self._graph, where, metadata,
                          shallow=_opened(inputs, outputs) <= full.MAX_ARGUMENT_DEPTH,
                          shared=interned.tensor_args)
        self._made[i] = node
        return node


class LazyTensorValues(Mapping[str, TensorMeta]):
    """A graph's tensor records by value name, each decoded on first access;
    records with the same text share one TensorMeta (nothing mutates them)."""

    __slots__ = ("_raw", "_where", "_interned")

    def __init__(self, raw: dict[str, bytes], where: str, interned: _Interned) -> None:
        self._raw = raw
        self._where = where
        self._interned = interned

    def __len__(self) -> int:
        return len(self._raw)

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __getitem__(self, key: str) -> TensorMeta:
        text = self._raw[key]
        cache = self._interned.tensors
        meta = cache.get(text)
        if meta is None:
            where = f"{self._where}, tensor {key}"
            try:
                meta = full.parse_tensor_meta(_loads(text), where)
            except LeanUnsupported as exc:
                raise ArchiveError(f"{where} is not valid JSON ({exc})") from None
            cache[text] = meta
        return meta

    def get(self, key: str, default: Any = None) -> Any:  # the hot path of the listing
        return self[key] if key in self._raw else default

    def symbolic(self) -> list[str]:
        """One key per distinct record text that holds a symbolic size (decoded at
        parse already: see _lean_graph), without decoding the others."""
        first: dict[bytes, str] = {}
        for key, text in self._raw.items():
            if text not in first and _may_hold(text, b"as_expr"):
                first[text] = key
        return list(first.values())


__all__ = ["LazyNodes", "LazyTensorValues", "LeanUnsupported", "parse_program_lean"]
