"""Program -> the readable listing torch's `print_readable()` prints.

We reproduce what torch does after `torch.export.load`: the deserializer turns
the JSON into an FX graph (adding `getitem` nodes for multi-output ops and
`get_attr` nodes for control-flow subgraphs), and FX's code generator prints it
with `# File: ...` comments and `"f32[s77, 768]"` annotations. Doing the same
from the JSON keeps torch out of the viewer and makes the listing a faithful
stand-in for the text people already know. `;  x = None` tails are left out:
they only say where FX frees values.

The result carries the lines and the maps between lines and nodes, so the
window and the audit can link both ways.
"""

from __future__ import annotations

import builtins
import json
import keyword
import re
from collections.abc import Iterator
from typing import Any

from msgspec import Struct, field  # C-defined records: cheaper to define than dataclasses

from inspector.core.dtypes import DTYPE_REPR, LAYOUT_NAMES, MEMORY_FORMAT_NAMES
from inspector.core.frames import summary_frame
from inspector.core.op_schemas import op_schema
from inspector.core.program import (
    FLOAT_WORDS,
    KEYWORD,
    POSITIONAL,
    ArgKind,
    Argument,
    Graph,
    Node,
    Program,
    SymArg,
)

K = ArgKind
_TENSOR = K.TENSOR
_REPR_KINDS = frozenset({K.INT, K.BOOL, K.STRING})

INDENT = "    "

# Line kinds, parallel to Listing.lines.
CLASS, DEF, COMMENT, STATEMENT, RETURN, BLANK = "class", "def", "comment", "statement", "return", "blank"

# FX prints these operator-module targets as Python operators.
_MAGIC = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}", "eq": "{} == {}",
    "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "pos": "+{}", "neg": "-{}", "invert": "~{}",
}
_SPARSE_LAYOUTS = {2, 3}  # FX gives sparse csr/csc tensors no annotation
_SNAKE = re.compile(r"(?<=[a-z])([A-Z])")  # torch.fx.graph._snake_case
_ILLEGAL_CHARS = re.compile(r"[^0-9a-zA-Z_]+")  # torch.fx.graph._Namespace
_NAME = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
# FX never names a node after a keyword, a builtin or one of its own globals
_ILLEGAL_NAMES = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | frozenset(
    {"inf", "nan", "NoneType", "torch", "device", "fx_pytree", "pytree"})


class Listing(Struct, dict=True, weakref=True):
    """Lines of text plus the maps between lines and nodes (0-based lines)."""

    lines: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    line_nodes: list[Node | None] = field(default_factory=list)  # line -> node
    _node_line: dict[int, int] = field(default_factory=dict)  # id(node) -> statement line
    # value name -> line that defines it, per graph (names are unique per graph).
    # Keyed by the value's name in the file; FX prints some values under
    # another name (an input named after a builtin: `input` is printed
    # `input_1`, which may be another value's name in the file), so a name
    # read off the listing goes through value_name() first.
    definitions: dict[tuple[str, str], int] = field(default_factory=dict)
    # (graph, name in the file) -> the name FX prints, only where they differ
    printed: dict[tuple[str, str], str] = field(default_factory=dict)
    # (graph, printed name) -> the name in the file, the reverse of `printed`
    file_names: dict[tuple[str, str], str] = field(default_factory=dict)
    # (graph, input name) -> its `input_1 = input` line, for renamed inputs
    aliases: dict[tuple[str, str], int] = field(default_factory=dict)
    # whose `# File:` comment grouping the listing follows, in words (torch
    # releases differ: see render_listing), for the window to say
    comments_as: str = "current torch"
    legacy_comments: bool = False
    hop_attr_metadata: bool = True

    def __len__(self) -> int:
        return len(self.lines)

    def line_of(self, node: Node) -> int | None:
        """The line of the node's own statement (getitem lines follow it)."""
        return self._node_line.get(id(node))

    def node_at(self, line: int) -> Node | None:
        if 0 <= line < len(self.line_nodes):
            return self.line_nodes[line]
        return None

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def printed_name(self, graph: str, name: str) -> str:
        """The name the listing shows for the value `name` of the file."""
        return self.printed.get((graph, name), name)

    def value_name(self, graph: str, shown: str) -> str:
        """The value (its name in the file) that a name shown in the listing
        stands for: `input` for `input_1` when FX renamed the input `input`."""
        return self.file_names.get((graph, shown), shown)

    def _add(self, text: str, kind: str, node: Node | None = None) -> int:
        self.lines.append(text)
        self.kinds.append(kind)
        self.line_nodes.append(node)
        return len(self.lines) - 1


# FX's code generator grouped `# File:` comments by the whole stack trace
# (a bare `# ` where a trace had no frame) up to torch 2.9, and by their
# one-line summary (and "No stacktrace found ..." where none parses) by 2.13;
# measured on 2.5.1, 2.6.0, 2.9.1 against 2.13.0 and 2.14.1 (2.10-2.12 are
# taken as the newer style). torch 2.5's deserializer also gave the get_attr
# nodes of control-flow subgraphs no metadata.
_SUMMARY_STYLE_FROM = (2, 10)
_HOP_ATTR_METADATA_FROM = (2, 6)


def torch_release(version: str | None) -> tuple[int, int] | None:
    """(2, 6) for "2.6.0+cu124"; None when the text names no release."""
    if not version or version.startswith(("<", ">", "~")):
        return None  # "<=2.4": what program.py records when the file names none
    parts = version.split("+", 1)[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None


def _new_listing(program: Program, torch_version: str | None) -> Listing:
    """An empty listing with the comment style of `torch_version` (see render_listing)."""
    listing = Listing()
    if torch_version is None:
        release = torch_release(program.torch_version) or _SUMMARY_STYLE_FROM
        listing.comments_as = (f"torch {program.torch_version}, which wrote the archive"
                               if torch_release(program.torch_version) else "current torch")
    else:
        release = torch_release(torch_version) or _SUMMARY_STYLE_FROM
        listing.comments_as = f"torch {torch_version}"
    listing.legacy_comments = release < _SUMMARY_STYLE_FROM
    listing.hop_attr_metadata = release >= _HOP_ATTR_METADATA_FROM
    return listing


def render_listing(program: Program, torch_version: str | None = None) -> Listing:
    """The listing as torch `torch_version` prints it; by default as the torch
    that wrote the archive does (Listing.comments_as says which)."""
    listing = _new_listing(program, torch_version)
    for _ in _render_module(listing, program.graph, "GraphModule", 0, program, None):
        pass
    return listing


# A streamed listing: the first chunk fills a few screens (what the window waits
# for before it paints), the next ones are bigger (fewer hand-overs to the GUI).
FIRST_LINES = 1_000
CHUNK_LINES = 20_000


class _Steps:
    """Where a streamed listing yields next (shared by the graph and its subgraphs)."""

    __slots__ = ("next", "size")

    def __init__(self, first: int, size: int) -> None:
        self.next, self.size = max(1, first), max(1, size)


def render_listing_chunks(program: Program, torch_version: str | None = None,
                          chunk_lines: int | None = None,
                          first_lines: int | None = None) -> Iterator[Listing]:
    """render_listing in steps: yields the one Listing once it holds `first_lines`
    lines, then each time it has grown by about `chunk_lines`, and once more when
    it is whole (the same lines as render_listing). Between two steps the listing is consistent: its parallel
    lists hold the same lines; only `printed`/`file_names` of a graph not yet
    finished may be missing (they are set when its return line is written)."""
    listing = _new_listing(program, torch_version)
    yield from _render_module(listing, program.graph, "GraphModule", 0, program,
                              _Steps(first_lines or FIRST_LINES, chunk_lines or CHUNK_LINES))
    yield listing


def value_users(program: Program, listing: Listing) -> dict[tuple[str, str], list[int]]:
    """(graph, value) -> the lines that read it (statements, and each graph's
    return), keyed like Listing.definitions by the value's name in the file
    (a name read off the listing: Listing.value_name first)."""
    users: dict[tuple[str, str], list[int]] = {}
    for graph in program.graphs():
        gname = graph.name
        for node in graph.nodes:
            line = listing.line_of(node)
            if line is None:
                continue
            for name in dict.fromkeys(node.input_names()):
                users.setdefault((gname, name), []).append(line)
    returns = [i for i, k in enumerate(listing.kinds) if k == RETURN]
    for graph, line in zip(program.graphs(), returns):
        for out in graph.outputs:
            for name in out.tensor_names():
                users.setdefault((graph.name, name), []).append(line)
    return users


# --- module / graph -----------------------------------------------------------

def _render_module(listing: Listing, graph: Graph, class_name: str, level: int,
                   program: Program, steps: _Steps | None) -> Iterator[Listing]:
    """Writes the graph's class; a generator that yields `listing` at each of
    `steps` (never when it is None)."""
    pad = INDENT * level
    listing._add(f"{pad}class {class_name}(torch.nn.Module):", CLASS)
    ns = _Namespace()
    shown = _PrintedNames.for_graph(graph)
    params = ["self"]
    aliases: list[tuple[str, str, str | None]] = []  # (printed, placeholder target, value)
    for i, arg in enumerate(graph.inputs):
        text, target = _placeholder(graph, arg, i, program)
        params.append(text)
        # graph.placeholder(target) names the node after the snake-cased target;
        # tensor inputs get their own name back, constant inputs keep FX's
        fx_name = ns.create(_snake_case(target[2:-2] if _is_magic(target) else target))
        names = arg.tensor_names()
        node_name = names[0] if names else fx_name
        # FX's code generator names every node again, in a fresh namespace: an
        # input named after a builtin (`input`, `id`, `sum`) is printed
        # `input_1`, bound by `input_1 = input` at the top of forward
        printed = shown.define(node_name)
        if printed != target:
            aliases.append((printed, target, names[0] if names else None))
    listing._add(f"{pad}{INDENT}def forward({', '.join(params)}):", DEF)
    def_line = len(listing.lines) - 1
    for arg in graph.inputs:
        for name in arg.tensor_names():
            listing.definitions[(graph.name, name)] = def_line
    body = pad + INDENT * 2
    for printed, target, value in aliases:
        line = listing._add(f"{body}{printed} = {target}", STATEMENT)
        if value is not None:
            listing.aliases[(graph.name, value)] = line
    prev_summary: str | None = None
    emitted = bool(aliases)  # FX puts a blank line between them and the first comment
    summaries: dict[str | None, str] = {}  # stack_trace -> its `# File:` text
    for node in graph.nodes:
        # Subgraph arguments become get_attr nodes just before their HOP call,
        # carrying the call's metadata.
        subgraph_names = [n for a in node.inputs if (n := a.arg.graph_name()) is not None] \
            if node.target.startswith(_HOP_PREFIX) else ()
        for sub_name in subgraph_names:
            prev_summary = _summary(listing, node, prev_summary, body, emitted, summaries,
                                    listing.hop_attr_metadata)
            emitted = True
            attr_name = shown.define(ns.create(sub_name))
            line = listing._add(f"{body}{attr_name} = self.{sub_name}", STATEMENT, node)
            listing.definitions[(graph.name, attr_name)] = line
        prev_summary = _summary(listing, node, prev_summary, body, emitted, summaries)
        emitted = True
        _emit_node(listing, graph, node, body, ns, shown)
        if steps is not None and len(listing.lines) >= steps.next:
            yield listing
            steps.next = len(listing.lines) + steps.size
    # FX adds `pass` only to a graph without an output node, and a
    # deserialized graph always has one: an empty graph is just its return.
    listing._add(f"{body}return {_output_text(graph, shown.map)}", RETURN)
    for name, printed in shown.map.items():
        listing.printed[(graph.name, name)] = printed
        listing.file_names[(graph.name, printed)] = name
    for sub in graph.subgraphs:
        listing._add("", BLANK)
        yield from _render_module(listing, sub, sub.name, level + 1, program, steps)


class _PrintedNames:
    """The names FX's code generator prints (`_gen_python_code` repr()s every
    node through a fresh _Namespace, in graph order). Node names are unique
    and legal in nearly every graph, and then each prints as itself; only a
    graph holding a name FX may not print (a builtin, a keyword) pays for the
    second namespace."""

    __slots__ = ("ns", "map")

    def __init__(self, ns: _Namespace | None) -> None:
        self.ns = ns
        self.map: dict[str, str] = {}  # name in the file -> printed, where they differ

    @classmethod
    def for_graph(cls, graph: Graph) -> _PrintedNames:
        illegal = _ILLEGAL_NAMES
        for arg in graph.inputs:
            if any(n in illegal for n in arg.tensor_names()):
                return cls(_Namespace())
        may_name = getattr(graph.nodes, "may_name", None)  # lean nodes: ask the text
        if may_name is not None and not may_name(illegal):
            return cls(None)
        for node in graph.nodes:
            if node.name in illegal:
                return cls(_Namespace())
            for out in node.outputs:
                if out.kind == K.TENSOR:  # the common case, fast
                    if out.name() in illegal:
                        return cls(_Namespace())
                elif any(n in illegal for n in out.tensor_names()):
                    return cls(_Namespace())
        return cls(None)

    def define(self, name: str) -> str:
        if self.ns is None:
            return name
        printed = self.ns.create(name)
        if printed != name:
            self.map[name] = printed
        return printed


def _summary(listing: Listing, node: Node, prev: str | None, body: str, emitted: bool,
             cache: dict[str | None, str], metadata: bool = True) -> str | None:
    if listing.legacy_comments:
        return _legacy_summary(listing, node if metadata else None, prev, body, emitted, cache)
    trace = node.stack_trace
    text = cache.get(trace)
    if text is None:
        frame = summary_frame(trace)
        text = ("No stacktrace found for following nodes" if frame is None
                else f"File: {frame[0]}:{frame[1]} in {frame[2]}, code: {frame[3]}")
        cache[trace] = text
    annotation = _custom_annotation(node) if "custom" in node.metadata else ""
    summary = f"#{annotation} {text}"
    if summary != prev:
        if emitted:
            listing._add("", BLANK)
        listing._add(f"{body}{summary}", COMMENT, node)
    return summary


def _legacy_summary(listing: Listing, node: Node | None, prev: str | None, body: str,
                    emitted: bool, cache: dict[str | None, str]) -> str | None:
    """torch <= 2.9: a comment whenever the whole stack trace changes (`# `
    alone when it has no frame), "No stacktrace found" once before nodes
    without one; FX indented these comments one space further."""
    trace = node.stack_trace if node is not None else None
    if trace:
        if trace != prev:
            text = cache.get(trace)
            if text is None:
                frame = summary_frame(trace)
                text = "" if frame is None else f"File: {frame[0]}:{frame[1]} in {frame[2]}, code: {frame[3]}"
                cache[trace] = text
            if emitted:
                listing._add("", BLANK)
            listing._add(f"{body} # {text}", COMMENT, node)
        return trace
    if prev != "":
        if emitted:
            listing._add("", BLANK)
        listing._add(f"{body}# No stacktrace found for following nodes", COMMENT, node)
    return ""


def _custom_annotation(node: Node) -> str:
    raw = node.metadata.get("custom")
    if not raw:
        return ""
    try:
        custom = json.loads(raw)  # JSON only: data, never code
    except (ValueError, RecursionError):  # hostile: "[[[[..." 100,000 levels in a string
        return ""
    if not isinstance(custom, dict) or not custom:
        return ""
    trunc = {k: (str(v)[:40] + "..." if len(str(v)) > 40 else v) for k, v in custom.items()}
    return f" Annotation: {trunc}"


def _placeholder(graph: Graph, arg: Argument, index: int, program: Program) -> tuple[str, str]:
    """(signature text, placeholder target) for one graph input."""
    names = arg.tensor_names()
    if names:
        name = names[0]
        return f"{name}{_annotation(graph, name)}", name
    name = f"arg{index}"
    if graph.depth == 0 and index < len(program.input_specs):
        name = program.input_specs[index].name or name  # a constant input: no annotation
    return name, name


def _annotation(graph: Graph, name: str) -> str:
    meta = graph.tensor_values.get(name)
    if meta is not None:
        if meta.layout in _SPARSE_LAYOUTS:
            return ""
        return f': "{meta.annotation()}"'
    for values in (graph.sym_int_values, graph.sym_float_values, graph.sym_bool_values):
        if name in values:
            value = values[name]
            # a constant (non-symbolic) value gets no annotation from FX
            return f': "Sym({value})"' if isinstance(value, str) else ""
    return ""


# --- nodes --------------------------------------------------------------------

def _emit_node(listing: Listing, graph: Graph, node: Node, body: str, ns: _Namespace,
               shown: _PrintedNames) -> None:
    """One node as the deserializer builds it: the call, then the getitem nodes
    it adds for multiple outputs, all named through the graph's namespace."""
    target = node.target
    outputs = node.outputs
    hop = target.startswith(_HOP_PREFIX)
    if not hop and node.name_in_file and len(outputs) == 1 and outputs[0].kind == K.TENSOR:
        # the common case (one tensor out), kept short: 100k-node programs
        name = outputs[0].name()
        if name is not None:
            ns.create(node.name)
            printed = shown.define(name)
            line = listing._add(f"{body}{printed}{_annotation(graph, name)} = "
                                f"{_call_text(node, target, False, shown.map)}", STATEMENT, node)
            listing._node_line[id(node)] = line
            listing.definitions[(graph.name, name)] = line
            return
    kinds = [o.kind for o in outputs]
    single_value = len(outputs) == 1 and kinds[0] in _SINGLE_VALUE_KINDS
    fx_name = ns.create(_creation_name(node, hop, single_value))
    name = fx_name
    annotation = ""
    getitems: list[tuple[str, str, int, list]] = []  # (kind, name, index, nested)
    if hop and len(outputs) == 1 and node.is_hop_single_tensor_return is False \
            and kinds[0] != K.NONE:
        # a HOP returning a one-element tuple: a getitem for element 0
        getitems = _getitems(outputs, ns)
    elif single_value:
        out_name = outputs[0].tensor_names()
        if out_name:
            name = out_name[0]  # sync_fx_node: the value's own name
            annotation = _annotation(graph, name)
    elif len(outputs) == 1 and kinds[0] == K.NONE:
        name = ns.create(_target_to_str(target) + "_unused")
    elif outputs:
        listed = outputs[0].items() if len(outputs) == 1 and kinds[0] == K.TENSORS else None
        items = outputs if listed is None else listed
        getitems = _getitems(items, ns)
    printed = shown.define(name)
    call = _call_text(node, target, hop, shown.map)
    line = listing._add(f"{body}{printed}{annotation} = {call}", STATEMENT, node)
    listing._node_line[id(node)] = line
    listing.definitions[(graph.name, name)] = line
    _emit_getitems(listing, graph, node, body, printed, getitems, shown)


_SINGLE_VALUE_KINDS = (K.TENSOR, K.SYM_INT, K.SYM_FLOAT, K.SYM_BOOL)
# The deserializer adds getitem nodes for these (not for SymBools: torch's own gap).
_GETITEM_VALUE_KINDS = (K.TENSOR, K.SYM_INT, K.SYM_FLOAT)
_GETITEM_LIST_KINDS = (K.TENSORS, K.SYM_INTS, K.SYM_FLOATS)
_HOP_PREFIX = "torch.ops.higher_order."


def _creation_name(node: Node, hop: bool, single_value: bool) -> str:
    """The name the deserializer asks FX for when it creates the node."""
    if node.name_in_file:
        return node.name
    outputs = node.outputs
    if single_value and (outputs[0].kind != K.TENSOR or not hop
                         or node.is_hop_single_tensor_return is not False):
        names = outputs[0].tensor_names()
        if names:
            return names[0]
    return _target_to_str(node.target)


def _getitems(items: list[Argument], ns: _Namespace) -> list[tuple[str, str, int, list]]:
    out: list[tuple[str, str, int, list]] = []
    for idx, arg in enumerate(items):
        kind = arg.kind
        name = arg.name() if kind in _GETITEM_VALUE_KINDS else None
        if name is not None:
            ns.create(name)  # created under its name, then synced to it
            out.append(("value", name, idx, []))
        elif kind in _GETITEM_LIST_KINDS and (elements := arg.items()) is not None:
            list_name = ns.create("getitem")
            out.append(("list", list_name, idx, _getitems(elements, ns)))
        elif kind == K.NONE:
            out.append(("none", ns.create(K.NONE), idx, []))  # torch names it after the kind
    return out


def _emit_getitems(listing: Listing, graph: Graph, node: Node, body: str, parent: str,
                   getitems: list[tuple[str, str, int, list]], shown: _PrintedNames) -> None:
    for kind, out_name, idx, nested in getitems:
        ann = _annotation(graph, out_name) if kind == "value" else ""
        printed = shown.define(out_name)
        gl = listing._add(f"{body}{printed}{ann} = {parent}[{idx}]", STATEMENT, node)
        listing.definitions[(graph.name, out_name)] = gl
        if nested:
            _emit_getitems(listing, graph, node, body, printed, nested, shown)


def _call_text(node: Node, target: str, hop: bool, names: dict[str, str] | None = None) -> str:
    args: list[str] = []
    kwargs: list[str] = []
    if not hop and any(inp.kind not in (POSITIONAL, KEYWORD) for inp in node.inputs):
        by_schema = _schema_call(node, target, names)
        if by_schema is not None:
            return by_schema
    for inp in node.inputs:
        text = arg_text(inp.arg, names)
        if hop:
            positional = inp.kind == POSITIONAL or inp.name == ""
        else:
            positional = inp.kind != KEYWORD
        if positional:
            args.append(text)
        else:
            kwargs.append(f"{inp.name} = {text}")
    if target.startswith("_operator."):
        op = target[len("_operator."):]
        if op in _MAGIC and not kwargs:
            try:
                return _MAGIC[op].format(*args)
            except IndexError:
                pass
    return f"{target}({', '.join(args + kwargs)})"


def _schema_call(node: Node, target: str, names: dict[str, str] | None) -> str | None:
    """The call as torch's deserialize_inputs rebuilds it when arguments carry
    no kind (schemas 7.3, 8.2): schema order; an argument with a default or a
    keyword-only one becomes a keyword. None when the op's schema is unknown
    or the file's arguments do not fit it (torch could not load the node)."""
    schema = op_schema(target)
    if schema is None:
        return None
    actual = {inp.name: inp for inp in node.inputs}
    args: list[str] = []
    kwargs: dict[str, str] = {}
    for sarg in schema:
        inp = actual.get(sarg.name)
        if inp is not None:
            if inp.kind == POSITIONAL:
                args.append(arg_text(inp.arg, names))
                continue
            if inp.kind == KEYWORD and not keyword.iskeyword(sarg.name):
                kwargs[sarg.name] = arg_text(inp.arg, names)
                continue
        if sarg.positional or keyword.iskeyword(sarg.name):
            if inp is None:
                return None  # torch raises KeyError here
            if not sarg.positional:
                kwargs = {}  # what torch does (its kwargs are dropped, not moved)
            args.append(arg_text(inp.arg, names))
        elif inp is not None:
            kwargs[sarg.name] = arg_text(inp.arg, names)
    parts = args + [f"{k} = {v}" for k, v in kwargs.items()]
    return f"{target}({', '.join(parts)})"


def _target_to_str(target: str) -> str:
    """FX's Graph._target_to_str + Namespace clean-up: `aten.addBias.default` ->
    `add_bias_default` (snake case only after a lower-case letter, then every run
    of characters illegal in an identifier becomes one `_`)."""
    parts = target.split(".")
    if len(parts) >= 4 and parts[0] == "torch" and parts[1] == "ops":
        op = f"{parts[3]}.{parts[4]}" if len(parts) > 4 else parts[3]
    else:
        op = parts[-1]
    name = _ILLEGAL_CHARS.sub("_", _SNAKE.sub(r"_\1", op).lower()) or "_unnamed"
    return f"_{name}" if name[0].isdigit() else name


def _snake_case(name: str) -> str:
    return _SNAKE.sub(r"_\1", name).lower()


def _is_magic(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class _Namespace:
    """torch.fx.graph._Namespace.create_name: unique, legal names per graph
    (`getitem`, `getitem_1`, ...; never a keyword or a builtin)."""

    __slots__ = ("used", "base_count")

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.base_count: dict[str, int] = {}

    def create(self, candidate: str) -> str:
        if candidate.isascii() and candidate.isidentifier():
            # the common case, without the regex: `base` or `base_<digits>`
            head, sep, tail = candidate.rpartition("_")
            if sep and head and tail.isdigit():
                return self._create(candidate, head, tail)
            return self._create(candidate, candidate, None)
        match = _NAME.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _NAME.match(candidate)
            if match is None:  # cannot happen after the clean-up; keep the text
                self.used.add(candidate)
                return candidate
        base, num_text = match.group(1, 2)
        return self._create(candidate, base, num_text)

    def _create(self, candidate: str, base: str, num_text: str | None) -> str:
        if num_text is None or candidate in self.used:
            num = self.base_count.get(base, 0)
            if candidate in _ILLEGAL_NAMES:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num_text)
        while candidate in self.used:
            num += 1
            candidate = f"{base}_{num}"
        self.used.add(candidate)
        self.base_count[base] = num
        return candidate


def _float_text(value: Any) -> str:
    if isinstance(value, str):
        value = FLOAT_WORDS.get(value, value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return repr(float(value))
    return repr(value)


def arg_text(arg: Argument, names: dict[str, str] | None = None) -> str:
    """An argument as FX prints it; `names`: values FX prints under another
    name (name in the file -> printed name)."""
    kind = arg.kind
    if names and kind != K.STRING_TO_ARGUMENT:  # that one recurses with `names`
        return _renamed(arg_text(arg), arg, names)
    if kind == _TENSOR:  # most arguments: kept short for 100k-node programs
        name = arg.name()
        return repr(arg.value) if name is None else name
    if kind in _REPR_KINDS:  # the next most common: a literal is its own value
        return repr(arg.value)
    text = _FORMATS.get(kind)
    if text is None:
        return f"<{kind}: {json.dumps(arg.value, default=str)[:200]}>"
    return text(arg, names)


# Each formatter falls back to repr() of the raw value when the accessor finds
# it damaged (a fuzzed file): shown, never fatal.

def _name_text(arg: Argument, names: dict[str, str] | None) -> str:
    name = arg.name()
    return repr(arg.value) if name is None else name


def _literal_list_text(arg: Argument, names: dict[str, str] | None) -> str:
    values = arg.literal()
    if type(values) is not list:
        return repr(arg.value)
    element = _float_text if arg.kind == K.FLOATS else repr
    return "[" + ", ".join(map(element, values)) + "]"


def _tensors_text(arg: Argument, names: dict[str, str] | None) -> str:
    items = arg.items()
    if items is None:
        return repr(arg.value)  # null from a damaged file (fuzz)
    return "[" + ", ".join(n for item in items if (n := item.name()) is not None) + "]"


def _sym_text(arg: Argument, names: dict[str, str] | None = None) -> str:
    sym = arg.sym()
    return repr(arg.value) if sym is None else _sym_value_text(sym, arg.kind == K.SYM_FLOAT)


def _sym_value_text(sym: SymArg, is_float: bool) -> str:
    if sym.name is not None:
        return sym.name
    return _float_text(sym.literal) if is_float else repr(sym.literal)


def _sym_list_text(arg: Argument, names: dict[str, str] | None) -> str:
    syms = arg.syms()
    if syms is None:
        return repr(arg.value)
    is_float = arg.kind == K.SYM_FLOATS
    # a damaged element shows as its raw value, as a damaged single one does
    return "[" + ", ".join(repr(raw) if s is None else _sym_value_text(s, is_float)
                           for s, raw in zip(syms, arg.value)) + "]"


def _list_text(element: Any) -> Any:
    def text(arg: Argument, names: dict[str, str] | None) -> str:
        items = arg.items()
        if items is None:
            return repr(arg.value)
        return "[" + ", ".join(element(item, names) for item in items) + "]"
    return text


def _device_text(arg: Argument, names: dict[str, str] | None) -> str:
    device = arg.device()
    assert device is not None  # dispatched on the kind
    if device.index is None:
        return f"device(type={device.type!r})"
    return f"device(type={device.type!r}, index={device.index})"


def _optional_tensor_text(arg: Argument, names: dict[str, str] | None = None) -> str:
    inner = arg.optional()
    if inner is None:
        return repr(arg.value)
    return "None" if inner.is_none else _name_text(inner, names)


def _complex_text(arg: Argument, names: dict[str, str] | None) -> str:
    value = arg.complex_value()
    return repr(arg.value) if value is None else repr(value)


def _float_lists_text(arg: Argument, names: dict[str, str] | None) -> str:
    rows = [item.literal() for item in arg.items() or ()]
    if type(arg.value) is not list or not all(type(r) is list for r in rows):
        return repr(arg.value)
    return "[" + ", ".join("[" + ", ".join(map(_float_text, r)) + "]" for r in rows) + "]"


def _nested_tensors_text(arg: Argument, names: dict[str, str] | None) -> str:
    rows = arg.items()
    if rows is None:
        return repr(arg.value)
    return "[" + ", ".join(_tensors_text(r, names) for r in rows if r.items() is not None) + "]"


def _string_map_text(arg: Argument, names: dict[str, str] | None) -> str:
    members = arg.mapping()
    if members is None:
        return repr(arg.value)
    return "{" + ", ".join(f"{k!r}: {arg_text(v, names)}" for k, v in members.items()) + "}"


def _enum_text(table: dict[int, str], missing: str) -> Any:
    def text(arg: Argument, names: dict[str, str] | None) -> str:
        return table.get(arg.enum_code(), missing.format(arg.value))  # type: ignore[arg-type]
    return text


_FORMATS = {
    K.TENSOR: _name_text,
    K.CUSTOM_OBJ: _name_text,
    K.NONE: lambda arg, names: "None",
    K.INT: lambda arg, names: repr(arg.literal()),
    K.BOOL: lambda arg, names: repr(arg.literal()),
    K.STRING: lambda arg, names: repr(arg.literal()),
    K.FLOAT: lambda arg, names: _float_text(arg.literal()),
    K.INTS: _literal_list_text,
    K.BOOLS: _literal_list_text,
    K.STRINGS: _literal_list_text,
    K.FLOATS: _literal_list_text,
    K.TENSORS: _tensors_text,
    K.SYM_INT: _sym_text,
    K.SYM_BOOL: _sym_text,
    K.SYM_FLOAT: _sym_text,
    K.SYM_INTS: _sym_list_text,
    K.SYM_BOOLS: _sym_list_text,
    K.SYM_FLOATS: _sym_list_text,
    K.SCALAR_TYPE: _enum_text(DTYPE_REPR, "torch.dtype({})"),
    K.MEMORY_FORMAT: _enum_text({k: f"torch.{v}" for k, v in MEMORY_FORMAT_NAMES.items()}, "torch.{}"),
    K.LAYOUT: _enum_text({k: f"torch.{v}" for k, v in LAYOUT_NAMES.items()}, "torch.{}"),
    K.DEVICE: _device_text,
    K.GRAPH: lambda arg, names: arg.graph_name() or repr(arg.value),
    K.OPTIONAL_TENSORS: _list_text(_optional_tensor_text),
    K.OPTIONAL_TENSOR: _optional_tensor_text,
    K.OPERATOR: lambda arg, names: str(arg.value),
    K.COMPLEX: _complex_text,
    K.INT_LISTS: lambda arg, names: repr(arg.value),
    K.FLOAT_LISTS: _float_lists_text,
    K.NESTED_TENSORS: _nested_tensors_text,
    K.STRING_TO_ARGUMENT: _string_map_text,
}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Kinds printed as exactly one name, swapped whole when FX renames it.
_WHOLE_NAME_KINDS = frozenset({K.TENSOR, K.CUSTOM_OBJ, K.GRAPH, K.SYM_INT, K.SYM_BOOL,
                               K.SYM_FLOAT, K.OPTIONAL_TENSOR})


def _renamed(text: str, arg: Argument, names: dict[str, str]) -> str:
    """`text` with the graph values it names printed as FX prints them. Only
    graphs holding a name FX renames come here; the values an argument reads
    are known (Argument.tensor_names), so only those identifiers are swapped,
    never text inside a string literal that merely looks like one."""
    wanted = {n: names[n] for n in arg.tensor_names() if n in names}
    sub = arg.graph_name()
    if sub is not None and sub in names:
        wanted[sub] = names[sub]
    if not wanted:
        return text
    if arg.kind in _WHOLE_NAME_KINDS:
        return wanted.get(text, text)
    return _IDENTIFIER.sub(lambda m: wanted.get(m.group(0), m.group(0)), text)


def _output_text(graph: Graph, names: dict[str, str] | None = None) -> str:
    items = [arg_text(o, names) for o in graph.outputs]
    if graph.is_single_tensor_return and len(items) == 1:
        return items[0]
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"

