"""The one vetted way a job loads a .pt2 archive with torch.

`torch.export.load` executes things from the file: it unpickles the sample inputs and
`use_pickle` weights/constants, loads TorchBind objects, dlopens AOTInductor `.so`
files, `sympify`s symbolic-shape strings, resolves node targets by `getattr` on torch
(a graph could call `torch.ops.load_library`), and `ExportedProgram.module()` `exec`s
the archive's `guards_code`. torch 2.13's loader has no `weights_only`.

So, before torch sees anything:
1. The core reader (`inspector.core.archive`) vets the zip (limits, names, layout) and
   classifies every record; records it marks risky (pickles, TorchBind, opaque
   objects, compiled libraries) are refused unless the caller passes `trust=True`,
   and the error names them. Sample inputs are never read, trusted or not.
2. Each program's JSON is checked: every `expr_str` must parse in the strict srepr
   grammar (`inspector.core.symbolic`) using only known sympy/torch function names;
   range-constraint keys must be symbol names or a derived dim's printed arithmetic
   over them (`2*s40 + 1`, parsed by the same small grammar, never evaluated);
   `guards_code` must use only the guard grammar (`L['name'].size()[N]`, integers,
   comparisons, arithmetic); node targets must be ATen/prims/higher-order ops, a
   small set of Python operators, or functorch's pre-dispatch vmap/jvp wrappers. These are
   refused whatever `trust` says: a genuine export never needs anything else.
3. torch then builds the programs from exactly the bytes we vetted, through its own
   internals (`_build_file_map`, `ExportedProgramDeserializer`), with empty sample
   inputs; raw weights are mapped from the zip without pickle.
`transformers` is imported only when a program's pytree specs name one of its types
(the toy encoder returns `BaseModelOutputWithPooling`, which must be registered).
"""

from __future__ import annotations

import contextlib
import functools
import re
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from inspector.core import archive as core
from inspector.core.errors import ArchiveError, InspectorError
from inspector.core.symbolic import Call, ExprSyntaxError, parse_printed, parse_srepr

EXTRA_RECORD = "pt2_inspector.json"  # written by jobs/export.py


class UntrustedArchiveError(InspectorError):
    """The archive holds records torch would execute; loading needs explicit consent."""

    def __init__(self, message: str, records: list[str]) -> None:
        super().__init__(message)
        self.records = records


class UnsafeProgramError(InspectorError):
    """A program's JSON holds strings outside the grammar a genuine export produces."""


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

PREDISPATCH_WRAPPERS = (
    "_add_batch_dim", "_remove_batch_dim", "_vmap_increment_nesting", "_vmap_decrement_nesting",
    "lazy_load_decompositions", "_jvp_increment_nesting", "_jvp_decrement_nesting",
    "_make_dual", "_unpack_dual", "_unwrap_for_grad", "_enter_dual_level", "_exit_dual_level",
)
_TARGET = re.compile(
    r"^(?:torch\.ops\.(?:aten|prims)\.[A-Za-z_]\w*\.[A-Za-z_]\w*"
    r"|torch\.ops\.higher_order\.[A-Za-z_]\w*"
    r"|_operator\.(?:getitem|add|sub|mul|floordiv|truediv|mod|pow|neg|pos|abs|eq|ne|lt|le"
    r"|gt|ge|and_|or_|xor|not_|invert|lshift|rshift)"
    r"|math\.(?:ceil|floor|trunc|sqrt)"
    r"|torch\.(?:sym_float|sym_int|sym_max|sym_min|sym_not|sym_ite|sym_sqrt|sym_sum"
    r"|_sym_sqrt|sym_float|_check|_check_is_size|_assert|_assert_async)"
    # functorch's pre-dispatch wrappers: export writes them as plain call_function
    # nodes where a program vmaps (associative_scan's generic combine does). Each
    # only pushes/pops a functorch level or (un)wraps a batched/dual tensor.
    r"|torch\._functorch\.predispatch\.(?:" + "|".join(PREDISPATCH_WRAPPERS) + r"))$"
)
# aten ops that touch files: not code execution, but no graph we run needs them.
_DENIED_OPS = re.compile(r"^torch\.ops\.aten\.(?:from_file|_load_\w*|save)\.")
_SAFE_TYPE_PREFIXES = ("builtins.", "collections.", "torch.", "transformers.modeling_outputs.")
MAX_EXPR_CHARS = 4096
MAX_GUARD_CHARS = 4096


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
    if not isinstance(target, str) or not _TARGET.fullmatch(target) or _DENIED_OPS.match(target):
        raise UnsafeProgramError(
            f"{where}: node target {str(target)[:120]!r} is not an ATen/prims operator "
            "(refusing to resolve it: a graph could call any Python function that way)"
        )


def check_program(name: str, doc: Any) -> set[str]:
    """Vet one program's JSON; return the pytree type names its signature uses."""
    where = f"program {name!r}"
    if not isinstance(doc, dict) or not isinstance(doc.get("graph_module"), dict):
        raise UnsafeProgramError(f"{where}: not an exported program")
    for key in (doc.get("range_constraints") or {}):
        check_range_key(key, where)
    for guard in doc.get("guards_code") or []:
        check_guard(guard, where)
    types: set[str] = set()
    stack: list[Any] = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "expr_str" in item:
                check_expr(item["expr_str"], where)
            if "target" in item and "inputs" in item and "outputs" in item:
                check_target(item["target"], where)
            for key in ("in_spec", "out_spec"):
                if isinstance(item.get(key), str):
                    types |= _spec_types(item[key], where)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    bad = sorted(t for t in types if not t.startswith(_SAFE_TYPE_PREFIXES))
    if bad:
        raise UnsafeProgramError(f"{where}: inputs/outputs use Python types pt2-inspector "
                                 f"does not load ({', '.join(bad[:5])})")
    return types


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


# --- vetting ------------------------------------------------------------------

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

    @property
    def needs_transformers(self) -> bool:
        return any(t.startswith("transformers.") for t in self.pytree_types)


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
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise ArchiveError(f"program {name!r} is not valid JSON ({exc})") from None
            vetted.pytree_types |= check_program(name, doc)
            vetted.program_bytes[name] = raw
            vetted.weights[name] = ar.payload_config(name, "weights")
            vetted.constants[name] = ar.payload_config(name, "constants")
            check_payloads(name, vetted.weights[name], vetted.constants[name], trust)
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


# --- loading with torch -------------------------------------------------------

def _payloads(torch: Any, reader: Any, config: dict[str, Any], base_dir: str,
              constants: bool) -> dict[str, Any]:
    """Torch's own payload assembly (aliasing kept) from our vetted config. Pickled
    entries are reached only when the caller trusted them in `vet`."""
    import io
    import pickle

    from torch._export.serde import schema
    from torch._export.serde.serialize import (
        _dict_to_dataclass,
        deserialize_size,
        deserialize_storage_offset,
        deserialize_stride,
    )
    from torch.export.pt2_archive import _package as pkg

    cfg = _dict_to_dataclass(schema.PayloadConfig, {"config": config})
    file_map = pkg._build_file_map(reader, cfg, base_dir)
    out: dict[str, Any] = {}
    for fqn, meta in cfg.config.items():
        record = f"{base_dir}{meta.path_name}"
        name = meta.path_name
        if constants and name.startswith(pkg.CUSTOM_OBJ_FILENAME_PREFIX):
            out[fqn] = torch._C._pickle_load_obj(reader.read_bytes(record))  # trusted only
        elif constants and name.startswith(pkg.OPAQUE_OBJ_FILENAME_PREFIX):
            out[fqn] = pickle.loads(reader.read_bytes(record))  # noqa: S301 - trusted only
        elif meta.use_pickle:
            out[fqn] = torch.load(io.BytesIO(reader.read_bytes(record)), weights_only=False)
        else:
            tm = meta.tensor_meta
            tensor = torch.as_strided(
                file_map[meta.path_name],
                size=deserialize_size(tm.sizes),
                stride=deserialize_stride(tm.strides),
                storage_offset=deserialize_storage_offset(tm.storage_offset),
            )
            out[fqn] = (torch.nn.Parameter(tensor, requires_grad=tm.requires_grad)
                        if meta.is_param and not constants else tensor)
    return out


def load_state_dicts(vetted: Vetted) -> dict[str, dict[str, Any]]:
    """The programs' weights (fqn -> tensor), for eager mode: no graph is built."""
    import torch
    from torch.export.pt2_archive._package import WEIGHTS_DIR, PT2ArchiveReader

    with torch.no_grad(), PT2ArchiveReader(str(vetted.path)) as reader:
        return {n: _payloads(torch, reader, vetted.weights[n], WEIGHTS_DIR, False)
                for n in vetted.program_names}


def _meta_payloads(torch: Any, reader: Any, config: dict[str, Any], base_dir: str,
                   constants: bool) -> dict[str, Any]:
    """Like `_payloads`, but every plain tensor record becomes a `meta` tensor of the
    recorded size, stride and dtype: nothing is read, so memory does not grow with
    the weights (for fake-tensor dry runs). Pickled and object records, which carry
    no tensor meta, are still loaded (trusted only, as in `_payloads`)."""
    from torch._export.serde import schema
    from torch._export.serde.serialize import (
        _dict_to_dataclass,
        deserialize_scalar_type,
        deserialize_size,
        deserialize_stride,
    )

    plain = {k: v for k, v in config.items()
             if not v.get("use_pickle") and isinstance(v.get("tensor_meta"), dict)}
    out = _payloads(torch, reader, {k: v for k, v in config.items() if k not in plain},
                    base_dir, constants)
    cfg = _dict_to_dataclass(schema.PayloadConfig, {"config": plain})
    for fqn, meta in cfg.config.items():
        tm = meta.tensor_meta
        tensor = torch.empty_strided(deserialize_size(tm.sizes), deserialize_stride(tm.strides),
                                     dtype=deserialize_scalar_type(tm.dtype), device="meta")
        out[fqn] = (torch.nn.Parameter(tensor, requires_grad=tm.requires_grad)
                    if meta.is_param and not constants else tensor)
    return out


def _on_cpu(config: dict[str, Any]) -> dict[str, Any]:
    """The config with every tensor record placed on the CPU: torch's file map moves a
    record to its recorded device, which a retargeted archive names and this machine
    may lack; the job moves the tensors where it runs them."""
    out: dict[str, Any] = {}
    for fqn, meta in config.items():
        tm = meta.get("tensor_meta") if isinstance(meta, dict) else None
        if isinstance(tm, dict):
            meta = {**meta, "tensor_meta": {**tm, "device": {"type": "cpu", "index": None}}}
        out[fqn] = meta
    return out


@contextlib.contextmanager
def _cached_schema_hints() -> Iterator[None]:
    """torch's `_dict_to_dataclass` calls `typing.get_type_hints` for every object it
    builds (24k calls on the full-size decoder: half of the deserializer's CPU time,
    5 of 11 s here). The schema classes' hints never change in a process, so while we
    deserialize, the module's `typing` answers them from a cache."""
    from torch._export.serde import serialize

    real = getattr(serialize, "typing", None)
    if real is not typing:  # another torch layout: leave it alone
        yield
        return
    hints = functools.lru_cache(maxsize=None)(
        lambda cls: typing.get_type_hints(cls, globalns=vars(serialize.schema)))

    class _Typing:
        def __getattr__(self, name: str) -> Any:
            return getattr(typing, name)

        @staticmethod
        def get_type_hints(cls: Any, globalns: Any = None, localns: Any = None,
                           include_extras: bool = False) -> Any:
            if globalns is vars(serialize.schema) and localns is None and not include_extras:
                return hints(cls)
            return typing.get_type_hints(cls, globalns, localns, include_extras)

    serialize.typing = _Typing()  # type: ignore[assignment]
    try:
        yield
    finally:
        serialize.typing = real  # type: ignore[assignment]


@contextlib.contextmanager
def _cached_sympify() -> Iterator[None]:
    """torch's deserializer `sympify`s the `expr_str` of every symbolic size it meets
    (3,384 calls on the full-size decoder, 19 distinct strings: 1.4 s). While we
    deserialize, its module's `sympy.sympify` answers a string it has parsed once
    from a cache. Only srepr text that names every symbol with `Symbol(...)` is
    cached: its value does not depend on the `locals` torch passes (a bare name like
    `s0` does: it is looked up there, so it goes to sympify each time). Each string
    was vetted by check_expr before torch sees it."""
    from torch._export.serde import serialize

    sympy = getattr(serialize, "sympy", None)
    if sympy is None or getattr(sympy, "__name__", "") != "sympy":
        yield  # another torch layout: leave it alone
        return
    cache: dict[str, Any] = {}

    def cacheable(text: str) -> bool:
        try:
            tree = parse_srepr(text)
        except ExprSyntaxError:
            return False
        stack = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, Call):
                if node.head == "Name":
                    return False
                stack.extend(node.args)
        return isinstance(tree, Call)

    class _Sympy:
        def __getattr__(self, name: str) -> Any:
            return getattr(sympy, name)

        @staticmethod
        def sympify(a: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(a, str) or args or set(kwargs) - {"locals"}:
                return sympy.sympify(a, *args, **kwargs)
            hit = cache.get(a)
            if hit is None:
                hit = sympy.sympify(a, **kwargs)
                if cacheable(a):
                    cache[a] = hit
            return hit

    serialize.sympy = _Sympy()  # type: ignore[assignment]
    try:
        yield
    finally:
        serialize.sympy = sympy  # type: ignore[assignment]


def load_programs(vetted: Vetted, *, payloads: str = "data") -> dict[str, Any]:
    """name -> torch.export.ExportedProgram, built from the vetted bytes.

    payloads: "data" (the records' tensors on their recorded devices), "cpu" (the
    records' tensors, all on the CPU), or "meta" (no tensor data read at all)."""
    if payloads not in ("data", "cpu", "meta"):
        raise ValueError(f"payloads must be data, cpu or meta, not {payloads!r}")
    import torch
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _bytes_to_dataclass
    from torch.export.pt2_archive._package import CONSTANTS_DIR, WEIGHTS_DIR, PT2ArchiveReader

    if vetted.needs_transformers:
        # Registers transformers' ModelOutput classes as pytree nodes (the toy encoder
        # returns BaseModelOutputWithPooling); nothing from the archive is imported.
        import transformers.modeling_outputs  # noqa: F401
    # torch resolves a target by getattr from `torch`, so a vetted
    # `torch._functorch.predispatch.*` target needs that module imported first
    import torch._functorch.predispatch  # noqa: F401

    programs: dict[str, Any] = {}
    with (PT2ArchiveReader(str(vetted.path)) as reader, _cached_schema_hints(),
          _cached_sympify()):
        for name in vetted.program_names:
            weights, constants = vetted.weights[name], vetted.constants[name]
            if payloads == "meta":
                state = _meta_payloads(torch, reader, weights, WEIGHTS_DIR, False)
                consts = _meta_payloads(torch, reader, constants, CONSTANTS_DIR, True)
            else:
                if payloads == "cpu":
                    weights, constants = _on_cpu(weights), _on_cpu(constants)
                state = _payloads(torch, reader, weights, WEIGHTS_DIR, False)
                consts = _payloads(torch, reader, constants, CONSTANTS_DIR, True)
            serialized = _bytes_to_dataclass(schema.ExportedProgram, vetted.program_bytes[name])
            try:
                programs[name] = ExportedProgramDeserializer(None).deserialize(
                    serialized, state, consts, b""  # b"": sample inputs are never unpickled
                )
            except Exception as exc:
                raise ArchiveError(f"program {name!r} cannot be rebuilt by this torch "
                                   f"({type(exc).__name__}: {str(exc)[:300]})") from None
    return programs


def load(path: str | Path, *, trust: bool = False, programs: Iterable[str] | None = None,
         payloads: str = "data") -> tuple[Vetted, dict[str, Any]]:
    """Vet, then load: (what was vetted, name -> ExportedProgram)."""
    vetted = vet(path, trust=trust, programs=programs)
    return vetted, load_programs(vetted, payloads=payloads)
