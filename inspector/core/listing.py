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

import json
import math
from dataclasses import dataclass, field
from typing import Any

from inspector.core.frames import summary_frame
from inspector.core.program import (
    KEYWORD,
    LAYOUT_NAMES,
    MEMORY_FORMAT_NAMES,
    POSITIONAL,
    Argument,
    Graph,
    Node,
    Program,
)

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
# torch's serializer writes dtypes as ScalarType numbers.
_DTYPE_REPR = {
    1: "torch.uint8", 2: "torch.int8", 3: "torch.int16", 4: "torch.int32", 5: "torch.int64",
    6: "torch.float16", 7: "torch.float32", 8: "torch.float64", 9: "torch.complex32",
    10: "torch.complex64", 11: "torch.complex128", 12: "torch.bool", 13: "torch.bfloat16",
    28: "torch.uint16", 29: "torch.float8_e4m3fn", 30: "torch.float8_e5m2",
    31: "torch.float8_e4m3fnuz", 32: "torch.float8_e5m2fnuz", 33: "torch.float8_e8m0fnu",
    34: "torch.uint32", 35: "torch.uint64",
}
_SPARSE_LAYOUTS = {2, 3}  # FX gives sparse csr/csc tensors no annotation
_FLOAT_WORDS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


@dataclass
class Listing:
    """Lines of text plus the maps between lines and nodes (0-based lines)."""

    lines: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    line_nodes: list[Node | None] = field(default_factory=list)  # line -> node
    _node_line: dict[int, int] = field(default_factory=dict)  # id(node) -> statement line
    # value name -> line that defines it, per graph (names are unique per graph)
    definitions: dict[tuple[str, str], int] = field(default_factory=dict)

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

    def _add(self, text: str, kind: str, node: Node | None = None) -> int:
        self.lines.append(text)
        self.kinds.append(kind)
        self.line_nodes.append(node)
        return len(self.lines) - 1


def render_listing(program: Program) -> Listing:
    listing = Listing()
    _render_module(listing, program.graph, "GraphModule", 0, program)
    return listing


def render_program_text(program: Program) -> str:
    return render_listing(program).text()


# --- module / graph -----------------------------------------------------------

def _render_module(listing: Listing, graph: Graph, class_name: str, level: int,
                   program: Program) -> None:
    pad = INDENT * level
    listing._add(f"{pad}class {class_name}(torch.nn.Module):", CLASS)
    params = ["self"] + [_placeholder(graph, arg, i, program) for i, arg in enumerate(graph.inputs)]
    listing._add(f"{pad}{INDENT}def forward({', '.join(params)}):", DEF)
    for arg in graph.inputs:
        for name in arg.tensor_names():
            listing.definitions[(graph.name, name)] = len(listing.lines) - 1
    body = pad + INDENT * 2
    prev_summary: str | None = None
    emitted = False
    for node in graph.nodes:
        # Subgraph arguments become get_attr nodes just before their HOP call,
        # carrying the call's metadata.
        subgraph_args = [a.arg.value for a in node.inputs
                         if a.arg.kind == "as_graph" and isinstance(a.arg.value, dict)]
        for sub in subgraph_args:
            prev_summary = _summary(listing, node, prev_summary, body, emitted)
            emitted = True
            sub_name = str(sub.get("name", ""))
            line = listing._add(f"{body}{sub_name} = self.{sub_name}", STATEMENT, node)
            listing.definitions[(graph.name, sub_name)] = line
        prev_summary = _summary(listing, node, prev_summary, body, emitted)
        emitted = True
        _emit_node(listing, graph, node, body)
    # FX adds `pass` only to a graph without an output node, and a
    # deserialized graph always has one: an empty graph is just its return.
    listing._add(f"{body}return {_output_text(graph)}", RETURN)
    for sub in graph.subgraphs:
        listing._add("", BLANK)
        _render_module(listing, sub, sub.name, level + 1, program)


def _summary(listing: Listing, node: Node, prev: str | None, body: str, emitted: bool) -> str:
    frame = summary_frame(node.stack_trace)
    text = ("No stacktrace found for following nodes" if frame is None
            else f"File: {frame[0]}:{frame[1]} in {frame[2]}, code: {frame[3]}")
    annotation = _custom_annotation(node)
    summary = f"#{annotation} {text}"
    if summary != prev:
        if emitted:
            listing._add("", BLANK)
        listing._add(f"{body}{summary}", COMMENT, node)
    return summary


def _custom_annotation(node: Node) -> str:
    raw = node.metadata.get("custom")
    if not raw:
        return ""
    try:
        custom = json.loads(raw)  # JSON only: data, never code
    except ValueError:
        return ""
    if not isinstance(custom, dict) or not custom:
        return ""
    trunc = {k: (str(v)[:40] + "..." if len(str(v)) > 40 else v) for k, v in custom.items()}
    return f" Annotation: {trunc}"


def _placeholder(graph: Graph, arg: Argument, index: int, program: Program) -> str:
    names = arg.tensor_names()
    if names:
        name = names[0]
        return f"{name}{_annotation(graph, name)}"
    if graph.depth == 0 and index < len(program.input_specs):
        return program.input_specs[index].name  # a constant input: no annotation
    return f"arg{index}"


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

def _emit_node(listing: Listing, graph: Graph, node: Node, body: str) -> None:
    target = node.target
    outputs = node.outputs
    hop = target.startswith("torch.ops.higher_order.")
    single_value = (len(outputs) == 1 and outputs[0].kind in
                    ("as_tensor", "as_sym_int", "as_sym_float", "as_sym_bool"))
    getitems: list[tuple[str, int]] = []
    name = node.name
    annotation = ""
    if hop and len(outputs) == 1 and node.is_hop_single_tensor_return is False \
            and outputs[0].kind != "as_none":
        # a HOP returning a one-element tuple: a getitem for element 0
        getitems = [(outputs[0].tensor_names()[0], 0)] if outputs[0].tensor_names() else []
    elif single_value:
        out_name = outputs[0].tensor_names()
        if out_name:
            name = out_name[0]
            annotation = _annotation(graph, name)
    elif len(outputs) == 1 and outputs[0].kind == "as_none":
        name = _target_to_str(target) + "_unused"
    elif outputs:
        elements = outputs[0].value if (len(outputs) == 1 and outputs[0].kind == "as_tensors"
                                        and isinstance(outputs[0].value, list)) else None
        if elements is not None:
            getitems = [(str(e.get("name", "")), i) for i, e in enumerate(elements)
                        if isinstance(e, dict)]
        else:
            for i, out in enumerate(outputs):
                names = out.tensor_names()
                if out.kind in ("as_tensor", "as_sym_int", "as_sym_float") and names:
                    getitems.append((names[0], i))
                elif out.kind == "as_none":
                    getitems.append(("as_none", i))
    call = _call_text(node, target, hop)
    line = listing._add(f"{body}{name}{annotation} = {call}", STATEMENT, node)
    listing._node_line[id(node)] = line
    listing.definitions[(graph.name, name)] = line
    for out_name, idx in getitems:
        ann = _annotation(graph, out_name)
        gl = listing._add(f"{body}{out_name}{ann} = {name}[{idx}]", STATEMENT, node)
        listing.definitions[(graph.name, out_name)] = gl


def _call_text(node: Node, target: str, hop: bool) -> str:
    args: list[str] = []
    kwargs: list[str] = []
    for inp in node.inputs:
        text = _arg_text(inp.arg)
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


def _target_to_str(target: str) -> str:
    """FX's Graph._target_to_str for an OpOverload: `aten.foo.default` -> foo_default."""
    parts = target.split(".")
    if len(parts) >= 4 and parts[0] == "torch" and parts[1] == "ops":
        op = f"{parts[3]}_{parts[4]}" if len(parts) > 4 else parts[3]
    else:
        op = parts[-1]
    return _snake(op)


def _snake(name: str) -> str:
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i > 0 and name[i - 1] != "_":
            out.append("_")
        out.append(c.lower())
    return "".join(out)


def _float_text(value: Any) -> str:
    if isinstance(value, str):
        value = _FLOAT_WORDS.get(value, value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return repr(float(value))
    return repr(value)


def _sym_text(value: Any, literal: str) -> str:
    if isinstance(value, dict) and len(value) == 1:
        ((kind, inner),) = value.items()
        if kind == "as_name":
            return str(inner)
        if kind == "as_float":
            return _float_text(inner)
        return repr(inner)
    return repr(value)


def _arg_text(arg: Argument) -> str:
    kind, value = arg.kind, arg.value
    if kind == "as_tensor" or kind == "as_custom_obj":
        return str(value.get("name")) if isinstance(value, dict) else repr(value)
    if kind == "as_none":
        return "None"
    if kind in ("as_int", "as_bool", "as_string"):
        return repr(value)
    if kind == "as_float":
        return _float_text(value)
    if kind in ("as_ints", "as_bools", "as_strings"):
        return "[" + ", ".join(repr(v) for v in value) + "]" if isinstance(value, list) else repr(value)
    if kind == "as_floats":
        return "[" + ", ".join(_float_text(v) for v in value) + "]" if isinstance(value, list) else repr(value)
    if kind == "as_tensors":
        return "[" + ", ".join(str(v.get("name")) for v in value if isinstance(v, dict)) + "]"
    if kind in ("as_sym_int", "as_sym_bool", "as_sym_float"):
        return _sym_text(value, kind)
    if kind in ("as_sym_ints", "as_sym_bools", "as_sym_floats"):
        return "[" + ", ".join(_sym_text(v, kind) for v in value) + "]" if isinstance(value, list) else repr(value)
    if kind == "as_scalar_type":
        return _DTYPE_REPR.get(value, f"torch.dtype({value})")
    if kind == "as_memory_format":
        return f"torch.{MEMORY_FORMAT_NAMES.get(value, value)}"
    if kind == "as_layout":
        return f"torch.{LAYOUT_NAMES.get(value, value)}"
    if kind == "as_device":
        if isinstance(value, dict):
            index = value.get("index")
            if index is None:
                return f"device(type={value.get('type')!r})"
            return f"device(type={value.get('type')!r}, index={index})"
        return repr(value)
    if kind == "as_graph":
        return str(value.get("name")) if isinstance(value, dict) else repr(value)
    if kind == "as_optional_tensors":
        return "[" + ", ".join(_optional_tensor_text(v) for v in value) + "]" if isinstance(value, list) else repr(value)
    if kind == "as_optional_tensor":
        return _optional_tensor_text(value)
    if kind == "as_operator":
        return str(value)
    if kind == "as_complex":
        if isinstance(value, dict):
            return repr(complex(_num(value.get("real")), _num(value.get("imag"))))
        return repr(value)
    if kind == "as_int_lists":
        return repr(value)
    if kind == "as_float_lists":
        return "[" + ", ".join("[" + ", ".join(_float_text(x) for x in v) + "]" for v in value) + "]" \
            if isinstance(value, list) and all(isinstance(v, list) for v in value) else repr(value)
    if kind == "as_nested_tensors":
        return "[" + ", ".join("[" + ", ".join(str(t.get("name")) for t in v if isinstance(t, dict)) + "]"
                               for v in value if isinstance(v, list)) + "]" if isinstance(value, list) else repr(value)
    if kind == "as_string_to_argument":
        if isinstance(value, dict):
            items = []
            for k, v in value.items():
                inner = Argument(*next(iter(v.items()))) if isinstance(v, dict) and len(v) == 1 else Argument("unknown", v)
                items.append(f"{k!r}: {_arg_text(inner)}")
            return "{" + ", ".join(items) + "}"
        return repr(value)
    return f"<{kind}: {json.dumps(value, default=str)[:200]}>"


def _num(v: Any) -> float:
    if isinstance(v, str):
        return _FLOAT_WORDS.get(v, 0.0)
    return float(v) if isinstance(v, (int, float)) else 0.0


def _optional_tensor_text(value: Any) -> str:
    if isinstance(value, dict):
        if "as_tensor" in value and isinstance(value["as_tensor"], dict):
            return str(value["as_tensor"].get("name"))
        if "as_none" in value:
            return "None"
    return repr(value)


def _output_text(graph: Graph) -> str:
    items = [_output_item(o) for o in graph.outputs]
    if graph.is_single_tensor_return and len(items) == 1:
        return items[0]
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


def _output_item(arg: Argument) -> str:
    if arg.kind == "as_tensor":
        return _arg_text(arg)
    return _arg_text(arg)
