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


def sympify_payload(marker: Path) -> str:
    """For sympify, which evaluates its text as Python but turns `[...]` into a sympy
    list: exec of a string literal."""
    return f'exec("open({str(marker)!r},{chr(39)}w{chr(39)}).close()")'


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
    name = f"injected_input={payload(marker)}"
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
            return {f"weights:{old}": new}
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


def _operator_list(doc: dict[str, Any], marker: Path) -> bool:
    """as_operators: torch resolves each string by attribute lookup from `torch`;
    no op of torch 2.13 calls the items of such a list: refused as a precaution."""
    _insert_first(doc, _node("torch.ops.higher_order.wrap", [
        _pos({"as_operator": "torch.ops.aten.relu.default"}),
        _pos({"as_operators": ["torch.serialization.os.system"]}),
        _pos({"as_string": f"touch {marker}"})], [{"as_none": True}], "wrap_injected"))
    return True


def _state_fqn(kind: str, key: str, config: str) -> Maker:
    """A buffer's / lifted constant's FQN: module() registers it on the module and FX
    writes `getattr(self, "NAME")` for the get_attr node that reads it."""
    def make(doc: dict[str, Any], marker: Path) -> dict[str, str] | None:
        for spec in doc["graph_module"]["signature"]["input_specs"]:
            if kind in spec:
                old = spec[kind][key]
                head = old.rsplit(".", 1)[0] + "." if "." in old else ""
                new = head + breakout('x")', marker)
                spec[kind][key] = new
                for out in doc["graph_module"]["signature"]["output_specs"]:
                    for body in out.values():
                        if isinstance(body, dict) and body.get(key) == old:
                            body[key] = new  # a mutated buffer's output spec names it too
                return {f"weights:{old}": new, f"constants:{old}": new}
        return None
    make.__doc__ = f"{kind} FQN"
    return make


def _custom_obj_fqn(doc: dict[str, Any], marker: Path) -> bool:
    """A custom object's FQN (no real archive of the corpus holds a TorchBind object,
    so torch fails before it builds code: refused as a precaution)."""
    graph = _graph(doc)
    graph["custom_obj_values"]["obj_injected"] = {"class_fqn": "__torch__.torch.classes.x.Y"}
    graph["inputs"].insert(0, {"as_custom_obj": {"name": "obj_injected",
                                                 "class_fqn": "__torch__.torch.classes.x.Y"}})
    doc["graph_module"]["signature"]["input_specs"].insert(0, {"custom_obj": {
        "arg": {"name": "obj_injected", "class_fqn": "__torch__.torch.classes.x.Y"},
        "custom_obj_name": breakout('x")', marker)}})
    return True


def _input_spec_keyword(doc: dict[str, Any], marker: Path) -> bool:
    """The keyword names of module()'s input spec: FX's pytree codegen writes
    `{'KEY':KEY}` into forward (a program with keyword inputs only)."""
    entries = doc["graph_module"].get("module_call_graph") or []
    sig = entries[0].get("signature") if entries else None
    if not sig or not isinstance(sig.get("in_spec"), str):
        return False
    spec = orjson.loads(sig["in_spec"])
    body = spec[1] if isinstance(spec, list) else spec
    children = body.get("children_spec") or []
    if len(children) != 2 or children[1].get("type") != "builtins.dict":
        return False
    keys = orjson.loads(children[1].get("context") or "[]")
    if not keys:
        return False
    keys[0] = breakout("a':0}),0)", marker)
    children[1]["context"] = orjson.dumps(keys).decode()
    sig["in_spec"] = orjson.dumps(spec).decode()
    return True


def _module_fqn(doc: dict[str, Any], marker: Path) -> bool:
    """A module call graph entry's FQN: only torch.export.unflatten reads it (it
    registers submodules by it), not load or module(): refused as a precaution."""
    entries = doc["graph_module"].get("module_call_graph") or []
    if len(entries) < 2:
        entries.append(copy.deepcopy(entries[0]) if entries else {"fqn": "", "signature": None})
    entries[-1]["fqn"] = breakout('x")', marker)
    return True


def _expr_str(doc: dict[str, Any], marker: Path) -> bool:
    """A symbolic size's `expr_str`: torch's deserializer sympify()s it, and sympify
    evaluates the text as Python."""
    for value in _graph(doc)["tensor_values"].values():
        for size in value.get("sizes", []):
            if "as_expr" in size:
                size["as_expr"]["expr_str"] = sympify_payload(marker)
                return True
    return False


def _guard(doc: dict[str, Any], marker: Path) -> bool:
    """guards_code: module() compiles the guards into a check its forward calls."""
    doc["guards_code"] = [f"{payload(marker)} is None", *(doc.get("guards_code") or [])]
    return True


def _range_key(doc: dict[str, Any], marker: Path) -> bool:
    """A range_constraints key: torch looks keys up, never parses them: refused."""
    ranges = doc.setdefault("range_constraints", {})
    ranges[payload(marker)] = {"min_val": 2, "max_val": 64}
    return True


def _pytree_type(doc: dict[str, Any], marker: Path) -> bool:
    """A pytree spec's type name: torch maps it through its registry of serialized
    types (an unknown one is an error, not an import): refused as a precaution."""
    entries = doc["graph_module"].get("module_call_graph") or []
    sig = entries[0].get("signature") if entries else None
    if not sig or not isinstance(sig.get("out_spec"), str):
        return False
    spec = orjson.loads(sig["out_spec"])
    body = spec[1] if isinstance(spec, list) else spec
    body["type"] = "os.system"
    sig["out_spec"] = orjson.dumps(spec).decode()
    return True


# FX_GRAPH_SHOW_META=1: FX writes each node's metadata as `key: pformat(str(value))`
# into a docstring of the code it execs; a `"""` in the text closes that docstring, and
# `"""...""" if PAYLOAD else """...` is one expression statement (no `;`, which is the
# delimiter of nn_module_stack's text, and no spaces, where pformat would split).
def _meta_breakout(marker: Path) -> str:
    return f'"""if({payload(marker)})else"""'


def _stack_trace(doc: dict[str, Any], marker: Path) -> bool:
    node = _graph(doc)["nodes"][0]
    node.setdefault("metadata", {})["stack_trace"] = "File" + _meta_breakout(marker)
    return True


def _custom_meta(doc: dict[str, Any], marker: Path) -> bool:
    node = _graph(doc)["nodes"][0]
    node.setdefault("metadata", {})["custom"] = orjson.dumps(
        {"note": "x" + _meta_breakout(marker)}).decode()
    return True


def _module_stack_key(doc: dict[str, Any], marker: Path) -> bool:
    """nn_module_stack keys reach code only in that docstring (module() does not
    unflatten; torch.export.unflatten reads the paths, not the keys)."""
    node = _graph(doc)["nodes"][0]
    node.setdefault("metadata", {})["nn_module_stack"] = (
        "L" + _meta_breakout(marker) + ",x,torch.nn.Module")
    return True


SHOW_META = {"FX_GRAPH_SHOW_META": "1"}

# field -> (when plain torch runs the code, or None; the maker; environment torch needs)
FIELDS: dict[str, tuple[str | None, Maker, dict[str, str] | None]] = {
    "operator argument": (INTERPRET, _operator_argument, None),
    "operator arguments": (None, _operator_list, None),
    "keyword name": (CALL, _keyword_name, None),
    "subgraph name": (CALL, _subgraph_name, None),
    "value name": (None, _value_name, None),
    "placeholder name": (LOAD, _placeholder_name, None),
    "parameter name": (CALL, _parameter_fqn, None),
    "buffer name": (CALL, _state_fqn("buffer", "buffer_name", "weights"), None),
    "tensor constant name": (CALL, _state_fqn("tensor_constant", "tensor_constant_name",
                                              "constants"), None),
    "custom obj name": (None, _custom_obj_fqn, None),
    "node name": (None, _node_name, None),
    "forward argument name": (None, _forward_arg_name, None),
    "input spec keyword": (CALL, _input_spec_keyword, None),
    "module FQN": (None, _module_fqn, None),
    "symbolic shape": (LOAD, _expr_str, None),
    "guard": (CALL, _guard, None),
    "range constraint key": (None, _range_key, None),
    "pytree type": (None, _pytree_type, None),
    "source_fn_stack": (None, _source_fn_target, None),
    "stack trace": (CALL, _stack_trace, SHOW_META),
    "custom metadata": (CALL, _custom_meta, SHOW_META),
    "module stack key": (CALL, _module_stack_key, SHOW_META),
}
# Fields our loader does not refuse, because they reach code only with an environment
# variable the job child removes: dead under ours, and the program runs normally.
NEUTRALIZED = frozenset(f for f, (_, _, env) in FIELDS.items() if env)


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
        configs = {f"{top}data/{which}/{program}_{which}_config.json": which
                   for which in ("weights", "constants")}
        with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                if info.filename == entry:
                    data = orjson.dumps(doc)
                elif info.filename in configs and renames:
                    which = configs[info.filename]
                    config = orjson.loads(data)
                    config["config"] = {renames.get(f"{which}:{k}", k): v
                                        for k, v in config["config"].items()}
                    data = orjson.dumps(config)
                zout.writestr(info.filename, data)
    return True


def variants(base: Path, label: str, out: Path, program: str | None = None,
             fields: list[str] | None = None) -> Iterator[Variant]:
    """One variant per field (of `fields`, default all) of one program of `base`;
    a field the program lacks (no buffer, no keyword input...) gives none."""
    names = program_records(base)
    program = program or sorted(names)[0]
    for field_name, (live, maker, env) in FIELDS.items():
        if fields is not None and field_name not in fields:
            continue
        slug = field_name.replace(" ", "-")
        work = out / f"{label.replace('/', '_')}-{slug}"
        work.mkdir(parents=True, exist_ok=True)
        marker = work / "marker"
        path = work / "variant.pt2"
        if _rewrite(base, path, program, maker, marker):
            yield Variant(label, program, field_name, live, path, marker, env)


# --- plain torch, the judge ------------------------------------------------------------

# One child runs plain torch on many variants in turn (a torch import costs seconds):
# for each, `load_pt2` (what torch.export.load does with the archive), FX's Interpreter
# on the graph (as check and profile run it), then module() and a call with the
# archive's own sample inputs; it prints, per variant, the first stage after which the
# marker exists ("" when none did), as one JSON line.
TORCH_CHILD = r"""
import json, os, sys, warnings
warnings.simplefilter("ignore")
import torch
try:
    import transformers.modeling_outputs  # the toy's output types, as pytree nodes
except ImportError:
    pass
from torch.export.pt2_archive._package import load_pt2
for job in json.loads(sys.argv[1]):
    saved = {k: os.environ.get(k) for k in job["env"]}
    os.environ.update(job["env"])
    seen, errors = "", []
    def stage(name):
        global seen
        if not seen and os.path.exists(job["marker"]):
            seen = name
    try:
        ep = load_pt2(job["path"]).exported_programs[job["program"]]
    except Exception as exc:
        errors.append(f"load: {type(exc).__name__}: {str(exc)[:160]}")
        ep = None
    stage("load")
    if ep is not None:
        try:
            n = sum(1 for node in ep.graph_module.graph.nodes if node.op == "placeholder")
            torch.fx.Interpreter(ep.graph_module).run(*[None] * n)
        except Exception as exc:
            errors.append(f"interpret: {type(exc).__name__}: {str(exc)[:160]}")
        stage("interpret")
        try:
            args, kwargs = ep.example_inputs
            ep.module()(*args, **kwargs)
        except Exception as exc:
            errors.append(f"call: {type(exc).__name__}: {str(exc)[:160]}")
        stage("call")
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    print(json.dumps({"id": job["id"], "live": seen, "errors": errors}), flush=True)
"""


def torch_verdicts(vs: list[Variant], env: dict[str, str], python: str) -> dict[str, dict]:
    """Run plain torch on every variant (one child process); id -> {"live": stage or
    "", "errors": [...]}."""
    import subprocess

    jobs = [{"id": v.id, "path": str(v.path), "program": v.program, "marker": str(v.marker),
             "env": v.env or {}} for v in vs]
    proc = subprocess.run([python, "-c", TORCH_CHILD, orjson.dumps(jobs).decode()],
                          capture_output=True, text=True, env=env, timeout=1800)
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            item = orjson.loads(line)
            out[item["id"]] = item
    missing = [v.id for v in vs if v.id not in out]
    if missing:
        raise RuntimeError(f"the torch child stopped before {missing[:3]}: {proc.stderr[-3000:]}")
    return out


# --- ours ----------------------------------------------------------------------------------

# One child runs our commands on many variants in turn, through the CLI's own `main`
# (the console script adds only its exit): per call, the exit status, stderr, whether
# the marker exists afterwards and whether torch was imported in this process.
OURS_CHILD = r"""
import io, json, os, sys
from inspector.cli import main
for job in json.loads(sys.argv[1]):
    saved = {k: os.environ.get(k) for k in job["env"]}
    os.environ.update(job["env"])
    err, real = io.StringIO(), sys.stderr
    out, real_out = io.StringIO(), sys.stdout
    sys.stderr, sys.stdout = err, out
    try:
        rc = main(job["argv"])
    except SystemExit as exc:
        rc = exc.code
    finally:
        sys.stderr, sys.stdout = real, real_out
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    print(json.dumps({"key": job["key"], "rc": rc, "stderr": err.getvalue()[-4000:],
                      "marker": os.path.exists(job["marker"]),
                      "torch": "torch" in sys.modules}), flush=True)
"""

COMMAND_ARGS = {
    "check": ["--device", "cpu"],
    "profile": ["--device", "cpu"],
    "run": ["--device", "cpu", "--max-tokens", "2", "--repeats", "1", "--warmup", "0"],
    "numerics": ["--device", "cpu", "--precision", "bf16"],
}


def ours(calls: list[tuple[str, Variant, list[str], dict[str, str]]], env: dict[str, str],
         python: str) -> dict[str, dict]:
    """Run `pt2-inspector ARGV` for each (key, variant, argv, extra environment) in one
    child; key -> {"rc", "stderr", "marker", "torch"}."""
    import subprocess

    jobs = [{"key": key, "argv": argv, "marker": str(v.marker), "env": extra}
            for key, v, argv, extra in calls]
    proc = subprocess.run([python, "-c", OURS_CHILD, orjson.dumps(jobs).decode()],
                          capture_output=True, text=True, env=env, timeout=1800)
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith('{"key"'):
            item = orjson.loads(line)
            out[item["key"]] = item
    missing = [key for key, *_ in calls if key not in out]
    if missing:
        raise RuntimeError(f"our child stopped before {missing[:3]}: {proc.stderr[-3000:]}")
    return out
