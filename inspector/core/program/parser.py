"""Parser of a serialized ExportedProgram's JSON into the model of program/model.py.

Built from the parsed JSON of `models/<name>.json` without torch: nothing from
the file is evaluated. Symbolic sizes arrive as sympy `srepr` strings; they are
parsed by symbolic.py's small grammar (never sympify) and kept as text.
Structural problems (a node that is not an object, a missing graph) raise
ArchiveError naming where they are; an unknown argument kind is kept.

The lean parse (program/lean.py) builds the same model from spans of the text,
and hands the parts it does not scan itself to this parser through its public
seam: `parse_graph` (a graph's small part), `parse_node` (one node, when asked
for), `parse_tensor_meta`, `collect_size_hints`, `node_metadata`,
`add_symbol_texts`, `assemble_program` and `check_node_count`. Nothing else of
this module is its business.
"""

from __future__ import annotations

import os

import re
from sys import intern
from typing import Any

from inspector.core.errors import ArchiveError
from inspector.core.program.model import (
    Argument,
    Device,
    Graph,
    InputSpec,
    NamedArgument,
    Node,
    OutputSpec,
    Program,
    Range,
    TensorMeta,
    decode_device,
    value_names,
)
from inspector.core.symbolic import render_expr

# Nodes per program, bounded by time: every command's work grows with them
# (the listing, the audit's rules, the report), whatever bytes each node takes,
# so bytes per node cannot tell a genuine program from a bomb here; the lean
# model (program/lean.py) bounds memory by bytes and values instead. Measured
# with minimal nodes (tests/security json-*-nodes: the most nodes per byte) at
# this limit, load 3 on 2 CPUs: audit 19.0 s, report 17.3 s, list 13.2 s of
# CPU, against a promise of 20 s per hostile file. The genuine 400,000-node
# program of tests/benchmarks/bench_lean.py is admitted (unrolled
# mixture-of-experts models, 61 layers x 256 experts, pass 150,000).
# The limit applies as such to light nodes only (program/lean.py: a real program's
# nodes make ~25 JSON values each, the cheapest hostile ones ~6-14); a program of
# heavier nodes opens up to twice as many, within the lean model's memory budget
# (MAX_MODEL_VALUES), so a real model a few nodes past a round number does not
# fall off a cliff. NODE_LIMIT_ENV raises it (e.g. PT2I_MAX_NODES=1000000), for
# this process and the jobs it starts.
NODE_LIMIT_ENV = "PT2I_MAX_NODES"


def _node_limit(default: int = 400_000) -> int:
    try:
        value = int(os.environ.get(NODE_LIMIT_ENV, default))
    except ValueError:
        return default
    return value if value > 0 else default


MAX_NODES = _node_limit()
# Control-flow subgraphs nest a few levels in practice (cond inside map inside
# while_loop...). Deeper is hostile, and the listing recurses per level.
MAX_GRAPH_NESTING = 32
# Argument values nest a few levels in real programs (a list of tensors: 3,
# nested tensor lists: 4; subgraphs are bounded by MAX_GRAPH_NESTING). The
# listing, search and window print values recursively, so a hostile value
# nested ~1000 levels would overflow Python's recursion: refuse it here.
MAX_ARGUMENT_DEPTH = 32

_KNOWN_TOP = {"graph_module", "opset_version", "range_constraints", "schema_version",
              "verifiers", "torch_version", "guards_code", "dialect"}


def parse_program(doc: Any, name: str, *, consume: bool = False) -> Program:
    """Build the model from a parsed program JSON document.

    consume=True lets the parser drop each raw node and tensor record as soon
    as it is converted, so the document and the model are not both whole in
    memory at once (a 100,000-node program peaks ~40% lower); the caller must
    not use `doc` afterwards."""
    where = f"program {name!r}"
    if not isinstance(doc, dict):
        raise ArchiveError(f"{where} is not a JSON object")
    gm = doc.get("graph_module")
    if not isinstance(gm, dict) or not isinstance(gm.get("graph"), dict):
        raise ArchiveError(f"{where} has no graph_module.graph: not a serialized ExportedProgram")
    counter = [0]
    graph = parse_graph(gm["graph"], "", 0, counter, where, {} if consume else None)
    return assemble_program(doc, gm, graph, name, where)


def assemble_program(doc: dict, gm: dict, graph: Graph, name: str, where: str,
                     symbol_texts: set[str] | None = None) -> Program:
    """The Program around its parsed graph, from the rest of the document
    (`gm`: graph_module; its `graph` is not read). program/lean.py passes the
    symbolic texts it collected without decoding every tensor record."""
    sig = gm.get("signature") or {}
    if not isinstance(sig, dict):
        raise ArchiveError(f"{where}: graph_module.signature is not an object")
    sv = doc.get("schema_version") or {}
    try:
        schema_version = (int(sv.get("major", 0)), int(sv.get("minor", 0)))
    except (TypeError, ValueError, AttributeError):
        raise ArchiveError(f"{where}: schema_version is malformed") from None
    ranges = _ranges(doc.get("range_constraints"), where)
    return Program(
        name=name,
        schema_version=schema_version,
        torch_version=_str(doc.get("torch_version", "<=2.4"), where, "torch_version"),
        opset_version={str(k): v for k, v in _dict(doc.get("opset_version"), where, "opset_version").items()},
        verifiers=[str(v) for v in _list(doc.get("verifiers"), where, "verifiers")],
        guards_code=[str(v) for v in _list(doc.get("guards_code"), where, "guards_code")],
        graph=graph,
        input_specs=[_input_spec(s, where) for s in _list(sig.get("input_specs"), where, "input_specs")],
        output_specs=[_output_spec(s, where) for s in _list(sig.get("output_specs"), where, "output_specs")],
        range_constraints=_used_ranges(ranges, _symbol_texts(graph) if symbol_texts is None and ranges
                                       else symbol_texts or set()),
        module_call_graph=[e for e in _list(gm.get("module_call_graph"), where, "module_call_graph")
                           if isinstance(e, dict)],
        metadata=_dict(gm.get("metadata"), where, "graph_module.metadata"),
        unknown_fields={k: v for k, v in doc.items() if k not in _KNOWN_TOP},
        range_keys=list(ranges),
    )


def check_node_count(count: int, where: str, limit: int | None = None) -> None:
    """`limit`: the lean parse's, for nodes it found as heavy as a real model's."""
    limit = MAX_NODES if limit is None else limit
    if count > limit:
        raise ArchiveError(f"{where} has more than {limit:,} nodes, over the limit of "
                           f"{limit:,} nodes per program (set {NODE_LIMIT_ENV}=N to "
                           "raise it)")


def parse_graph(g: Any, name: str, depth: int, counter: list[int], where: str,
                strings: dict[str, str] | None = None, limit: int | None = None) -> Graph:
    """A graph (and its control-flow subgraphs) from its JSON object, at nesting
    `depth`; `counter[0]` counts the nodes of the program so far (check_node_count
    against `limit`); `strings`: consume the raw records, one copy of each
    metadata string. program/lean.py parses the small part of a program here."""
    if depth > MAX_GRAPH_NESTING:
        raise ArchiveError(f"{where}: control-flow graphs nest deeper than the limit of "
                           f"{MAX_GRAPH_NESTING} levels")
    if not isinstance(g, dict):
        raise ArchiveError(f"{where}: graph {name or 'main'} is not an object")
    gw = f"{where}, graph {name or 'main'}"
    raw_nodes = _list(g.get("nodes"), gw, "nodes")
    counter[0] += len(raw_nodes)
    check_node_count(counter[0], where, limit)
    graph = Graph(
        name=name,
        inputs=[_argument(a, gw) for a in _list(g.get("inputs"), gw, "inputs")],
        outputs=[_argument(a, gw) for a in _list(g.get("outputs"), gw, "outputs")],
        nodes=[],
        tensor_values={},
        sym_int_values={},
        sym_bool_values={},
        sym_float_values={},
        custom_obj_values={},
        is_single_tensor_return=bool(g.get("is_single_tensor_return", False)),
        depth=depth,
    )
    raw_values = _dict(g.get("tensor_values"), gw, "tensor_values")
    for key in list(raw_values):
        meta = raw_values[key]
        graph.tensor_values[key] = parse_tensor_meta(meta, f"{gw}, tensor {key}")
        collect_size_hints(meta, graph.size_hints)
        if strings is not None:
            raw_values[key] = None  # consumed: free the raw record now
    for key, val in _dict(g.get("sym_int_values"), gw, "sym_int_values").items():
        graph.sym_int_values[key] = _sym(val, "as_int", f"{gw}, symint {key}")
    for key, val in _dict(g.get("sym_bool_values"), gw, "sym_bool_values").items():
        graph.sym_bool_values[key] = _sym(val, "as_bool", f"{gw}, symbool {key}")
    for key, val in _dict(g.get("sym_float_values"), gw, "sym_float_values").items():
        graph.sym_float_values[key] = _sym(val, "as_float", f"{gw}, symfloat {key}")
    for key, val in _dict(g.get("custom_obj_values"), gw, "custom_obj_values").items():
        graph.custom_obj_values[key] = str(val.get("class_fqn", "")) if isinstance(val, dict) else ""

    for i, raw in enumerate(raw_nodes):
        node = parse_node(raw, i, graph, f"{gw}, node #{i}")
        graph.nodes.append(node)
        if strings is not None:
            raw_nodes[i] = None  # consumed: free the raw node now
            # one copy of each metadata string: nodes of one source line share
            # their stack trace and module stack, and big models repeat them
            md = node.metadata
            for k, v in md.items():
                md[k] = strings.setdefault(v, v)
        for inp in node.inputs:
            if inp.arg.kind == "as_graph" and isinstance(inp.arg.value, dict):
                sub_name = str(inp.arg.value.get("name", f"subgraph_{len(graph.subgraphs)}"))
                graph.subgraphs.append(
                    parse_graph(inp.arg.value.get("graph"), sub_name, depth + 1, counter, where,
                                 strings, limit))
    return graph


def parse_node(raw: Any, index: int, graph: Graph, where: str,
               metadata: dict[str, str] | None = None, shallow: bool = False,
               shared: dict[str, Argument] | None = None) -> Node:
    """A node from its JSON object. program/lean.py passes `metadata` already
    decoded, shallow=True where the node's text has too few brackets for any
    argument to nest past MAX_ARGUMENT_DEPTH (the check is then skipped), and
    `shared`, its program's tensor arguments by name: it makes nodes one at a
    time, each from its own text, and a value's producer and users then hold
    one Argument (frozen; nothing mutates its value), not a copy each (they
    were a third of a made node's bytes); argument names are interned."""
    if not isinstance(raw, dict):
        raise ArchiveError(f"{where} is not an object")
    target = raw.get("target")
    if not isinstance(target, str):
        raise ArchiveError(f"{where}: target is not a string")
    inputs = []
    for j, na in enumerate(_list(raw.get("inputs"), where, "inputs")):
        if not isinstance(na, dict):
            raise ArchiveError(f"{where}: input #{j} is not an object")
        kind = na.get("kind")
        name = na["name"] if "name" in na else f"arg{j}"  # the default made only when absent
        name = name if type(name) is str else str(name)
        inputs.append(NamedArgument(
            name if shared is None else intern(name),
            _argument(na.get("arg"), where, not shallow, shared),
            kind if isinstance(kind, int) else None,
        ))
    outputs = [_argument(a, where, not shallow, shared)
               for a in _list(raw.get("outputs"), where, "outputs")]
    if metadata is None:
        metadata = node_metadata(raw.get("metadata"), where)
    name = raw.get("name")
    name_in_file = isinstance(name, str) and bool(name)
    if name_in_file and shared is not None and name in shared:
        name = shared[name].value["name"]  # one string with its output's
    if not name_in_file:
        outs = [n for o in outputs for n in o.tensor_names()]
        name = outs[0] if len(outs) == 1 else f"node_{index}"
    hop = raw.get("is_hop_single_tensor_return")
    return Node(index, name, target, inputs, outputs, metadata, graph,
                hop if isinstance(hop, bool) else None, name_in_file)


def node_metadata(meta: Any, where: str) -> dict[str, str]:
    """A node's metadata object as text values."""
    meta = meta or {}
    if not isinstance(meta, dict):
        raise ArchiveError(f"{where}: metadata is not an object")
    # (JSON keys are always strings; values nearly always are: the fast test first)
    return {k: v if type(v) is str else _meta_text(v) for k, v in meta.items()}


def _meta_text(value: Any) -> str:
    """torch writes metadata values as strings; anything else is shown as text.
    A hostile value nested ~1000 levels deep overflows str()'s recursion."""
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except RecursionError:
        return "<value nested too deeply to show>"


def _argument(raw: Any, where: str, check: bool = True,
              shared: dict[str, Argument] | None = None) -> Argument:
    if not isinstance(raw, dict) or len(raw) != 1:
        # torch always writes exactly one member; anything else is kept as-is
        # (shown as unknown) rather than guessed at.
        if check:
            _check_depth(raw, where)
        return Argument("unknown", raw)
    ((kind, value),) = raw.items()
    if check and kind != "as_graph":  # a subgraph is parsed (and bounded) as a graph
        _check_depth(value, where)
    if shared is not None and kind == "as_tensor" and type(value) is dict and len(value) == 1:
        # one Argument per tensor value, for its producer's output and each use
        name = value.get("name")
        if type(name) is str:
            known = shared.get(name)
            if known is None:
                known = shared[name] = Argument("as_tensor", value)
            return known
    return Argument(str(kind), value)


def _check_depth(value: Any, where: str) -> None:
    # Fast path for the common shapes ({"name": "x"}, [1, 2], a scalar): this
    # runs for every argument of every node.
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return
    if not any(isinstance(x, (list, dict)) for x in items):
        return
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth >= MAX_ARGUMENT_DEPTH:
                raise ArchiveError(f"{where}: an argument nests deeper than the limit of "
                                   f"{MAX_ARGUMENT_DEPTH} levels")
            stack.extend((x, depth + 1) for x in (item.values() if isinstance(item, dict) else item))


def parse_tensor_meta(raw: Any, where: str = "tensor_meta") -> TensorMeta:
    """A serialized TensorMeta (a graph's tensor value, a weights config entry's)."""
    if not isinstance(raw, dict):
        raise ArchiveError(f"{where}: tensor metadata is not an object")
    get = raw.get
    dtype, layout = get("dtype"), get("layout")
    return TensorMeta(
        dtype=dtype if type(dtype) is int else 0,
        sizes=[_sym(s, "as_int", where) for s in _list(get("sizes"), where, "sizes")],
        strides=[_sym(s, "as_int", where) for s in _list(get("strides"), where, "strides")],
        device=_device(get("device")),
        requires_grad=bool(get("requires_grad", False)),
        layout=layout if type(layout) is int else 0,
        storage_offset=_sym(get("storage_offset") or _ZERO, "as_int", where),
    )


_ZERO = {"as_int": 0}


def collect_size_hints(raw: Any, hints: dict[str, int]) -> None:
    """Add the size hints of a tensor value's symbolic sizes (`s70` -> 8) to `hints`."""
    sizes = raw.get("sizes")
    if not isinstance(sizes, list):
        return
    for s in sizes:
        expr = s.get("as_expr") if type(s) is dict and "as_int" not in s else None
        if isinstance(expr, dict):
            hint = expr.get("hint")
            value = hint.get("as_int") if isinstance(hint, dict) else None
            if isinstance(value, int) and not isinstance(value, bool):
                hints[render_expr(str(expr.get("expr_str", "?")))] = value


def _device(raw: Any) -> Device:
    return decode_device(raw) or Device("unknown")


def _sym(raw: Any, literal: str, where: str) -> Any:
    """SymInt / SymBool / SymFloat union -> a literal or the rendered expression."""
    if type(raw) is dict and len(raw) == 1:
        value = raw.get(literal)  # the common case: {"as_int": 768}
        if value is not None:
            return value
        ((kind, value),) = raw.items()
        if kind == literal:
            return value
        if kind == "as_expr" and isinstance(value, dict):
            return render_expr(str(value.get("expr_str", "?")))
    if isinstance(raw, (int, float, bool)):
        return raw
    return "?"


def _input_spec(raw: Any, where: str) -> InputSpec:
    kind, body = _union(raw, where, "input spec")
    arg = body.get("arg") if isinstance(body, dict) else None
    if kind == "constant_input":
        return InputSpec(kind, str(body.get("name", "?")), None, constant=True,
                         value=_literal(body.get("value")))
    if kind == "user_input" and isinstance(arg, dict) and len(arg) == 1 \
            and next(iter(arg)) in _LITERAL_KINDS:
        return InputSpec(kind, _arg_name(arg), None, constant=True, value=_literal(arg))
    name = _arg_name(arg)
    target = None
    for key in ("parameter_name", "buffer_name", "tensor_constant_name", "custom_obj_name"):
        if isinstance(body, dict) and key in body:
            target = str(body[key])
    persistent = body.get("persistent") if isinstance(body, dict) else None
    return InputSpec(kind, name, target, persistent if isinstance(persistent, bool) else None)


def _output_spec(raw: Any, where: str) -> OutputSpec:
    kind, body = _union(raw, where, "output spec")
    arg = body.get("arg") if isinstance(body, dict) else None
    target = None
    for key in ("buffer_name", "parameter_name", "user_input_name"):
        if isinstance(body, dict) and key in body:
            target = str(body[key])
    return OutputSpec(kind, _arg_name(arg), target)


def _arg_name(arg: Any) -> str:
    """Name inside an Argument union or a bare TensorArgument."""
    if isinstance(arg, dict):
        if isinstance(arg.get("name"), str):
            return arg["name"]
        if len(arg) == 1:
            ((kind, value),) = arg.items()
            names = list(value_names(kind, value))
            if names:
                return names[0]
            return _literal_text(kind, value)
    return "?"


_LITERAL_KINDS = frozenset({"as_int", "as_float", "as_bool", "as_string", "as_none"})


def _literal(raw: Any) -> Any:
    """A constant argument's Python value ({"as_int": 3} -> 3); other kinds
    stay as their serialized text."""
    if isinstance(raw, dict) and len(raw) == 1:
        ((kind, value),) = raw.items()
        if kind == "as_none":
            return None
        if kind in ("as_int", "as_bool", "as_string") and isinstance(value, (int, str)):
            return value
        if kind == "as_float" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if kind == "as_float" and value in ("Infinity", "-Infinity", "NaN"):
            return float(value.replace("Infinity", "inf"))
    return _meta_text(raw)


def _literal_text(kind: str, value: Any) -> str:
    return "None" if kind == "as_none" else repr(value)


def _union(raw: Any, where: str, what: str) -> tuple[str, Any]:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ArchiveError(f"{where}: an {what} is not a one-member object")
    ((kind, body),) = raw.items()
    return str(kind), body


def _ranges(raw: Any, where: str) -> dict[str, Range]:
    out: dict[str, Range] = {}
    for sym, r in _dict(raw, where, "range_constraints").items():
        if not isinstance(r, dict):
            raise ArchiveError(f"{where}: range_constraints[{sym!r}] is not an object")
        lo, hi = r.get("min_val"), r.get("max_val")
        out[str(sym)] = Range(lo if isinstance(lo, int) else None, hi if isinstance(hi, int) else None)
    return out


_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _used_ranges(ranges: dict[str, Range], texts: set[str]) -> dict[str, Range]:
    """The range constraints torch keeps on load: those of symbols some shape
    or symbolic value of the program mentions (`texts`: _symbol_texts; torch
    <= 2.6 also wrote ranges of unbacked symbols that no node kept; torch's
    deserializer drops them, logging "Symbol u1 did not appear in the graph
    that was deserialized")."""
    if not ranges:
        return ranges
    used: set[str] = set()
    for text in texts:
        used.update(_SYMBOL.findall(text))
    # A derived key (`2*s40 + 1`) stays when its symbols do, as torch keeps it.
    return {k: v for k, v in ranges.items()
            if k in used or (names := set(_SYMBOL.findall(k))) and names <= used}


def _symbol_texts(graph: Graph) -> set[str]:
    """Every symbolic text of the program's shapes and symbolic values."""
    texts: set[str] = set()
    for g in graph.walk():
        for meta in g.tensor_values.values():
            add_symbol_texts(meta, texts)
        for values in (g.sym_int_values, g.sym_bool_values, g.sym_float_values):
            texts.update(v for v in values.values() if isinstance(v, str))
    return texts


def add_symbol_texts(meta: TensorMeta, texts: set[str]) -> None:
    for dims in (meta.sizes, meta.strides):
        texts.update(d for d in dims if isinstance(d, str))
    if isinstance(meta.storage_offset, str):
        texts.add(meta.storage_offset)


def _list(v: Any, where: str, what: str) -> list:
    if v is None:
        return []
    if not isinstance(v, list):
        raise ArchiveError(f"{where}: {what} is not a list")
    return v


def _dict(v: Any, where: str, what: str) -> dict:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ArchiveError(f"{where}: {what} is not an object")
    return v


def _str(v: Any, where: str, what: str) -> str:
    if not isinstance(v, str):
        raise ArchiveError(f"{where}: {what} is not a string")
    return v
