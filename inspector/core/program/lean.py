"""The lean parse of a program's JSON: the same model, without the whole document.

parser.py builds the model from a document orjson parsed whole: for a
100,000-node program (200 MB) that tree alone is ~1.3 GB and 1.1 s, and the
model built from it another 3 s. Here msgspec (measured against pysimdjson's
lazy proxies and a bare orjson.loads in tests/benchmarks/lean_parsers.py: the
fastest and leanest first screen) scans the text once and keeps each node as a
small struct of byte spans (`msgspec.Raw`, views into the one bytes object):

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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import msgspec
import orjson

from inspector.core.errors import ArchiveError
from inspector.core.program import parser as full
from inspector.core.program.model import Graph, Node, Program, TensorMeta

_Raw = msgspec.Raw
_NO_RAW = msgspec.Raw()


class LeanUnsupported(Exception):
    """The text is not what the lean parse expects: parse it the full way."""


class _RawNode(msgspec.Struct, array_like=False, gc=False):
    """One node's fields as spans of the text (gc=False: holds no containers
    the cyclic collector must scan; 100k of them would slow every collection)."""

    target: str
    name: Any = None
    inputs: _Raw = _NO_RAW
    outputs: _Raw = _NO_RAW
    metadata: _Raw = _NO_RAW
    is_hop_single_tensor_return: Any = None


class _RawGraph(msgspec.Struct, gc=False):
    """A graph: its nodes as structs of spans, its tensor records as spans,
    the rest (small) as spans for parser.py. Fields parser.py does not read
    are skipped."""

    nodes: list[_RawNode] | None = None
    tensor_values: dict[str, _Raw] | None = None
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


_SMALL_GRAPH_FIELDS = ("inputs", "outputs", "sym_int_values", "sym_bool_values",
                       "sym_float_values", "custom_obj_values", "is_single_tensor_return")
_OBJECT = msgspec.json.Decoder(dict[str, _Raw])
_GRAPH_MODULE = msgspec.json.Decoder(_RawGraphModule)


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
# The text is held only while it is scanned: nodes and tensor records are then
# copied out as compact bytes (metadata and records once per distinct text), and
# the text is dropped. What stays decoded grows with the JSON values the model
# makes from those copies (node arguments, distinct metadata and records, the
# small parts), counted before any is made as archive.json_value_count counts:
# 100-120 bytes per value for the densest hostile text, ~100 all-in (model and
# listing) for real programs. The genuine 400,000-node program (tests/benchmarks/
# bench_lean.py: 805 MB of JSON, 33.6M values by that count of the whole text)
# makes 11.6M (2.9M per 100k nodes): its repeated stack traces and tensor
# records cost nothing more after the first, which is how it is told from a
# bomb of the same size, whose values are all distinct or all arguments
# (tests/security: 64 MB of `{"a":1},` counts 16.8M and is refused).
# 12M values keeps the densest text under ~1.45 GB; text plus copies stays
# under MAX_SCAN_BYTES, the peak while scanning.
MAX_MODEL_VALUES = 12_000_000
MAX_SCAN_BYTES = 1_400 * 1024 * 1024
# Tensor records per graph: torch writes one per tensor value a node or input
# defines (100,595 for the 100k-node program), so twice the node limit is more
# than any program has; records cost little here (one copy per distinct text),
# but each is a key the listing, search and audit may look up.
MAX_TENSOR_RECORDS = 2 * full.MAX_NODES


def parse_program_lean(data: bytes, name: str, held: int = 0) -> tuple[Program, int]:
    """The program of `data` (a program's JSON text) and the JSON values its
    model may make (MAX_MODEL_VALUES; `held`: those of programs already open).
    Nodes and tensor records are kept as compact copies of their text until
    asked for. Raises LeanUnsupported for text the full parse must judge,
    ArchiveError as parser.py does and for a program over the limits."""
    where = f"program {name!r}"
    top = _object(data, where)
    gm_raw = top.get("graph_module")
    if gm_raw is None:
        raise LeanUnsupported(where)
    try:  # the text is scanned twice: for its top level, and this
        gm = _GRAPH_MODULE.decode(gm_raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
        raise LeanUnsupported(f"{where}: {exc}") from None
    g = gm.graph
    full.check_node_count(len(g.nodes or ()), where)
    if len(g.tensor_values or ()) > MAX_TENSOR_RECORDS:
        raise ArchiveError(f"{where} has {len(g.tensor_values or ()):,} tensor records, over the "
                           f"limit of {MAX_TENSOR_RECORDS:,} per graph")
    interned = _Interned()
    small_top = {k: bytes(v) for k, v in top.items() if k != "graph_module"}
    small_gm = {k: bytes(getattr(gm, k)) for k in ("signature", "module_call_graph", "metadata")
                if len(getattr(gm, k))}
    small_graph = {k: bytes(getattr(g, k)) for k in _SMALL_GRAPH_FIELDS if len(getattr(g, k))}
    budget = _Budget(where, MAX_SCAN_BYTES - len(data))
    nodes, node_values = _compact_nodes(g.nodes or [], interned, budget)
    records, record_values = _compact_records(g.tensor_values or {}, interned, budget)
    values = node_values + record_values + sum(
        _count(t) for part in (small_top, small_gm, small_graph) for t in part.values())
    del top, gm, g  # the spans of the text: it is freed when the caller drops it
    if values + held > MAX_MODEL_VALUES:
        also = f" (plus {held:,} in programs already open)" if held else ""
        raise ArchiveError(f"{where} would make about {values:,} JSON values{also}, over the "
                           f"limit of {MAX_MODEL_VALUES:,} values in memory at once")
    texts: set[str] = set()
    graph = _lean_graph({k: _loads(v) for k, v in small_graph.items()}, nodes, records,
                        where, interned, texts)
    # The small parts (signature, ranges, versions, module call graph) as the
    # full parse reads them: a document with the graph left out.
    doc = {k: _loads(v) for k, v in small_top.items()}
    gm_doc = {k: _loads(v) for k, v in small_gm.items()}
    program = full.assemble_program(doc, gm_doc, graph, name, where, _symbol_texts(graph, texts))
    return program, values


def _count(text: bytes) -> int:
    # archive.json_value_count, without importing the archive (it imports us)
    return text.count(b",") + text.count(b"{") + text.count(b"[") + 1


# A node's compact form: (target, name, inputs text, outputs text, metadata text,
# is_hop_single_tensor_return); a tuple, not an object: 400k of them.
_TARGET, _NAME, _INPUTS, _OUTPUTS, _META, _HOP = range(6)


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


def _compact_nodes(raw_nodes: list[_RawNode], interned: _Interned, budget: _Budget
                   ) -> tuple[list[tuple], int]:
    """(nodes, the values their arguments and distinct metadata make)."""
    texts, strings = interned.texts, interned.strings
    out: list[tuple] = []
    values = 0
    for r in raw_nodes:
        inputs = bytes(r.inputs) if len(r.inputs) else b""
        outputs = bytes(r.outputs) if len(r.outputs) else b""
        meta = bytes(r.metadata) if len(r.metadata) else b""
        shared = texts.get(meta)
        if shared is None:
            texts[meta] = shared = meta
            values += _count(meta)
            budget.take(len(meta))
        values += _count(inputs) + _count(outputs) + 6  # the node, its lists
        budget.take(len(inputs) + len(outputs) + 200)  # + the tuple and its bytes objects
        target = r.target
        out.append((strings.setdefault(target, target), r.name, inputs, outputs, shared,
                    r.is_hop_single_tensor_return))
    return out, values


def _compact_records(raw: dict[str, _Raw], interned: _Interned, budget: _Budget
                     ) -> tuple[dict[str, bytes], int]:
    """(name -> the record's text, one bytes per distinct text; values they make)."""
    texts = interned.texts
    out: dict[str, bytes] = {}
    values = 0
    for key, span in raw.items():
        text = bytes(span)
        shared = texts.get(text)
        if shared is None:
            texts[text] = shared = text
            values += _count(text)
            budget.take(len(text))
        out[key] = shared
        values += 2  # its key and slot
    return out, values


class _Interned:
    """One copy of each distinct text, and one decoded value per distinct text,
    for one program: metadata and tensor records repeat across nodes and layers."""

    __slots__ = ("texts", "metadata", "tensors", "strings")

    def __init__(self) -> None:
        self.texts: dict[bytes, bytes] = {}
        self.metadata: dict[bytes, dict[str, str]] = {}
        self.tensors: dict[bytes, TensorMeta] = {}
        self.strings: dict[str, str] = {}


def _lean_graph(small: dict[str, Any], nodes_raw: list[tuple], records: dict[str, bytes],
                where: str, interned: _Interned, texts: set[str]) -> Graph:
    """The main graph; `texts` gets the symbolic texts of its tensor records."""
    gw = f"{where}, graph main"
    # the graph without its nodes and tensor records, through the full parser
    counter = [len(nodes_raw)]
    graph = full._parse_graph(small, "", 0, counter, where)
    values = LazyTensorValues(records, gw, interned)
    graph.tensor_values = values  # type: ignore[assignment]  # a read-only Mapping
    seen: set[bytes] = set()
    for key, text in records.items():
        # a symbolic size: its hint and its symbols count now (the same text,
        # the same ones: records repeat across layers)
        if text not in seen and _may_hold(text, b"as_expr"):
            seen.add(text)
            full._collect_hints(_loads(text), graph.size_hints)
            full.add_symbol_texts(values[key], texts)
    nodes = LazyNodes(nodes_raw, graph, gw, interned)
    graph.nodes = nodes  # type: ignore[assignment]  # a read-only Sequence
    # Nodes whose arguments open enough brackets to nest past the limit are made
    # now, so a too-deep argument is refused when the archive opens, as the full
    # parse refuses it, not later in whichever view first asks for that node.
    for i, raw in enumerate(nodes_raw):
        if _opened(raw[_INPUTS], raw[_OUTPUTS]) > full.MAX_ARGUMENT_DEPTH:
            nodes[i]
    # Nodes holding a control-flow subgraph are made now: their subgraphs
    # belong to the program's graph tree (and count against the node limit).
    for i, raw in enumerate(nodes_raw):
        if raw[_INPUTS] and _may_hold(raw[_INPUTS], b'"as_graph"'):
            node = nodes[i]
            for inp in node.inputs:
                if inp.arg.kind == "as_graph" and isinstance(inp.arg.value, dict):
                    sub_name = str(inp.arg.value.get("name", f"subgraph_{len(graph.subgraphs)}"))
                    graph.subgraphs.append(full._parse_graph(
                        inp.arg.value.get("graph"), sub_name, 1, counter, where,
                        interned.strings))
    return graph


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
_QUOTED_WORD = re.compile(rb'"([A-Za-z_][A-Za-z0-9_]*)"')


class LazyNodes(Sequence[Node]):
    """A graph's nodes, each made from its span on first access (then kept)."""

    __slots__ = ("_raw", "_made", "_graph", "_where", "_interned", "_hits", "_lock", "_memo")

    def __init__(self, raw: list[tuple], graph: Graph, where: str, interned: _Interned) -> None:
        self._hits: dict[bytes, list[int]] = {}
        self._memo: dict[str, Any] = {}
        # The window's tasks and the audit read one program from several
        # threads: a node is made once, or the listing's node -> line map
        # (by identity) would miss the copy another thread made.
        self._lock = threading.Lock()
        self._raw = raw
        self._made: list[Node | None] = [None] * len(raw)
        self._graph = graph
        self._where = where
        self._interned = interned

    def __len__(self) -> int:
        return len(self._raw)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._raw)))]
        node = self._made[index]
        return node if node is not None else self._make(index % len(self._raw))

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
        if hits is None:
            search = re.compile(alternatives + rb"|\\u").search  # or an escaped key
            hits = self._hits[alternatives] = [
                i for i, raw in enumerate(self._raw) if raw[_INPUTS] and search(raw[_INPUTS])]
        return (self[i] for i in hits)

    def may_name(self, words: Iterable[str]) -> bool:
        """Whether a node may be named, or name an output, one of `words`: a
        superset found in the names and the outputs' texts, so the listing's
        check for names FX may not print makes no node (it runs before the
        first line is written)."""
        words = set(words)
        if any(raw[_NAME] in words for raw in self._raw if type(raw[_NAME]) is str):
            return True
        # one pass over all the texts: every quoted word, then a set test
        # (~10x faster than a search of the alternatives in each text)
        text = b"\0".join([raw[_OUTPUTS] for raw in self._raw])
        if b"\\u" in text:  # an escaped string may spell any word
            return True
        return not {w.encode() for w in words}.isdisjoint(_QUOTED_WORD.findall(text))

    def targets(self) -> list[str]:
        """Each node's target, without making the nodes."""
        return [raw[_TARGET] for raw in self._raw]

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
        raw = self._raw[i]
        interned = self._interned
        meta_text = raw[_META]
        metadata = interned.metadata.get(meta_text)
        if metadata is None:
            metadata = full.node_metadata(_loads(meta_text), where)
            strings = interned.strings
            for k, v in metadata.items():
                metadata[k] = strings.setdefault(v, v)
            interned.metadata[meta_text] = metadata
        inputs, outputs = raw[_INPUTS], raw[_OUTPUTS]
        record = {"target": raw[_TARGET], "name": raw[_NAME], "inputs": _loads(inputs),
                  "outputs": _loads(outputs), "is_hop_single_tensor_return": raw[_HOP]}
        # A value nests no deeper than the brackets its text opens: most nodes
        # open a dozen, and then the per-argument depth walk is skipped.
        node = full._node(record, i, self._graph, where, metadata,
                          shallow=_opened(inputs, outputs) <= full.MAX_ARGUMENT_DEPTH)
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
                meta = full._tensor_meta(_loads(text), where)
            except LeanUnsupported as exc:
                raise ArchiveError(f"{where} is not valid JSON ({exc})") from None
            cache[text] = meta
        return meta

    def get(self, key: str, default: Any = None) -> Any:  # the hot path of the listing
        return self[key] if key in self._raw else default


__all__ = ["LazyNodes", "LazyTensorValues", "LeanUnsupported", "parse_program_lean"]
