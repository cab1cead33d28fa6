"""What a program must be before torch may build it: the torch-free half of the loader.

`torch.export.load` executes things from the file: it unpickles the sample inputs and
`use_pickle` weights/constants, loads TorchBind objects, dlopens AOTInductor `.so`
files, `sympify`s symbolic-shape strings, resolves node targets and `as_operator`
arguments by attribute lookup from `torch` (a graph could name
`torch.serialization.os.system`), pastes names from the file into the Python source
FX generates and `exec`s (a keyword argument's name, a subgraph's name, node and
placeholder names, parameter FQNs...), and `ExportedProgram.module()` `exec`s the
archive's `guards_code`. torch 2.13's loader has no `weights_only`.

So, before torch sees anything (`vet`, no torch imported):
1. The core reader (`inspector.core.archive`) vets the zip (limits, names, layout) and
   classifies every record; records it marks risky (pickles, TorchBind, opaque
   objects, compiled libraries) are refused unless the caller passes `trust=True`,
   and the error names them. Sample inputs are never read, trusted or not. A record
   that declares far more bytes than it holds (a deflate bomb) is refused by its
   sizes (`core/inflation.py`), and a program of more than MAX_LOAD_NODES nodes is
   refused by a count of its text, before it is parsed.
2. Each program's JSON is walked field by field (the schema of
   torch/_export/serde/schema.py), and every string torch resolves or writes into
   code must be on an ALLOW-LIST:
   - node targets: a registered operator overload `torch.ops.<ns>.<op>.<overload>`
     (identifiers), a higher-order op `torch.ops.higher_order.<name>`, one of the
     SERIALIZER_BUILTINS torch's serializer itself writes, or one of functorch's
     pre-dispatch wrappers; `as_operator`/`as_operators` values: an operator overload
     or a higher-order op (the serializer writes nothing else there). Operators of
     namespaces other than aten/prims, and the higher-order ops that run code they
     are handed (CODE_HOPS), are loaded only with consent (`trust`), named in the
     question. That each operator exists in the torch that loads is confirmed in
     the job child by the dispatcher's registry (`jobs/load.py`), never by
     attribute lookups on the file's strings.
   - every name FX writes into generated source (FX_NAME_FIELDS: node and value
     names, placeholder and output names, keyword-argument names, subgraph names,
     forward argument names, keyword names of the input spec) is an ASCII Python
     identifier and not a keyword; every FQN (parameters, buffers, constants,
     custom objects, module paths) is dotted such identifiers (or indices, `layers.0`).
   - `expr_str` must parse in the strict srepr grammar (`inspector.core.symbolic`)
     using only known sympy/torch function names; range-constraint keys must be
     symbol names or a derived dim's printed arithmetic over them (`2*s40 + 1`,
     parsed by the same small grammar, never evaluated); `guards_code` must use only
     the guard grammar (`L['name'].size()[N]`, integers, comparisons, arithmetic);
     pytree specs may name only builtins/collections/torch/transformers output types.
   Anything else is an UnsafeProgramError naming the program, the node and the field:
   `trust` does NOT widen this. Consent covers pickles and native code a user knows
   is in the file, not code hidden in names: a genuine export never needs it.
3. `jobs/load.py` then builds the programs from exactly the bytes vetted here.

Stack traces and `custom` metadata never reach the code FX runs (only its
print_readable and, with FX_GRAPH_SHOW_META=1, a docstring: the job child drops that
variable before torch builds a graph), so they are not vetted here.

`info`/`audit` call the same checks (`name_problem`, `target_problem`,
`operator_value_problem`) on what the reader parsed, so what they flag and what the
loader refuses agree (core/audit.py: the `code-in-names` and `operator-argument`
findings).

Pure Python: no torch, no Qt.
"""

from __future__ import annotations

import keyword
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from inspector.core import archive as core
from inspector.core.errors import ArchiveError, InspectorError
from inspector.core.inflation import refuse_bombs
from inspector.core.symbolic import Call, ExprSyntaxError, parse_printed, parse_srepr

EXTRA_RECORD = "pt2_inspector.json"  # written by jobs/export.py


class UntrustedArchiveError(InspectorError):
    """The archive holds records torch would execute; loading needs explicit consent."""

    def __init__(self, message: str, records: list[str]) -> None:
        super().__init__(message)
        self.records = records


class UnsafeProgramError(InspectorError):
    """A program's JSON holds strings outside the grammar a genuine export produces."""

    # What a job child sends as the failure's details (the window's Details part)
    # instead of its traceback: the file is at fault, not our code.
    details = ("pt2-inspector loads a program only when every string torch resolves "
               "or writes into the code it generates is what a genuine export writes: "
               "torch operators, Python identifiers, dotted parameter paths, symbolic "
               "sizes. This file holds one that is not; torch would run it as code. "
               "--trust does not change this (README: Safety).")


# --- limits ---------------------------------------------------------------------

def _load_node_limit(default: int = 100_000) -> int:
    """Nodes per program that `check`/`profile`/`run` hand to torch. torch's
    deserializer and FX cost ~0.2 ms and ~10 KB per node (a 300,000-node hostile
    program: 66 s of CPU and 3.4 GB before it failed), so past this the program is
    refused before torch is imported. The reader opens more (program/parser.py's
    MAX_NODES); PT2I_MAX_NODES raises both."""
    try:
        value = int(os.environ.get("PT2I_MAX_NODES", default))
    except ValueError:
        return default
    return value if value > default else default


MAX_LOAD_NODES = _load_node_limit()
MAX_NAME_CHARS = 1024  # a node name, an FQN part...: Python has no limit, FX has no use for more


# --- grammars -----------------------------------------------------------------

_SYMBOL = re.compile(r"^[a-z]{1,6}\d{1,9}$")  # s0, u12, ps3, zuf0, ...
# torch's deserializer int()s what follows these in a range key (SymT.UNBACKED_*)
_UNBACKED_PREFIXES = ("u", "zuf")
_NUMBER_TEXT = re.compile(r"^[-+]?\d+(\.\d*)?([eE][-+]?\d+)?$")
_FUNCTIONS = frozenset("""
Symbol Integer Rational Float Add Mul Pow Max Min Mod Abs floor ceiling sqrt Neg Name
Eq Ne Lt Le Gt Ge Equality Unequality StrictLessThan StrictGreaterThan LessThan GreaterThan
And Or Not Piecewise ExprCondPair oo zoo nan int_oo Infinity NegativeInfinity IntInfinity
NegativeIntInfinity BooleanTrue BooleanFalse Zero One NegativeOne Half
FloorDiv ModularIndexing Where PythonMod CleanDiv CeilToInt FloorToInt CeilDiv LShift RShift
PowByNatural FloatPow FloatTrueDiv IntTrueDiv IsNonOverlappingAndDenseIndicator TruncToFloat
TruncToInt RoundToInt RoundDecimal ToFloat Identity
""".split())
_ASSUMPTIONS = frozenset("""positive negative integer real nonnegative nonpositive finite
infinite zero nonzero even odd rational commutative precision""".split())

_GUARD_TOKEN = re.compile(r"""\s*(?:
    L\['[A-Za-z_][A-Za-z0-9_]{0,200}'\]
  | \[\d{1,9}\]
  | \.(?:size|stride)\(\) | \.storage_offset\(\) | \.dim\(\)
  | \d{1,30}
  | ==|!=|<=|>=|<|>|//|\*\*|[-+*%()]
  | \b(?:and|or|not|True|False)\b
)""", re.VERBOSE)

MAX_EXPR_CHARS = 4096
MAX_GUARD_CHARS = 4096
_SAFE_TYPE_PREFIXES = ("builtins.", "collections.", "torch.", "transformers.modeling_outputs.")


# --- the operator allow-list ----------------------------------------------------

# What torch 2.13's serializer writes as a node target besides operator overloads and
# higher-order ops: `serialize_operator(t)` (f"{t.__module__}.{t.__name__}") of each
# entry of its `_SYM_OPS` table and of `operator.getitem` (the outputs of multi-output
# nodes), torch/_export/serde/serialize.py. tests/unit/test_vetting.py derives this
# set from that table in the installed torch and fails when they differ.
SERIALIZER_BUILTINS = frozenset((
    "_operator.getitem",
    "_operator.eq", "_operator.ne", "_operator.le", "_operator.ge", "_operator.lt",
    "_operator.gt", "_operator.neg", "_operator.pos", "_operator.mul", "_operator.add",
    "_operator.sub", "_operator.floordiv", "_operator.mod", "_operator.pow",
    "_operator.truediv", "_operator.and_", "_operator.or_", "_operator.lshift",
    "_operator.rshift",
    "math.trunc",
    "torch.sym_not", "torch.sym_int", "torch.sym_float", "torch.sym_ite", "torch.sym_max",
    "torch.sym_min", "torch._sym_sqrt",  # torch.sym_sqrt.__name__ is "_sym_sqrt"
))
# functorch's pre-dispatch wrappers: export writes them as plain call_function nodes
# where a program vmaps (associative_scan's generic combine does); torch's verifier
# lists them as allowed functions. Each only pushes/pops a functorch level or
# (un)wraps a batched/dual tensor.
PREDISPATCH_WRAPPERS = (
    "_add_batch_dim", "_remove_batch_dim", "_vmap_increment_nesting", "_vmap_decrement_nesting",
    "lazy_load_decompositions", "_jvp_increment_nesting", "_jvp_decrement_nesting",
    "_make_dual", "_unpack_dual", "_unwrap_for_grad", "_enter_dual_level", "_exit_dual_level",
)
_PREDISPATCH = frozenset(f"torch._functorch.predispatch.{n}" for n in PREDISPATCH_WRAPPERS)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_OVERLOAD = re.compile(rf"torch\.ops\.({_IDENT})\.({_IDENT})\.({_IDENT})")
_HOP = re.compile(rf"torch\.ops\.higher_order\.({_IDENT})")
CORE_NAMESPACES = frozenset(("aten", "prims"))
# Attributes of `torch.ops` itself (torch/_ops.py `_Ops`): not operator namespaces.
_OPS_ATTRIBUTES = frozenset(("load_library", "import_module", "loaded_libraries", "_dir",
                             "higher_order"))
# aten ops that touch files: not code execution, but no graph we run needs them.
_DENIED_OPS = re.compile(r"torch\.ops\.aten\.(?:from_file|_load_\w*|save)\.")
# Higher-order ops that run code they are handed (a compiled delegate, inline
# assembly, a Triton kernel, a TorchBind method): loaded only with consent, like a
# custom namespace's ops.
CODE_HOPS = frozenset(("aoti_call_delegate", "executorch_call_delegate",
                       "inline_asm_elementwise", "inductor_compiled_code", "call_torchbind",
                       "triton_kernel_wrapper_mutation", "triton_kernel_wrapper_functional"))


@dataclass(frozen=True)
class Operator:
    """An operator a program names, as the dispatcher knows it."""

    text: str  # as written: torch.ops.aten.add.Tensor
    kind: str  # "overload", "higher_order", "builtin"
    namespace: str = ""  # aten (overloads), higher_order
    name: str = ""  # add / cond
    overload: str = ""  # Tensor / default

    @property
    def needs_consent(self) -> bool:
        return ((self.kind == "overload" and self.namespace not in CORE_NAMESPACES)
                or (self.kind == "higher_order" and self.name in CODE_HOPS))


def parse_operator(text: Any, *, builtins: bool = True) -> Operator | None:
    """The operator `text` names when it is on the allow-list (shape only: whether it
    exists in a torch is the dispatcher's to say), else None."""
    if not isinstance(text, str) or len(text) > 512:
        return None
    if builtins and (text in SERIALIZER_BUILTINS or text in _PREDISPATCH):
        return Operator(text, "builtin")
    m = _HOP.fullmatch(text)
    if m:
        return Operator(text, "higher_order", "higher_order", m.group(1))
    m = _OVERLOAD.fullmatch(text)
    if m:
        ns, op, overload = m.groups()
        if ns in _OPS_ATTRIBUTES or ns.startswith("__") or _DENIED_OPS.match(text):
            return None
        return Operator(text, "overload", ns, op, overload)
    return None


def target_problem(target: Any) -> str | None:
    """Why a node target is refused (None: allowed, subject to consent and the registry)."""
    if parse_operator(target) is not None:
        return None
    return (f"{_shown(target)} is not a torch operator (an operator overload, a "
            "higher-order op, or one of the few Python functions torch's serializer "
            "writes); torch would resolve it by attribute lookup and call whatever it names")


def operator_value_problem(value: Any) -> str | None:
    """Why an `as_operator` argument value is refused (None: allowed)."""
    if parse_operator(value, builtins=False) is not None:
        return None
    return (f"{_shown(value)} is not a torch operator overload or "
            "higher-order op; torch would resolve it by attribute lookup and hand whatever "
            "it names to the op to call")


# --- names FX writes into code ------------------------------------------------------

_ASCII_IDENT = re.compile(_IDENT)
_FQN_PART = re.compile(rf"{_IDENT}|[0-9]+")

# Where torch 2.13 writes a name from the file into the source it generates and execs
# (torch/fx/graph.py `_gen_python_code`, `_PyTreeCodeGen`, `_format_target`;
# torch/_export/serde/serialize.py sets node names without FX's sanitizing):
FX_NAME_FIELDS = (
    "node name",  # `name = target(...)`, `;  name = None`, `_rf_{name}`
    "value name",  # outputs, graph inputs/outputs, argument references: node names
    "keyword name",  # a higher-order op's or wrapper's kwarg: f"{name} = {value}"
    "subgraph name",  # as_graph: `getattr(self, "NAME")`, register_module
    "placeholder name",  # the def line: `def forward(self, NAME, ...)`
    "forward argument name",  # module_call_graph: the def line of module()
    "input spec keyword",  # in_spec kwargs keys: `{'KEY':KEY}`
    "FQN",  # parameters, buffers, constants, custom objects: `self.a.b` / getattr
)


def name_problem(value: Any, *, keyword_ok: bool = False) -> str | None:
    """Why `value` may not be pasted into Python source as a name (None: it may)."""
    if not isinstance(value, str):
        return f"{_shown(value)} is not a string"
    if len(value) > MAX_NAME_CHARS:
        return f"{_shown(value)} is longer than {MAX_NAME_CHARS} characters"
    if not _ASCII_IDENT.fullmatch(value):
        return f"{_shown(value)} is not a Python identifier"
    if not keyword_ok and keyword.iskeyword(value):
        return f"{_shown(value)} is a Python keyword"
    return None


def fqn_problem(value: Any) -> str | None:
    """Why `value` is not a dotted FQN of identifiers and indices (None: it is)."""
    if not isinstance(value, str):
        return f"{_shown(value)} is not a string"
    if len(value) > MAX_NAME_CHARS:
        return f"{_shown(value)} is longer than {MAX_NAME_CHARS} characters"
    for part in value.split("."):
        if not _FQN_PART.fullmatch(part) or keyword.iskeyword(part):
            return (f"{_shown(value)} is not a dotted path of Python identifiers "
                    "(such as layers.0.weight)")
    return None


def _shown(value: Any) -> str:
    """A value for an error message: repr (control characters escaped), cut short."""
    text = repr(value) if isinstance(value, str) else type(value).__name__
    return text if len(text) <= 90 else text[:80] + "…" + text[-6:]


# --- expressions and guards -------------------------------------------------------

def check_expr(text: Any, where: str) -> None:
    """Raise UnsafeProgramError unless `text` is srepr made of known functions."""
    if not isinstance(text, str) or len(text) > MAX_EXPR_CHARS:
        raise UnsafeProgramError(f"{where}: symbolic shape is not a short string")
    if _SYMBOL.fullmatch(text):
        return
    try:
        tree = parse_srepr(text)
    except ExprSyntaxError as exc:
        raise UnsafeProgramError(
            f"{where}: symbolic shape {text[:80]!r} is outside the srepr grammar ({exc})"
        ) from None
    _check_tree(tree, f"symbolic shape {text[:80]!r}", where)


def check_range_key(key: Any, where: str) -> None:
    """A range_constraints key: a symbol name, or a derived dim's printed expression
    (`2*s40 + 1`, from `torch.export.Dim` arithmetic). torch's deserializer never
    parses a key: it looks keys up by `str()` of the symbols and expressions it
    builds from the vetted `expr_str`s, and reads the number after an unbacked
    prefix (`u12`, `zuf3`) with int(). So a key must be printed arithmetic over
    symbol names and known functions, and only a plain symbol may start with an
    unbacked prefix (anything else would break torch's int())."""
    if not isinstance(key, str) or len(key) > MAX_EXPR_CHARS:
        raise UnsafeProgramError(f"{where}: range constraint key is not a short string")
    if _SYMBOL.fullmatch(key):
        return
    what = f"range constraint key {key[:80]!r}"
    if key.startswith(_UNBACKED_PREFIXES):
        raise UnsafeProgramError(f"{where}: {what} starts like an unbacked symbol "
                                 "but is not a symbol name")
    try:
        tree = parse_printed(key)
    except ExprSyntaxError as exc:
        raise UnsafeProgramError(f"{where}: {what} is neither a symbol name nor a "
                                 f"derived dim's expression ({exc})") from None
    _check_tree(tree, what, where)


def _check_tree(tree: Any, what: str, where: str) -> None:
    stack: list[tuple[Any, Any]] = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, Call):
            if node.head not in _FUNCTIONS:
                raise UnsafeProgramError(f"{where}: unknown function {node.head!r} in {what}")
            if node.head == "Name" and not (
                isinstance(node.args[0], str) and _SYMBOL.fullmatch(node.args[0])
            ):
                raise UnsafeProgramError(f"{where}: unknown name {node.args[0]!r} in {what}")
            for key, value in node.kwargs:
                if key not in _ASSUMPTIONS or not isinstance(value, (bool, int)):
                    raise UnsafeProgramError(f"{where}: unexpected keyword {key!r} in {what}")
            stack.extend((a, node) for a in node.args)
        elif isinstance(node, str):
            head = parent.head if isinstance(parent, Call) else None
            ok = (head == "Symbol" and _SYMBOL.fullmatch(node)) or (
                head in ("Float", "Integer", "Rational") and _NUMBER_TEXT.fullmatch(node)
            ) or (head == "Name")
            if not ok:
                raise UnsafeProgramError(f"{where}: unexpected string {node[:40]!r} in {what}")


def check_guard(text: Any, where: str) -> None:
    if not isinstance(text, str) or len(text) > MAX_GUARD_CHARS:
        raise UnsafeProgramError(f"{where}: guard is not a short string")
    pos, depth = 0, 0
    stripped = text.rstrip()
    while pos < len(stripped):
        m = _GUARD_TOKEN.match(stripped, pos)
        if not m or m.end() == pos:
            raise UnsafeProgramError(
                f"{where}: guard {text[:80]!r} is outside the guard grammar "
                f"(at {stripped[pos:pos + 20]!r})"
            )
        tok = m.group().strip()
        depth += tok == "("
        depth -= tok == ")"
        if depth < 0 or depth > 64:
            raise UnsafeProgramError(f"{where}: guard {text[:80]!r} has unbalanced parentheses")
        pos = m.end()


def check_target(target: Any, where: str) -> None:
    """Raise UnsafeProgramError unless `target` is on the operator allow-list."""
    problem = target_problem(target)
    if problem:
        raise UnsafeProgramError(f"{where}: node target {problem} ({_REFUSED})")


# --- the program walk ---------------------------------------------------------------

_REFUSED = "refused whatever --trust says: a genuine export never needs it"

# Argument kinds whose value is a list of TensorArgument / Sym*Argument
_TENSOR_LISTS = ("as_tensors",)
_SYM_ARGS = ("as_sym_int", "as_sym_float", "as_sym_bool")
_SYM_LISTS = ("as_sym_ints", "as_sym_floats", "as_sym_bools")


@dataclass
class ProgramFacts:
    """What the walk of one program found (beyond refusing)."""

    pytree_types: set[str] = field(default_factory=set)
    operators: dict[str, Operator] = field(default_factory=dict)  # text -> operator
    nodes: int = 0


class _Walk:
    """The walk of one program's JSON, by the fields of torch's schema. Raises
    UnsafeProgramError at the first string that torch would resolve or paste into
    code and that is off the allow-list."""

    def __init__(self, program: str) -> None:
        self.program = program
        self.facts = ProgramFacts()

    # -- messages
    def fail(self, where: str, what: str, problem: str) -> None:
        raise UnsafeProgramError(
            f"program {self.program!r}: {where}: {what} {problem}; torch would run it as "
            f"code when it loads or runs the program ({_REFUSED})")

    def name(self, value: Any, where: str, what: str, *, keyword_ok: bool = False) -> None:
        problem = name_problem(value, keyword_ok=keyword_ok)
        if problem:
            self.fail(where, what, problem)

    def fqn(self, value: Any, where: str, what: str) -> None:
        problem = fqn_problem(value)
        if problem:
            self.fail(where, what, problem)

    def operator(self, value: Any, where: str, what: str, *, builtins: bool) -> None:
        op = parse_operator(value, builtins=builtins)
        if op is None:
            problem = target_problem(value) if builtins else operator_value_problem(value)
            raise UnsafeProgramError(f"program {self.program!r}: {where}: {what} {problem} "
                                     f"({_REFUSED})")
        self.facts.operators.setdefault(op.text, op)

    # -- the schema
    def program_doc(self, doc: Any) -> None:
        where = f"program {self.program!r}"
        if not isinstance(doc, dict) or not isinstance(doc.get("graph_module"), dict):
            raise UnsafeProgramError(f"{where}: not an exported program")
        for key in _dict(doc.get("range_constraints")):
            check_range_key(key, where)
        for guard in _list(doc.get("guards_code")):
            check_guard(guard, where)
        gm = doc["graph_module"]
        graph = gm.get("graph")
        if not isinstance(graph, dict):
            raise UnsafeProgramError(f"{where}: its graph module has no graph")
        self.graph(graph, "graph")
        self.signature(_dict(gm.get("signature")))
        for i, entry in enumerate(_list(gm.get("module_call_graph"))):
            self.module_call(_dict(entry), i)
        # symbolic sizes and pytree specs, wherever they are
        self.scan_exprs_and_specs(doc)

    def graph(self, graph: dict[str, Any], where: str) -> None:
        stack = [(graph, where)]
        while stack:
            g, gwhere = stack.pop()
            for i, arg in enumerate(_list(g.get("inputs"))):
                self.argument(arg, f"{gwhere} input {i}", stack, "placeholder name")
            for i, arg in enumerate(_list(g.get("outputs"))):
                self.argument(arg, f"{gwhere} output {i}", stack)
            for table in ("tensor_values", "sym_int_values", "sym_bool_values",
                          "sym_float_values", "custom_obj_values"):
                for key in _dict(g.get(table)):
                    self.name(key, f"{gwhere} {table}", "value name")
            for node in _list(g.get("nodes")):
                self.node(_dict(node), gwhere, stack)

    def node(self, node: dict[str, Any], gwhere: str, stack: list) -> None:
        self.facts.nodes += 1
        if self.facts.nodes > MAX_LOAD_NODES:
            raise ArchiveError(_too_many(self.program, f"more than {MAX_LOAD_NODES:,}"))
        label = node.get("name")
        out0 = _first_output_name(node)
        shown = label if isinstance(label, str) and label else out0
        where = f"node {shown!r}" if isinstance(shown, str) else f"a node of {gwhere}"
        if gwhere != "graph":
            where += f" ({gwhere})"
        target = node.get("target")
        self.operator(target, where, "node target", builtins=True)
        if label not in (None, ""):
            self.name(label, where, "node name")
        is_overload = isinstance(target, str) and _OVERLOAD.fullmatch(target) is not None
        for i, inp in enumerate(_list(node.get("inputs"))):
            inp = _dict(inp)
            kw = inp.get("name", "")
            if kw != "" or not is_overload:
                if kw != "":
                    # an operator overload's keyword names are its schema's (torch
                    # takes them from there: `from` is one); anything else's are pasted
                    self.name(kw, where, f"input {i}'s keyword name", keyword_ok=is_overload)
            self.argument(inp.get("arg"), f"{where} input {i}", stack)
        for i, out in enumerate(_list(node.get("outputs"))):
            self.argument(out, f"{where} output {i}", stack)
        self.metadata(_dict(node.get("metadata")), where)

    def argument(self, arg: Any, where: str, stack: list, what: str = "value name") -> None:
        if not isinstance(arg, dict):
            return
        for kind, value in arg.items():
            if kind in ("as_tensor", "as_custom_obj"):
                self.name(_dict(value).get("name"), where, what)
            elif kind in _TENSOR_LISTS:
                for v in _list(value):
                    self.name(_dict(v).get("name"), where, what)
            elif kind in ("as_optional_tensors",):
                for v in _list(value):
                    if "as_tensor" in _dict(v):
                        self.name(_dict(v["as_tensor"]).get("name"), where, what)
            elif kind == "as_optional_tensor":
                if "as_tensor" in _dict(value):
                    self.name(_dict(value["as_tensor"]).get("name"), where, what)
            elif kind == "as_nested_tensors":
                for inner in _list(value):
                    for v in _list(inner):
                        self.name(_dict(v).get("name"), where, what)
            elif kind in _SYM_ARGS:
                if "as_name" in _dict(value):
                    self.name(value["as_name"], where, what)
            elif kind in _SYM_LISTS:
                for v in _list(value):
                    if "as_name" in _dict(v):
                        self.name(v["as_name"], where, what)
            elif kind == "as_graph":
                value = _dict(value)
                self.name(value.get("name"), where, "subgraph name")
                sub = value.get("graph")
                if isinstance(sub, dict):
                    stack.append((sub, f"subgraph {value.get('name')!r}"))
            elif kind == "as_operator":
                self.operator(value, where, "operator argument", builtins=False)
            elif kind == "as_operators":
                for v in _list(value):
                    self.operator(v, where, "operator argument", builtins=False)
            elif kind == "as_string_to_argument":
                for v in _dict(value).values():
                    self.argument(v, where, stack)

    def metadata(self, meta: dict[str, Any], where: str) -> None:
        problem = source_fn_problem(meta.get("source_fn_stack"))
        if problem:
            self.fail(where, "metadata source_fn_stack", problem)

    def signature(self, sig: dict[str, Any]) -> None:
        for i, spec in enumerate(_list(sig.get("input_specs"))):
            self.spec(_dict(spec), f"input spec {i}", _INPUT_FQNS)
        for i, spec in enumerate(_list(sig.get("output_specs"))):
            self.spec(_dict(spec), f"output spec {i}", _OUTPUT_FQNS)

    def spec(self, spec: dict[str, Any], where: str, fqns: dict[str, str]) -> None:
        for kind, body in spec.items():
            body = _dict(body)
            if kind == "constant_input":
                self.name(body.get("name"), where, "placeholder name")
                continue
            arg = body.get("arg")
            if kind in ("user_input", "user_output"):
                self.argument(arg, where, [], "placeholder name" if kind == "user_input"
                              else "value name")
            else:
                self.name(_dict(arg).get("name"), where, "placeholder name"
                          if where.startswith("input") else "value name")
            key = fqns.get(kind)
            if key is not None:
                if key == "user_input_name":
                    self.name(body.get(key), where, key.replace("_", " "))
                else:
                    self.fqn(body.get(key), where, key.replace("_", " "))

    def module_call(self, entry: dict[str, Any], i: int) -> None:
        where = f"module call graph entry {i}"
        fqn = entry.get("fqn")
        if fqn != "":
            self.fqn(fqn, where, "module FQN")
        sig = _dict(entry.get("signature"))
        for arg in _list(sig.get("inputs")) + _list(sig.get("outputs")):
            self.argument(arg, where, [])
        for name in _list(sig.get("forward_arg_names")):
            self.name(name, where, "forward argument name")
        if i == 0 and isinstance(sig.get("in_spec"), str):
            for key in _kwarg_keys(sig["in_spec"], f"program {self.program!r}: {where}"):
                self.name(key, where, "input spec keyword")

    def scan_exprs_and_specs(self, doc: dict[str, Any]) -> None:
        where = f"program {self.program!r}"
        stack: list[Any] = [doc]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if "expr_str" in item:
                    check_expr(item["expr_str"], where)
                for key in ("in_spec", "out_spec"):
                    if isinstance(item.get(key), str):
                        self.facts.pytree_types |= _spec_types(item[key], where)
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        bad = sorted(t for t in self.facts.pytree_types if not t.startswith(_SAFE_TYPE_PREFIXES))
        if bad:
            raise UnsafeProgramError(f"{where}: inputs/outputs use Python types pt2-inspector "
                                     f"does not load ({', '.join(bad[:5])})")


def source_fn_problem(text: Any) -> str | None:
    """Why a node's `source_fn_stack` metadata is refused (None: allowed). torch
    resolves each entry's target by attribute lookups from torch
    (deserialize_meta_func); it only lands in node.meta, but a lookup runs
    properties and lazy imports: only dotted names are let through."""
    if not isinstance(text, str) or not text:
        return None
    for item in text.split(_ST_DELIMITER):
        parts = item.split(",")
        if len(parts) != 2 or not _SOURCE_FN.fullmatch(parts[1]):
            return f"entry {_shown(item)} is not `name,dotted.path`"
    return None


def docstring_problem(text: Any, key: str = "") -> str | None:
    """Why a metadata text (a stack trace, custom metadata, a module stack) would
    run as code if FX printed it: with FX_GRAPH_SHOW_META=1, FX writes node metadata
    into a docstring of the code it execs, and a `\"\"\"` closes it. Not refused:
    the job child removes that variable before torch builds a graph (jobs/load.py),
    and a genuine stack trace may quote such a line of code; info/audit name it."""
    if key == "custom" and isinstance(text, str):  # FX prints the decoded dict's str()
        try:
            text = str(orjson.loads(text))
        except orjson.JSONDecodeError:
            pass
    if isinstance(text, str) and '"""' in text:
        return ("holds a triple quote, which closes the docstring FX writes node metadata "
                "into when FX_GRAPH_SHOW_META=1 (what follows would run as code; "
                "pt2-inspector's jobs remove that variable)")
    return None


_ST_DELIMITER = ";"  # torch/_export/serde/serialize.py ST_DELIMITER
_SOURCE_FN = re.compile(r"[A-Za-z_<>][A-Za-z0-9_<>]*(?:\.[A-Za-z_<>][A-Za-z0-9_<>]*)*")
_INPUT_FQNS = {"parameter": "parameter_name", "buffer": "buffer_name",
               "tensor_constant": "tensor_constant_name", "custom_obj": "custom_obj_name"}
_OUTPUT_FQNS = {"buffer_mutation": "buffer_name", "parameter_mutation": "parameter_name",
                "gradient_to_parameter": "parameter_name",
                "gradient_to_user_input": "user_input_name",
                "user_input_mutation": "user_input_name"}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _first_output_name(node: dict[str, Any]) -> str | None:
    for out in _list(node.get("outputs")):
        out = _dict(out)
        if isinstance(_dict(out.get("as_tensor")).get("name"), str):
            return out["as_tensor"]["name"]
        for kind in _SYM_ARGS:
            if isinstance(_dict(out.get(kind)).get("as_name"), str):
                return out[kind]["as_name"]
        for v in _list(out.get("as_tensors")):
            if isinstance(_dict(v).get("name"), str):
                return v["name"]
    return None


def _kwarg_keys(text: str, where: str) -> list[Any]:
    """The keyword names of an input spec `(args, kwargs)`: FX's pytree codegen writes
    them as `{'KEY':KEY}` into module()'s forward."""
    try:
        spec = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise UnsafeProgramError(f"{where}: a pytree spec is not JSON") from None
    if isinstance(spec, list) and len(spec) == 2 and isinstance(spec[0], int):
        spec = spec[1]  # [treespec version, spec]
    children = _list(_dict(spec).get("children_spec"))
    if (_dict(spec).get("type") != "builtins.tuple" or len(children) != 2
            or _dict(children[0]).get("type") != "builtins.tuple"
            or _dict(children[1]).get("type") != "builtins.dict"):
        return []
    try:
        keys = orjson.loads(_dict(children[1]).get("context") or "[]")
    except (orjson.JSONDecodeError, TypeError):
        raise UnsafeProgramError(f"{where}: the input spec's keyword names are not JSON") from None
    return keys if isinstance(keys, list) else [keys]


def _spec_types(text: str, where: str) -> set[str]:
    try:
        spec = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise UnsafeProgramError(f"{where}: a pytree spec is not JSON") from None
    found: set[str] = set()
    stack = [spec]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("type"), str):
                found.add(item["type"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _too_many(program: str, count: str) -> str:
    return (f"program {program!r} has {count} nodes, over the limit of {MAX_LOAD_NODES:,} "
            "nodes per program that check, profile and run hand to torch (set "
            "PT2I_MAX_NODES=N to raise it)")


def count_nodes(raw: bytes) -> int:
    """An upper bound of the nodes in a program's JSON text, without parsing it: the
    `"target"` keys (torch's schema has no other key of that name, and inside a JSON
    string the quotes around it would be escaped)."""
    return raw.count(b'"target"')


def check_program_facts(name: str, doc: Any) -> ProgramFacts:
    """Vet one program's JSON (UnsafeProgramError / ArchiveError); what it found."""
    walk = _Walk(name)
    walk.program_doc(doc)
    return walk.facts


def check_program(name: str, doc: Any) -> set[str]:
    """Vet one program's JSON; return the pytree type names its signature uses."""
    return check_program_facts(name, doc).pytree_types


# --- the reader's view (info/audit) ------------------------------------------------------
#
# core/audit.py's `code-in-names` and `operator-argument` rules run these same checks
# over what the reader parsed, so what it flags and what the loader refuses agree.
# On a big program the reader keeps nodes as text until asked for (core/program/
# lean.py); these screens find, at C speed, the few nodes a check could refuse, so
# the audit makes only those (a superset: each is then judged by the checks above).

_KEYWORDS = "|".join(sorted(keyword.kwlist, key=len, reverse=True)).encode()
# a name-like JSON value that is not a short ASCII identifier (or is a keyword), an
# operator argument, or an escape that could spell anything
SUSPECT_ARGUMENTS = re.compile(
    rb'"(?:name|as_name)"\s*:\s*(?:[^"\s]|"(?!"|[A-Za-z_][A-Za-z0-9_]{0,1023}"))'
    rb'|"(?:name|as_name)"\s*:\s*"(?:' + _KEYWORDS + rb')"'
    rb'|"as_operators?"|\\u')


def suspect_metadata(key: str | None, text: bytes) -> bool:
    """Whether a node's metadata value (its JSON text; key None: the whole metadata
    text) may fail source_fn_problem or docstring_problem: decoded only when the
    bytes could (a genuine export's stack traces and module paths hold no triple
    quote; source_fn_stack and custom values are decoded and checked)."""
    if key is None or b"\\u" in text:
        return True
    if key in ("source_fn_stack", "custom"):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return True
        return (source_fn_problem(value) if key == "source_fn_stack"
                else docstring_problem(value, key)) is not None
    return b'\\"\\"\\"' in text


def bad_names(names: Iterable[Any], *, keyword_ok: bool = False) -> list[int]:
    """The indexes of `names` that name_problem refuses (None entries are skipped):
    one regex over them all joined, then a look at each only when it fails."""
    names = list(names)
    strs = [n for n in names if isinstance(n, str)]
    if all(type(n) is str or n is None for n in names):
        joined = "\n".join(strs)
        if _ALL_IDENTS.fullmatch(joined) and max(map(len, strs), default=0) <= MAX_NAME_CHARS \
                and (keyword_ok or not _HAS_KEYWORD.search(joined)):
            return []
    return [i for i, n in enumerate(names)
            if n is not None and name_problem(n, keyword_ok=keyword_ok)]


_ALL_IDENTS = re.compile(rf"(?:{_IDENT}(?:\n{_IDENT})*)?")
_HAS_KEYWORD = re.compile(r"(?m)^(?:" + _KEYWORDS.decode() + r")$")


def is_overload(target: Any) -> bool:
    """Whether `target` names an operator overload (its keyword names are its
    schema's: `from` may be one)."""
    return isinstance(target, str) and _OVERLOAD.fullmatch(target) is not None


def argument_problems(kind: str, value: Any, what: str = "value name") -> list[tuple[str, str]]:
    """(field, problem) of one argument ({kind: value}, as the file holds it), by the
    loader's walk of arguments."""
    walk = _Collect("")
    walk.argument({kind: value}, "", [], what)
    return walk.found


def node_problems(node: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, problem) of one node as the file holds it, by the loader's own walk
    (its subgraphs' nodes are walked as nodes of their own)."""
    walk = _Collect("")
    walk.node(node, "graph", [])
    return walk.found


def module_call_problems(entries: list[Any]) -> list[tuple[str, str]]:
    """(field, problem) of a program's module call graph, by the loader's walk."""
    walk = _Collect("")
    for i, entry in enumerate(entries):
        try:
            walk.module_call(_dict(entry), i)
        except UnsafeProgramError as exc:
            walk.found.append(("input spec", str(exc)))
    return walk.found


def expr_problem(text: Any) -> str | None:
    """Why a symbolic size's `expr_str` is refused (None: allowed)."""
    try:
        check_expr(text, "")
    except UnsafeProgramError as exc:
        return str(exc).removeprefix(": ")
    return None


def size_problem(text: Any) -> str | None:
    """Why a symbolic size as the reader renders it (sympy's printed form of the
    vetted `expr_str`, or the text itself where that is not srepr) is not one: the
    printed grammar range keys use, over known functions (None: it is)."""
    if not isinstance(text, str) or len(text) > MAX_EXPR_CHARS:
        return "is not a short string"
    if _SYMBOL.fullmatch(text) or _NUMBER_TEXT.fullmatch(text):
        return None
    try:
        tree = parse_printed(text)
    except ExprSyntaxError as exc:
        return f"{_shown(text)} is outside the grammar of symbolic sizes ({exc})"
    try:
        _check_tree(tree, f"symbolic size {text[:80]!r}", "")
    except UnsafeProgramError as exc:
        return str(exc).removeprefix(": ")
    return None


def range_key_problem(key: Any) -> str | None:
    try:
        check_range_key(key, "")
    except UnsafeProgramError as exc:
        return str(exc).removeprefix(": ")
    return None


def guard_problem(text: Any) -> str | None:
    try:
        check_guard(text, "")
    except UnsafeProgramError as exc:
        return str(exc).removeprefix(": ")
    return None


def pytree_problem(spec: Any) -> str | None:
    """Why a pytree spec (JSON text) is refused: a type outside the loader's list."""
    if not isinstance(spec, str):
        return None
    try:
        bad = sorted(t for t in _spec_types(spec, "") if not t.startswith(_SAFE_TYPE_PREFIXES))
    except UnsafeProgramError:
        return "is not JSON"
    return f"names Python types pt2-inspector does not load ({', '.join(bad[:5])})" if bad else None


class _Collect(_Walk):
    """The loader's walk, collecting (field, problem) instead of raising."""

    def __init__(self, program: str) -> None:
        super().__init__(program)
        self.found: list[tuple[str, str]] = []

    def fail(self, where: str, what: str, problem: str) -> None:
        self.found.append((what, problem))

    def operator(self, value: Any, where: str, what: str, *, builtins: bool) -> None:
        if parse_operator(value, builtins=builtins) is None:
            self.found.append((what, target_problem(value) if builtins
                               else operator_value_problem(value)))

    def node(self, node: dict[str, Any], gwhere: str, stack: list) -> None:
        self.facts.nodes = 0  # the node limit is not the reader's to judge here
        super().node(node, gwhere, stack)


# --- vetting an archive ----------------------------------------------------------------

@dataclass
class Vetted:
    """What we read and checked; torch gets exactly these bytes and configs."""

    path: Path
    program_names: list[str]
    program_bytes: dict[str, bytes] = field(default_factory=dict)
    weights: dict[str, dict[str, Any]] = field(default_factory=dict)
    constants: dict[str, dict[str, Any]] = field(default_factory=dict)
    pytree_types: set[str] = field(default_factory=set)
    trusted: list[str] = field(default_factory=list)  # risky records loaded on consent
    info: dict[str, Any] | None = None  # extra/pt2_inspector.json
    operators: dict[str, Operator] = field(default_factory=dict)  # every one named

    @property
    def needs_transformers(self) -> bool:
        return any(t.startswith("transformers.") for t in self.pytree_types)


def refuse_over_limits(path: str | Path, programs: Iterable[str] | None = None) -> None:
    """The cheap half of `vet`, for a parent before it parses anything (the CLI plans
    a program's inputs from its JSON): a deflate bomb, or a program over
    MAX_LOAD_NODES by the count of its text, is an ArchiveError in milliseconds."""
    with core.open_archive(path) as ar:
        refuse_bombs((ar.entry(r.path) for r in ar.records), ArchiveError)
        if ar.layout != "pt2":
            return
        for name in (list(programs) if programs else ar.program_names):
            if name not in ar.program_names:
                continue  # vet names it, with the list
            raw = ar.read_bytes(ar.whole_program_path(name), core.MAX_JSON_BYTES)
            if count_nodes(raw) > MAX_LOAD_NODES:
                raise ArchiveError(_too_many(name, f"about {count_nodes(raw):,}"))


def vet(path: str | Path, *, trust: bool = False,
        programs: Iterable[str] | None = None) -> Vetted:
    """Check the archive without torch. Raises ArchiveError, UntrustedArchiveError or
    UnsafeProgramError with a message naming what is wrong."""
    with core.open_archive(path) as ar:
        if ar.layout != "pt2":
            raise ArchiveError(f"{Path(path).name} uses the legacy single-program layout; "
                               "running needs a pt2 archive (torch.export.save >= 2.6)")
        wanted = list(programs) if programs is not None else list(ar.program_names)
        missing = [p for p in wanted if p not in ar.program_names]
        if missing:
            raise ArchiveError(
                f"{Path(path).name} has no program {', '.join(map(repr, missing))} "
                f"(programs: {', '.join(ar.program_names)}); running needs 'encoder' and "
                "'decoder', as written by `pt2-inspector export`"
            )
        # torch inflates records whole: refuse a deflate bomb by its declared sizes
        refuse_bombs((ar.entry(r.path) for r in ar.records), ArchiveError)
        # Sample inputs are never read, so they are not a reason to refuse.
        risky = [r for r in ar.records if r.risk and r.kind != core.SAMPLE_INPUTS]
        if risky and not trust:
            names = ", ".join(f"{r.path} ({r.why or r.kind})" for r in risky[:6])
            more = f" and {len(risky) - 6} more" if len(risky) > 6 else ""
            raise UntrustedArchiveError(
                f"{Path(path).name} holds records that would run code when loaded: "
                f"{names}{more}. Load it only if you trust its source "
                "(--trust on the command line)",
                [r.path for r in risky],
            )
        vetted = Vetted(Path(path), wanted, trusted=[r.path for r in risky])
        for name in wanted:
            raw = ar.read_bytes(ar.whole_program_path(name), core.MAX_JSON_BYTES)
            if count_nodes(raw) > MAX_LOAD_NODES:
                raise ArchiveError(_too_many(name, f"about {count_nodes(raw):,}"))
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise ArchiveError(f"program {name!r} is not valid JSON ({exc})") from None
            facts = check_program_facts(name, doc)
            del doc
            vetted.pytree_types |= facts.pytree_types
            for text, op in facts.operators.items():
                vetted.operators.setdefault(text, op)
            vetted.program_bytes[name] = raw
            vetted.weights[name] = ar.payload_config(name, "weights")
            vetted.constants[name] = ar.payload_config(name, "constants")
            check_payloads(name, vetted.weights[name], vetted.constants[name], trust)
        consent = sorted(t for t, op in vetted.operators.items() if op.needs_consent)
        if consent and not trust:
            shown = ", ".join(consent[:6]) + (f" and {len(consent) - 6} more"
                                              if len(consent) > 6 else "")
            raise UntrustedArchiveError(
                f"{Path(path).name} calls operators that are not torch's own (their code "
                f"comes from a library, or is handed to them from the file): {shown}. "
                "Load it only if you trust its source (--trust on the command line)",
                [f"operator {t}" for t in consent],
            )
        vetted.trusted += [f"operator {t}" for t in consent]
        if EXTRA_RECORD in ar.extra_names():
            try:
                info = orjson.loads(ar.read_extra(EXTRA_RECORD))
                vetted.info = info if isinstance(info, dict) else None
            except orjson.JSONDecodeError:
                vetted.info = None
    return vetted


def check_payloads(name: str, weights: dict[str, Any], constants: dict[str, Any],
                   trust: bool) -> None:
    """Refuse a weights/constants config entry that names code (a pickle, an opaque
    object) unless the user trusts the archive; a malformed entry is an ArchiveError."""
    for which, config in (("weights", weights), ("constants", constants)):
        for fqn, meta in config.items():
            if not isinstance(meta, dict) or not isinstance(meta.get("path_name"), str):
                raise ArchiveError(f"program {name!r}: {which} entry {str(fqn)[:80]!r} is malformed")
            path_name = meta["path_name"]
            if "/" in path_name or "\\" in path_name or path_name.startswith("."):
                raise ArchiveError(f"program {name!r}: {which} entry {str(fqn)[:80]!r} points "
                                   f"outside data/{which}/ ({path_name[:80]!r})")
            why = _config_risk(path_name, meta)
            if why and not trust:
                # Whatever the core reader made of the record (it classifies by the
                # stored name): torch decides by this config entry, so refuse by it.
                raise UntrustedArchiveError(
                    f"program {name!r}: {which[:-1]} {str(fqn)[:80]} {why} "
                    f"(data/{which}/{path_name[:80]}); load it only if you trust its "
                    "source (--trust on the command line)",
                    [f"data/{which}/{path_name}"],
                )


def _config_risk(path_name: str, meta: dict[str, Any]) -> str:
    """Why torch would execute what a config entry names ("" when it would not).
    Names are compared as torch's zip reader finds them (case-insensitively)."""
    folded = core.fold_name(path_name)
    if folded.startswith(core.TORCHBIND_PREFIX):
        return "names a TorchBind object (unpickled by torch._C._pickle_load_obj)"
    if folded.startswith(core.OPAQUE_PREFIX):
        return "names an opaque object (unpickled by pickle.loads)"
    if meta.get("use_pickle"):
        return "is a pickle (torch.load, weights_only=False)"
    return ""
