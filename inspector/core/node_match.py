"""Match the nodes of two programs and compare each matched pair's statement.

A text diff of two listings drowns in renamed values: insert one node and FX
renames every later node of the same op (`add_3` becomes `add_4`). So nodes are
matched on evidence, strongest first, and each step only pairs what earlier
steps left over:

1. the same name and the same origin: target, module path and stack trace;
2. renamed nodes: the same origin, in order, inside the gaps between the nodes
   step 1 matched (so a cascade of renames lines up again);
3. the same name, target and module path (the stack trace changed: the source
   was edited, or exported from another checkout);
4. the same target and module path, in order, inside the remaining gaps.

What is left is removed (A) or added (B). Name-first alone would pair A's
`add_4` with B's `add_4` (which is A's `add_3`) after an insertion; origin
first alone would miss the nodes whose stack trace changed.

A matched pair is then compared as the listing states it: target, arguments
with every value name mapped through the match (so a rename is no change), and
the output types. Metadata (stack trace, module, recorded output device) is
compared apart: a metadata-only change is not a changed statement.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field

from inspector.core.frames import module_path
from inspector.core.program import (
    PLAIN_KINDS,
    REFERENCE_KEYS,
    ArgKind,
    Graph,
    InputSpec,
    Node,
    OutputSpec,
    Program,
)
from inspector.core.summary import value_type

SAME, CHANGED, ADDED, REMOVED = "same", "changed", "added", "removed"
_TENSOR = ArgKind.TENSOR

# Statement fields of a node pair.
TARGET, ARGS, TYPE = "target", "args", "type"
# Metadata fields (a pair differing only here is a metadata-only change).
STACK_TRACE, MODULE, DEVICE = "stack_trace", "module", "device"

# Gaps up to this many key comparisons (len(a) * len(b)) are aligned with
# difflib's longest-matching-block search, which follows context; larger gaps
# (two unrelated 100k-node programs) pair equal keys in order, in linear time,
# because difflib on long runs of repeated keys approaches quadratic time.
_ALIGN_LIMIT = 4_000_000


@dataclass(slots=True, eq=False)
class NodePair:
    a: Node
    b: Node
    fields: tuple[str, ...] = ()  # statement fields that differ (TARGET, ARGS, TYPE)
    meta: tuple[str, ...] = ()  # metadata that differs (STACK_TRACE, MODULE, DEVICE)

    @property
    def status(self) -> str:
        return CHANGED if self.fields else SAME


@dataclass(eq=False)
class GraphMatch:
    """The nodes of one graph of A against the graph at the same path in B."""

    path: str  # "" for the top graph, else "cond_true_0" or "outer/inner"
    a: Graph | None
    b: Graph | None
    pairs: list[NodePair] = field(default_factory=list)  # in A's order
    removed: list[Node] = field(default_factory=list)
    added: list[Node] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class SpecPair:
    """A graph input or output of A matched with B's (signature entries)."""

    a: InputSpec | OutputSpec
    b: InputSpec | OutputSpec
    fields: tuple[str, ...] = ()  # name, type, target, value, persistent
    meta: tuple[str, ...] = ()  # DEVICE: the input's recorded device


@dataclass(eq=False)
class ProgramMatch:
    graphs: list[GraphMatch]
    inputs: list[SpecPair]
    inputs_removed: list[InputSpec]
    inputs_added: list[InputSpec]
    outputs: list[SpecPair]
    outputs_removed: list[OutputSpec]
    outputs_added: list[OutputSpec]

    def pairs(self) -> Iterator[NodePair]:
        for g in self.graphs:
            yield from g.pairs

    def pair_maps(self) -> tuple[dict[int, NodePair], dict[int, NodePair]]:
        """{id(node of A): pair}, {id(node of B): pair}."""
        by_a: dict[int, NodePair] = {}
        by_b: dict[int, NodePair] = {}
        for pair in self.pairs():
            by_a[id(pair.a)] = pair
            by_b[id(pair.b)] = pair
        return by_a, by_b


def qualified_name(node: Node, path: str) -> str:
    """A node's name, prefixed with its graph's path inside a subgraph (names
    are unique per graph only)."""
    return f"{path}/{node.name}" if path else node.name


def graph_paths(program: Program) -> dict[str, Graph]:
    """Every graph of a program by path: "" the top graph, then `a`, `a/b`..."""
    out: dict[str, Graph] = {}
    stack: list[tuple[str, Graph]] = [("", program.graph)]
    while stack:
        path, graph = stack.pop()
        if path in out:  # one name twice under one parent (a damaged file): keep both
            path = f"{path}#{len(out)}"
        out[path] = graph
        for sub in reversed(graph.subgraphs):
            stack.append((f"{path}/{sub.name}" if path else sub.name, sub))
    return out


# --- programs -----------------------------------------------------------------

def match_programs(a: Program, b: Program) -> ProgramMatch:
    """Match graphs by path, nodes per graph, signature entries; compare pairs."""
    graphs_a, graphs_b = graph_paths(a), graph_paths(b)
    graphs: list[GraphMatch] = []
    for path, ga in graphs_a.items():
        gb = graphs_b.get(path)
        gm = GraphMatch(path, ga, gb)
        if gb is None:
            gm.removed = list(ga.nodes)
        else:
            pa, pb = match_nodes(ga.nodes, gb.nodes)
            gm.pairs = [NodePair(ga.nodes[i], gb.nodes[j]) for i, j in enumerate(pa) if j >= 0]
            gm.removed = [ga.nodes[i] for i, j in enumerate(pa) if j < 0]
            gm.added = [gb.nodes[j] for j, i in enumerate(pb) if i < 0]
        graphs.append(gm)
    for path, gb in graphs_b.items():
        if path not in graphs_a:
            graphs.append(GraphMatch(path, None, gb, added=list(gb.nodes)))

    inputs, in_removed, in_added = _match_specs(a.input_specs, b.input_specs)
    outputs, out_removed, out_added = _match_specs(a.output_specs, b.output_specs)
    match = ProgramMatch(graphs, inputs, in_removed, in_added, outputs, out_removed, out_added)
    refs = _value_map(match)
    for gm in graphs:
        if gm.a is not None and gm.b is not None:
            m = refs[gm.path]
            for pair in gm.pairs:
                pair.fields, pair.meta = compare_nodes(pair.a, pair.b, gm.a, gm.b, m)
    _compare_specs(match, a.graph, b.graph, refs.get("", {}))
    return match


# --- node matching ------------------------------------------------------------

def match_nodes(a: Sequence[Node], b: Sequence[Node]) -> tuple[list[int], list[int]]:
    """Partner indexes: pa[i] is the index in b matched with a[i], or -1 (and pb
    the other way round)."""
    modules: dict[str | None, str] = {}

    def origin(n: Node) -> tuple[str, str, str | None]:
        stack = n.nn_module_stack
        path = modules.get(stack)
        if path is None:
            path = modules[stack] = module_path(stack)
        return n.target, path, n.stack_trace

    full_a = [origin(n) for n in a]
    full_b = [origin(n) for n in b]
    pa = [-1] * len(a)
    pb = [-1] * len(b)
    index_b = {n.name: j for j, n in enumerate(b)}
    # 1: same name, same origin
    for i, n in enumerate(a):
        j = index_b.get(n.name)
        if j is not None and full_a[i] == full_b[j]:
            pa[i], pb[j] = j, i
    # 2: renamed: same origin, in order, between the matches so far
    _fill_gaps(pa, pb, _ids(full_a, full_b))
    # 3: same name, target and module path (the stack trace changed)
    mid_a = [k[:2] for k in full_a]
    mid_b = [k[:2] for k in full_b]
    for i, n in enumerate(a):
        if pa[i] < 0:
            j = index_b.get(n.name)
            if j is not None and pb[j] < 0 and mid_a[i] == mid_b[j]:
                pa[i], pb[j] = j, i
    # 4: same target and module path, in order, in the remaining gaps
    _fill_gaps(pa, pb, _ids(mid_a, mid_b))
    return pa, pb


def _ids(keys_a: list[Hashable], keys_b: list[Hashable]) -> tuple[list[int], list[int]]:
    """Keys as small ints (cheap to hash and compare in the alignment)."""
    table: dict[Hashable, int] = {}
    ids_a = [table.setdefault(k, len(table)) for k in keys_a]
    ids_b = [table.setdefault(k, len(table)) for k in keys_b]
    return ids_a, ids_b


def increasing_chain(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of (i, j) pairs, sorted by i, whose j also
    increase (patience sorting): the matches that keep their order; the others
    moved."""
    pairs = sorted(pairs)
    if all(x[1] < y[1] for x, y in zip(pairs, pairs[1:])):
        return pairs  # the common case: nothing moved
    tails: list[int] = []  # j at the end of the best chain of each length
    tail_at: list[int] = []  # index into pairs of that end
    prev = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[pos] = j
            tail_at[pos] = k
        prev[k] = tail_at[pos - 1] if pos else -1
    chain: list[tuple[int, int]] = []
    k = tail_at[-1] if tail_at else -1
    while k >= 0:
        chain.append(pairs[k])
        k = prev[k]
    chain.reverse()
    return chain


def _fill_gaps(pa: list[int], pb: list[int], keys: tuple[list[int], list[int]]) -> None:
    """Pair unmatched nodes with equal keys inside each gap between consecutive
    order-keeping matches."""
    keys_a, keys_b = keys
    if -1 not in pa or -1 not in pb:
        return  # one side is all matched: no gap holds nodes of both
    chain = increasing_chain([(i, j) for i, j in enumerate(pa) if j >= 0])
    bounds = [(-1, -1), *chain, (len(pa), len(pb))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:]):
        if i1 - i0 <= 1 or j1 - j0 <= 1:
            continue
        gap_a = [i for i in range(i0 + 1, i1) if pa[i] < 0]
        gap_b = [j for j in range(j0 + 1, j1) if pb[j] < 0]
        if not gap_a or not gap_b:
            continue
        for x, y in align_keys([keys_a[i] for i in gap_a], [keys_b[j] for j in gap_b]):
            i, j = gap_a[x], gap_b[y]
            pa[i], pb[j] = j, i


def align_keys(ka: Sequence[Hashable], kb: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Index pairs (x, y) with ka[x] == kb[y], both increasing when small enough
    to align with difflib, else each key's occurrences paired in order."""
    if len(ka) * len(kb) <= _ALIGN_LIMIT:
        sm = difflib.SequenceMatcher(None, ka, kb, autojunk=False)
        return [(x + k, y + k) for x, y, size in sm.get_matching_blocks() for k in range(size)]
    waiting: dict[Hashable, list[int]] = defaultdict(list)
    for y in range(len(kb) - 1, -1, -1):
        waiting[kb[y]].append(y)
    out = []
    for x, key in enumerate(ka):
        ys = waiting.get(key)
        if ys:
            out.append((x, ys.pop()))
    return out


# --- value names through the match ---------------------------------------------

# A value of A whose defining node was removed: never equal to a name of B.
_UNMATCHED = "\x00unmatched"


def _value_map(match: ProgramMatch) -> dict[str, dict[str, str]]:
    """Per graph path: {value name in A: its name in B (or _UNMATCHED)}."""
    refs: dict[str, dict[str, str]] = {}
    for gm in match.graphs:
        if gm.a is None:
            continue
        m: dict[str, str] = {}
        for node in gm.removed:
            for name in node.output_names():
                m[name] = _UNMATCHED
        for arg in gm.a.inputs:
            for name in arg.tensor_names():
                m[name] = _UNMATCHED
        if gm.b is not None:
            for pair in gm.pairs:
                oa, ob = pair.a.outputs, pair.b.outputs
                if len(oa) == 1 and len(ob) == 1 and oa[0].kind == _TENSOR == ob[0].kind:
                    na = oa[0].name()  # the common case, kept short
                    if na is not None:
                        nb = ob[0].name()
                        m[na] = _UNMATCHED if nb is None else nb
                        continue
                outs_a, outs_b = pair.a.output_names(), pair.b.output_names()
                for k, name in enumerate(outs_a):
                    m[name] = outs_b[k] if k < len(outs_b) else _UNMATCHED
            if gm.path:  # a subgraph's inputs: by position
                names_b = [n for arg in gm.b.inputs for n in arg.tensor_names()]
                names_a = [n for arg in gm.a.inputs for n in arg.tensor_names()]
                for k, name in enumerate(names_a):
                    m[name] = names_b[k] if k < len(names_b) else _UNMATCHED
        refs[gm.path] = m
    top = refs.get("")
    if top is not None:
        for pair in match.inputs:
            top[pair.a.name] = pair.b.name
    return refs


def compare_nodes(a: Node, b: Node, ga: Graph, gb: Graph,
                  m: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(statement fields that differ, metadata that differs) of a matched pair."""
    fields: list[str] = []
    if a.target != b.target:
        fields.append(TARGET)
    if not inputs_equal(a, b, m):
        fields.append(ARGS)
    type_differs, device_differs = _outputs_differ(a, b, ga, gb)
    if type_differs:
        fields.append(TYPE)
    meta: list[str] = []
    ma, mb = a.metadata, b.metadata
    if ma.get("stack_trace") != mb.get("stack_trace"):
        meta.append(STACK_TRACE)
    if ma.get("nn_module_stack") != mb.get("nn_module_stack"):
        meta.append(MODULE)
    if device_differs:
        meta.append(DEVICE)
    return tuple(fields), tuple(meta)


def inputs_equal(a: Node, b: Node, m: dict[str, str]) -> bool:
    ia, ib = a.inputs, b.inputs
    if len(ia) != len(ib):
        return False
    for x, y in zip(ia, ib):
        if x.name != y.name or x.kind != y.kind:
            return False
        ax, ay = x.arg, y.arg
        kind = ax.kind
        if kind != ay.kind:
            return False
        vx, vy = ax.value, ay.value
        if kind == _TENSOR and type(vx) is dict and type(vy) is dict and len(vx) == 1:
            name = ax.name()
            if m.get(name, name) != ay.name() or len(vy) != 1:  # type: ignore[arg-type]
                return False
        elif kind in PLAIN_KINDS:
            if vx != vy:
                return False
        elif kind == ArgKind.GRAPH:  # the subgraph itself is compared as its own graph
            if type(vx) is not dict or type(vy) is not dict or ax.graph_name() != ay.graph_name():
                return False
        elif not _value_equal(vx, vy, m):
            return False
    return True


def _value_equal(x: object, y: object, m: dict[str, str]) -> bool:
    """Structural equality where `name`/`as_name` strings are value references,
    mapped through `m` (depth is bounded by program.MAX_ARGUMENT_DEPTH)."""
    if type(x) is not type(y):
        return False
    if type(x) is dict:
        if x.keys() != y.keys():  # type: ignore[union-attr]
            return False
        for k, v in x.items():  # type: ignore[union-attr]
            w = y[k]  # type: ignore[index]
            if k in REFERENCE_KEYS and type(v) is str:
                if m.get(v, v) != w:
                    return False
            elif not _value_equal(v, w, m):
                return False
        return True
    if type(x) is list:
        return len(x) == len(y) and all(  # type: ignore[arg-type]
            _value_equal(v, w, m) for v, w in zip(x, y))  # type: ignore[call-overload]
    return x == y


def _outputs_differ(a: Node, b: Node, ga: Graph, gb: Graph) -> tuple[bool, bool]:
    """(output types differ, recorded output devices differ)."""
    oa, ob = a.outputs, b.outputs
    if len(oa) == 1 and len(ob) == 1 and oa[0].kind == _TENSOR == ob[0].kind:
        na, nb = oa[0].name(), ob[0].name()  # the common case, kept short
        names_a = [] if na is None else [na]
        names_b = [] if nb is None else [nb]
        if len(names_a) != len(names_b):  # one of them damaged
            return True, False
    else:
        if [o.kind for o in oa] != [o.kind for o in ob]:
            return True, False
        names_a, names_b = a.output_names(), b.output_names()
        if len(names_a) != len(names_b):
            return True, False
    type_differs = device_differs = False
    tva, tvb = ga.tensor_values, gb.tensor_values
    for na, nb in zip(names_a, names_b):
        ta, tb = tva.get(na), tvb.get(nb)
        if ta is None or tb is None:
            if ta is not tb or value_type(ga, na) != value_type(gb, nb):
                type_differs = True
            continue
        if ta.dtype != tb.dtype or ta.sizes != tb.sizes or ta.layout != tb.layout:
            type_differs = True
        if ta.device != tb.device:
            device_differs = True
    return type_differs, device_differs


# --- signature ------------------------------------------------------------------

Spec = InputSpec | OutputSpec


def _spec_keys(specs: Sequence[Spec]) -> list[tuple[str, str | int]]:
    """Identity of each entry: its kind and target (a parameter's FQN, a
    mutated buffer's name), or its position among entries of its kind (user
    inputs and outputs, tokens)."""
    seen: dict[str, int] = defaultdict(int)
    keys: list[tuple[str, str | int]] = []
    for spec in specs:
        if spec.target:
            keys.append((spec.kind, spec.target))
        else:
            keys.append((spec.kind, seen[spec.kind]))
            seen[spec.kind] += 1
    return keys


def _match_specs(a: Sequence[Spec], b: Sequence[Spec]) -> tuple[list[SpecPair], list, list]:
    keys_b = {k: j for j, k in enumerate(_spec_keys(b))}
    pairs: list[SpecPair] = []
    removed: list[Spec] = []
    taken: set[int] = set()
    for spec, key in zip(a, _spec_keys(a)):
        j = keys_b.get(key)
        if j is None or j in taken:
            removed.append(spec)
        else:
            taken.add(j)
            pairs.append(SpecPair(spec, b[j]))
    added = [spec for j, spec in enumerate(b) if j not in taken]
    return pairs, removed, added


def _compare_specs(match: ProgramMatch, ga: Graph, gb: Graph, m: dict[str, str]) -> None:
    for pair in match.inputs:
        a, b = pair.a, pair.b
        fields = []
        if a.kind == "user_input" and a.name != b.name:
            fields.append("name")
        if value_type(ga, a.name) != value_type(gb, b.name):
            fields.append("type")
        if getattr(a, "persistent", None) != getattr(b, "persistent", None):
            fields.append("persistent")
        pair.fields = tuple(fields)
        ta, tb = ga.tensor_values.get(a.name), gb.tensor_values.get(b.name)
        if ta is not None and tb is not None and ta.device != tb.device:
            pair.meta = (DEVICE,)
    for pair in match.outputs:
        a, b = pair.a, pair.b
        fields = []
        if m.get(a.name, a.name) != b.name:
            fields.append("value")  # returns (or mutates) another value than before
        if value_type(ga, a.name) != value_type(gb, b.name):
            fields.append("type")
        pair.fields = tuple(fields)

