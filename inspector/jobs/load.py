"""The one vetted way a job loads a .pt2 archive with torch: the torch half.

`inspector.core.vetting` (torch-free, readable alone) decides what may be loaded:
records that run code only with consent, every operator a program names on an
allow-list, every name FX pastes into code a plain identifier, the node limit, no
deflate bombs. This module then, in the job child:
1. confirms that each operator the vetted programs name exists in this torch, by the
   dispatcher's registry (`torch._C._dispatch_get_all_op_names()`, the registered
   higher-order ops), never by attribute lookups on the file's strings;
2. drops FX_GRAPH_SHOW_META from the environment (with it, FX writes node metadata
   from the file into the code it execs);
3. builds the programs from exactly the bytes vetted, through torch's own internals
   (`_build_file_map`, `ExportedProgramDeserializer`), with empty sample inputs; raw
   weights are mapped from the zip without pickle.
`transformers` is imported only when a program's pytree specs name one of its types
(the toy encoder returns `BaseModelOutputWithPooling`, which must be registered).
"""

from __future__ import annotations

import contextlib
import functools
import os
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from inspector.core.errors import ArchiveError
from inspector.core.symbolic import Call, ExprSyntaxError, parse_srepr
from inspector.core.vetting import (  # noqa: F401 - the loader's vetting, re-exported
    EXTRA_RECORD,
    MAX_LOAD_NODES,
    PREDISPATCH_WRAPPERS,
    Operator,
    UnsafeProgramError,
    UntrustedArchiveError,
    Vetted,
    check_expr,
    check_guard,
    check_payloads,
    check_program,
    check_range_key,
    check_target,
    vet,
)

# With it set, FX writes each node's metadata (from the file) into the code it execs,
# inside a docstring a `"""` in the text would close.
_FX_META_ENV = "FX_GRAPH_SHOW_META"


def confirm_operators(torch: Any, vetted: Vetted) -> None:
    """Raise UnsafeProgramError unless every operator the vetted programs name exists
    in this torch: an overload in the dispatcher's registry, a higher-order op among
    those torch registered. Builtins and functorch's wrappers are fixed names."""
    import torch._ops  # noqa: F401 - the registry of higher-order ops

    registered = set(torch._C._dispatch_get_all_op_names())
    hops = torch._ops._higher_order_ops
    missing = []
    for text, op in sorted(vetted.operators.items()):
        if op.kind == "overload":
            overload = "" if op.overload == "default" else f".{op.overload}"
            known = f"{op.namespace}::{op.name}{overload}" in registered
        elif op.kind == "higher_order":
            known = op.name in hops
        else:
            known = True
        if not known:
            missing.append(text)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise UnsafeProgramError(
            f"{vetted.path.name} names operators this torch ({torch.__version__}) does not "
            f"register: {shown} (a custom op's library is never loaded from the file; "
            "an operator torch lacks cannot run here)")


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

    confirm_operators(torch, vetted)
    os.environ.pop(_FX_META_ENV, None)
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
