"""Memory per node and the peak, from the archive alone (no torch, no device).

A static plan of what a program's top graph holds while it runs, at chosen values
of its symbols (default: the sizes export traced with):

- each node's output bytes: `numel * itemsize` of every tensor it returns, sizes
  evaluated from the tensor records with core/symbolic.py (what torch's own
  `node.meta["val"]` FakeTensors hold);
- storages: an output that aliases an input (a view, an in-place or out= op, as
  torch's op schemas annotate it: core/op_schemas.py `output_aliases`) shares its
  input's storage, counted once; `to`, `reshape`, `contiguous` and their kin alias
  only when they change nothing (same dtype, device, sizes and strides; a reshape
  a view can express), decided from the records at the traced sizes;
- each storage lives from the node that makes it to the last node that reads it
  or any of its aliases (graph outputs: to the end);
- live bytes at node i: the baseline (weights, buffers, constants and the user's
  inputs, held by the module and the caller for the whole call) plus every
  storage made at or before i and read at or after i: what is held while node i
  runs, its inputs and outputs together. The peak is the largest.

`MemoryModel.build(program)` reads the program once (the expensive part); each
`model.plan(dims)` evaluates the distinct shapes (a few hundred in a big model)
and sums with numpy, so a Dim change is cheap. Nested graphs (cond/map bodies)
are not planned: their HOP node's outputs count as new tensors.
"""

from __future__ import annotations

import functools

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from inspector.core.byte_sizes import format_bytes
from inspector.core.dtypes import DTYPE_ITEMSIZE
from inspector.core.errors import InspectorError
from inspector.core.frames import parse_module_stack
from inspector.core.op_schemas import output_aliases
from inspector.core.program import Graph, Node, Program, TensorMeta
from inspector.core.symbolic import (
    ExprSyntaxError,
    UnresolvedSymbol,
    evaluate,
    parse_printed,
)

WEIGHT_KINDS = frozenset({"parameter", "buffer", "tensor_constant"})
# Ops the schemas mark `Tensor(a)` that copy when they have something to change.
_COPY_UNLESS_SAME = frozenset({
    "to", "contiguous", "resolve_conj", "resolve_neg", "_autocast_to_reduced_precision",
    "_autocast_to_full_precision", "type_as", "_to_copy", "lift_fresh"})
_COPY_UNLESS_VIEWABLE = frozenset({"reshape", "reshape_as", "flatten", "_reshape_copy"})
# Ops the schemas give no alias annotation whose kernels return a view all the same
# (`_unsafe_view` is `view` without autograd's view tracking).
_VIEWS_UNANNOTATED = frozenset({"_unsafe_view"})
# ... and ones that return their input itself when they have nothing to do: dropout
# out of training or with p == 0 (ATen's _dropout_impl), type_as of the same type.
_DROPOUTS = frozenset({"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"})
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
          "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "ki": 1024, "kib": 1024,
          "mi": 1024**2, "mib": 1024**2, "gi": 1024**3, "gib": 1024**3, "ti": 1024**4,
          "tib": 1024**4}
_PLAIN_SYMBOL = re.compile(r"^[a-z]+\d+$")
SEARCH_CAP = 1 << 40  # an unbounded dim is searched up to this size


class MemoryPlanError(InspectorError):
    """A --dim or --budget the program cannot take."""


def parse_size(text: str) -> int:
    """'24GiB', '8GB', '512MiB', '1000000' -> bytes (GB is 10**9, GiB 2**30)."""
    m = _SIZE.match(text or "")
    unit = (m.group(2) or "").lower() if m else ""
    if not m or unit not in _UNITS:
        raise MemoryPlanError(f"--budget {text!r} does not parse (expected a size such as "
                              "24GiB, 8GB, 512MiB or a number of bytes)")
    value = float(m.group(1)) * _UNITS[unit]
    if value <= 0:
        raise MemoryPlanError(f"--budget {text!r} is not a positive size")
    return int(value)


@dataclass(frozen=True, slots=True)
class SymbolRange:
    name: str
    min: int | None
    max: int | None  # None: unbounded
    traced: int | None  # the size export traced with, when recorded

    @property
    def dynamic(self) -> bool:
        return self.min != self.max or self.min is None

    def default(self) -> int:
        """Traced size; else the range's top if bounded; else its bottom (or 2)."""
        if self.traced is not None:
            return self.traced
        if self.max is not None:
            return self.max
        return self.min if self.min is not None and self.min > 1 else 2

    def clamp_ok(self, value: int) -> bool:
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)


class _Shape:
    """One distinct (sizes, strides, offset) of the program's tensor records, its
    expressions parsed once."""

    __slots__ = ("sizes", "strides", "offset", "constant")

    def __init__(self, meta: TensorMeta) -> None:
        self.sizes = [_tree(s) for s in meta.sizes]
        self.strides = [_tree(s) for s in meta.strides]
        self.offset = _tree(meta.storage_offset)
        self.constant = all(type(x) is int for x in (*self.sizes, *self.strides, self.offset))

    def evaluate(self, env: Mapping[str, int]) -> tuple[int, int]:
        """(numel, storage elements: what torch's computeStorageNbytes counts)."""
        sizes = [_int(x, env) for x in self.sizes]
        numel = 1
        for s in sizes:
            numel *= s
        if numel == 0:
            return 0, 0
        strides = [_int(x, env) for x in self.strides]
        extent = _int(self.offset, env) + 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
        return numel, extent


def _tree(size: int | str) -> object:
    if type(size) is int:
        return size
    return _parsed(str(size))


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> object:
    """A size expression parsed once: the alias checks evaluate the same few
    expressions on every layer (a 100k program parsed them 35,000 times)."""
    try:
        return parse_printed(text)
    except ExprSyntaxError:
        return _Unknown(text)


class _Unknown:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _int(tree: object, env: Mapping[str, int]) -> int:
    if type(tree) is int:
        return tree
    if isinstance(tree, _Unknown):
        raise ExprSyntaxError(f"size {tree.text[:60]!r}")
    value = evaluate(tree, env)  # type: ignore[arg-type]
    if isinstance(value, bool) or value != int(value):
        raise ExprSyntaxError(f"size is not a whole number ({value})")
    return int(value)


@dataclass
class MemoryPlan:
    """The plan at one set of symbol values. Arrays are per node of the top graph."""

    model: MemoryModel
    dims: dict[str, int]
    out_bytes: np.ndarray  # int64: numel * itemsize of each node's outputs (views too)
    new_bytes: np.ndarray  # int64: bytes of the storages each node makes
    live_bytes: np.ndarray  # int64: baseline + storages alive while the node runs
    weights_bytes: int
    inputs_bytes: int
    unknown: list[str] = field(default_factory=list)  # values whose size did not evaluate

    @property
    def peak_index(self) -> int | None:
        return int(np.argmax(self.live_bytes)) if len(self.live_bytes) else None

    @property
    def peak_bytes(self) -> int:
        return int(self.live_bytes.max()) if len(self.live_bytes) else self.baseline_bytes

    @property
    def baseline_bytes(self) -> int:
        return self.weights_bytes + self.inputs_bytes

    def peak_node(self) -> str | None:
        i = self.peak_index
        return None if i is None else self.model.node_names[i]

    def top_nodes(self, n: int = 10) -> list[int]:
        """Indexes of the n nodes with the most live bytes (ties: program order)."""
        order = np.argsort(-self.live_bytes, kind="stable")
        return [int(i) for i in order[:n]]


class MemoryModel:
    """What the plan needs from one program, read once: values, their shapes,
    storages (aliases resolved) and lifetimes."""

    def __init__(self, program: Program, names: Sequence[str] | None = None,
                 weight_records: Mapping[str, str] | None = None) -> None:
        """`names`: each node's name as the listing prints it (torch's FX name),
        where the file gave none (old schemas: core/memory_report.listed_names).
        `weight_records`: parameter/buffer/constant FQN -> the archive record that
        holds it: tied weights (GPT-2's lm_head and wte) share one record, and one
        storage when loaded, counted once (core/memory_report.weight_records)."""
        self.program = program.name
        graph = program.graph
        self.graph: Graph = graph
        self.nodes: Sequence[Node] = graph.nodes
        self.node_names: list[str] = list(names) if names is not None else \
            [n.name for n in self.nodes]
        self.symbols: dict[str, SymbolRange] = _symbols(program)
        kinds = {s.name: s.kind for s in program.input_specs}
        targets = {s.name: s.target for s in program.input_specs if s.target}
        records = weight_records or {}
        first_of_record: dict[str, int] = {}
        self._shapes: list[_Shape] = []
        shape_ids: dict[int, int] = {}  # id(TensorMeta) -> shape index (records are shared)
        shape_keys: dict[tuple, int] = {}
        tensors = graph.tensor_values
        index: dict[str, int] = {}  # value name -> value index
        names: list[str] = []
        itemsize: list[int] = []
        shape: list[int] = []
        defined: list[int] = []
        root: list[int] = []
        kind: list[int] = []  # 0 activation, 1 weight, 2 user input
        metas: list[TensorMeta] = []

        def add(name: str, at: int, value_kind: int) -> int | None:
            meta = tensors.get(name)
            if meta is None:
                return None
            sid = shape_ids.get(id(meta))
            if sid is None:
                key = (tuple(meta.sizes), tuple(meta.strides), meta.storage_offset)
                sid = shape_keys.get(key)
                if sid is None:
                    sid = shape_keys[key] = len(self._shapes)
                    self._shapes.append(_Shape(meta))
                shape_ids[id(meta)] = sid
            v = len(names)
            index[name] = v
            names.append(name)
            itemsize.append(DTYPE_ITEMSIZE.get(meta.dtype, 0))
            shape.append(sid)
            defined.append(at)
            root.append(v)
            kind.append(value_kind)
            metas.append(meta)
            return v

        for arg in graph.inputs:
            name = arg.name()
            if name is None:
                continue
            spec = kinds.get(name, "user_input")
            v = add(name, -1, 1 if spec in WEIGHT_KINDS else 2 if spec == "user_input" else 1)
            record = records.get(targets.get(name, ""))
            if v is not None and record is not None:
                if record in first_of_record:
                    root[v] = first_of_record[record]
                else:
                    first_of_record[record] = v
        n_nodes = len(self.nodes)
        last: list[int] = [-1] * len(names)
        reads: list[list[int]] = []
        traced = {s.name: s.default() for s in self.symbols.values()}
        for i, node in enumerate(self.nodes):
            read = [index[nm] for nm in node.input_names() if nm in index]
            reads.append(read)
            for v in read:
                last[v] = i
            aliases = output_aliases(node.target)
            if aliases is None:
                aliases = _unannotated_aliases(node)
            for k, out in enumerate(node.outputs):
                for name in out.tensor_names():
                    v = add(name, i, 0)
                    if v is None:
                        continue
                    last.append(i)
                    source = _aliased_input(node, aliases, k, index)
                    if source is not None and _really_aliases(node, metas[source], metas[v],
                                                              traced):
                        root[v] = root[source]
        for arg in graph.outputs:
            for name in arg.tensor_names():
                v = index.get(name)
                if v is not None:
                    last[v] = n_nodes  # held past the last node
        self.value_names = names
        self.value_index = index
        self.value_itemsize = np.asarray(itemsize, dtype=np.int64)
        self.value_shape = np.asarray(shape, dtype=np.int64)
        self.value_defined = np.asarray(defined, dtype=np.int64)
        self.value_root = np.asarray(root, dtype=np.int64)
        self.value_kind = np.asarray(kind, dtype=np.int8)
        self.value_last = np.asarray(last, dtype=np.int64)
        self.node_reads = reads
        # a storage lives to the last read of any value sharing it
        storage_last = self.value_last.copy()
        np.maximum.at(storage_last, self.value_root, self.value_last)
        self._returned = storage_last >= n_nodes
        self.storage_last = np.minimum(np.maximum(storage_last, self.value_defined),
                                       max(n_nodes - 1, 0))
        self.is_root = self.value_root == np.arange(len(names))
        self._dynamic = [s for s in self.symbols.values() if s.dynamic]
        self._modules: list[tuple[str, ...]] | None = None

    @property
    def dynamic_symbols(self) -> list[SymbolRange]:
        return list(self._dynamic)

    def traced_dims(self) -> dict[str, int]:
        return {s.name: s.default() for s in self.symbols.values()}

    def resolve_dims(self, dims: Mapping[str, int] | None) -> dict[str, int]:
        """Every symbol's value: the given ones (checked against the ranges), the
        others at their traced size."""
        env = self.traced_dims()
        for name, value in (dims or {}).items():
            sym = self.symbols.get(name)
            if sym is None:
                known = ", ".join(sorted(self.symbols)) or "none"
                raise MemoryPlanError(f"--dim {name}: no such symbol in program "
                                      f"{self.program!r} (its symbols: {known})")
            if not sym.clamp_ok(value):
                hi = "inf" if sym.max is None else sym.max
                raise MemoryPlanError(f"--dim {name}={value} is outside its range "
                                      f"(program {self.program!r} takes {name} in "
                                      f"[{sym.min}, {hi}])")
            env[name] = int(value)
        return env

    def plan(self, dims: Mapping[str, int] | None = None, *, checked: bool = True) -> MemoryPlan:
        env = self.resolve_dims(dims) if checked else {**self.traced_dims(), **(dims or {})}
        numel = np.zeros(len(self._shapes), dtype=np.int64)
        extent = np.zeros(len(self._shapes), dtype=np.int64)
        bad: set[int] = set()
        for i, sh in enumerate(self._shapes):
            try:
                numel[i], extent[i] = sh.evaluate(env)
            except (ExprSyntaxError, UnresolvedSymbol, ZeroDivisionError, TypeError,
                    ValueError, OverflowError):
                bad.add(i)
        value_bytes = numel[self.value_shape] * self.value_itemsize
        storage_bytes = np.where(self.is_root, extent[self.value_shape] * self.value_itemsize, 0)
        n = len(self.nodes)
        activation = (self.value_kind == 0)
        weights = int(storage_bytes[self.value_kind == 1].sum())
        inputs = int(storage_bytes[self.value_kind == 2].sum())
        act = np.flatnonzero(activation)
        out_bytes = np.bincount(self.value_defined[act], weights=value_bytes[act], minlength=n) \
            if n else np.zeros(0)
        alloc = act[self.is_root[act]]
        sb = storage_bytes[alloc]
        new_bytes = np.bincount(self.value_defined[alloc], weights=sb, minlength=n) \
            if n else np.zeros(0)
        delta = np.zeros(n + 1, dtype=np.float64)
        if n:
            delta += np.bincount(self.value_defined[alloc], weights=sb, minlength=n + 1)
            delta -= np.bincount(self.storage_last[alloc] + 1, weights=sb, minlength=n + 1)
        live = np.cumsum(delta[:n]) + weights + inputs
        unknown = [self.value_names[v] for v in np.flatnonzero(np.isin(self.value_shape, list(bad)))] \
            if bad else []
        return MemoryPlan(self, env, out_bytes.astype(np.int64), new_bytes.astype(np.int64),
                          np.rint(live).astype(np.int64), weights, inputs, unknown)

    # --- at the ranges' top and under a budget ------------------------------------

    def top_dims(self) -> dict[str, int]:
        """Each bounded dynamic symbol at its range's top (unbounded ones traced)."""
        return {s.name: s.max for s in self._dynamic if s.max is not None}

    def largest_fitting(self, budget: int, dims: Mapping[str, int] | None = None
                        ) -> dict[str, int | None]:
        """For each dynamic symbol, the largest value in its range whose peak fits
        `budget` with the other symbols as `dims` gives them (or traced); None
        where even its smallest value does not fit. Peak bytes grow with every
        size, so a binary search over the range finds it."""
        base = self.resolve_dims(dims)
        out: dict[str, int | None] = {}
        for sym in self._dynamic:
            lo = sym.min if sym.min is not None else 0
            hi = sym.max if sym.max is not None else SEARCH_CAP

            def fits(value: int, name: str = sym.name) -> bool:
                return self.plan({**base, name: value}, checked=False).peak_bytes <= budget

            if not fits(lo):
                out[sym.name] = None
                continue
            if fits(hi):
                out[sym.name] = hi
                continue
            while hi - lo > 1:  # fits(lo), not fits(hi)
                mid = (lo + hi) // 2
                if fits(mid):
                    lo = mid
                else:
                    hi = mid
            out[sym.name] = lo
        return out

    # --- modules ------------------------------------------------------------------

    def node_modules(self) -> list[tuple[str, ...]]:
        """Per node, the module paths around it, outermost first ("" left out)."""
        if self._modules is None:
            self._modules = [tuple(e.path for e in parse_module_stack(n.nn_module_stack)
                                   if e.path) for n in self.nodes]
        return self._modules

    def module_rollups(self, plan: MemoryPlan) -> list[ModuleMemory]:
        """Per module (inclusive of its submodules): the peak of the live bytes at
        its nodes and the bytes of the storages its nodes make that outlive it
        (read by a node outside it, or returned)."""
        modules = self.node_modules()
        peak: dict[str, tuple[int, int]] = {}
        for i, paths in enumerate(modules):
            live = int(plan.live_bytes[i])
            for p in paths:
                best = peak.get(p)
                if best is None or live > best[0]:
                    peak[p] = (live, i)
        # storage extents at this plan
        numel_bytes = _storage_bytes(self, plan)
        users: dict[int, set[int]] = {}
        for i, read in enumerate(self.node_reads):
            for v in read:
                users.setdefault(int(self.value_root[v]), set()).add(i)
        kept: dict[str, int] = {}
        for v in np.flatnonzero((self.value_kind == 0) & self.is_root):
            d = int(self.value_defined[v])
            inside = set(modules[d])
            if not inside:
                continue
            escaped: set[str] = set()
            if self._returned[v]:
                escaped = inside
            else:
                for u in users.get(int(v), ()):
                    escaped |= inside - set(modules[u])
                    if escaped == inside:
                        break
            for p in escaped:
                kept[p] = kept.get(p, 0) + int(numel_bytes[v])
        return [ModuleMemory(p, best[0], self.node_names[best[1]], kept.get(p, 0))
                for p, best in sorted(peak.items())]


@dataclass(frozen=True, slots=True)
class ModuleMemory:
    path: str
    peak_bytes: int
    peak_node: str
    kept_bytes: int  # storages made inside it that its outputs keep alive after it


def _storage_bytes(model: MemoryModel, plan: MemoryPlan) -> np.ndarray:
    extent = np.zeros(len(model._shapes), dtype=np.int64)
    for i, sh in enumerate(model._shapes):
        try:
            extent[i] = sh.evaluate(plan.dims)[1]
        except (ExprSyntaxError, UnresolvedSymbol, ZeroDivisionError, TypeError, ValueError):
            pass
    return extent[model.value_shape] * model.value_itemsize


def _symbols(program: Program) -> dict[str, SymbolRange]:
    hints = program.graph.size_hints
    out: dict[str, SymbolRange] = {}
    for name, rng in program.range_constraints.items():
        if not _PLAIN_SYMBOL.match(name):
            continue  # a derived dim's range (`2*s40 + 1`): its value follows from s40
        hint = hints.get(name)
        out[name] = SymbolRange(name, rng.min, rng.max, hint if type(hint) is int else None)
    return out


def _unannotated_aliases(node: Node) -> tuple[str | None, ...] | None:
    op = node.op_name
    if op in _VIEWS_UNANNOTATED or op == "type_as":
        return ("self",)
    if op in _DROPOUTS:
        args = {i.name: i.arg.literal() for i in node.inputs}
        p = args.get("p", 0.5)
        if args.get("train") is False or p in (0, 0.0):
            first = node.inputs[0].name if node.inputs else "input"
            return (first,)
    return None


def _aliased_input(node: Node, aliases: tuple[str | None, ...] | None, k: int,
                   index: dict[str, int]) -> int | None:
    if not aliases or k >= len(aliases) or aliases[k] is None:
        return None
    wanted = aliases[k]
    for pos, inp in enumerate(node.inputs):
        if inp.name == wanted or (wanted == "self" and pos == 0 and not inp.name):
            name = inp.arg.name()
            return index.get(name) if name is not None else None
    return None


def _really_aliases(node: Node, src: TensorMeta, out: TensorMeta, env: dict[str, int]) -> bool:
    """Whether a `Tensor(a)` output shares its input's storage here: always for a
    view; for `to`/`contiguous`/`reshape` and kin only when they change nothing."""
    op = node.op_name
    if op in _COPY_UNLESS_SAME:
        if any(i.name == "copy" and i.arg.literal() is True for i in node.inputs):
            return False
        if src.dtype != out.dtype or src.device != out.device:
            return False
        try:
            return _ints(src.sizes, env) == _ints(out.sizes, env) and \
                _ints(src.strides, env) == _ints(out.strides, env)
        except (ExprSyntaxError, UnresolvedSymbol, ZeroDivisionError, TypeError):
            return False
    if op in _COPY_UNLESS_VIEWABLE:
        try:
            return _view_strides(_ints(src.sizes, env), _ints(src.strides, env),
                                 _ints(out.sizes, env)) is not None
        except (ExprSyntaxError, UnresolvedSymbol, ZeroDivisionError, TypeError):
            return False
    return True


def _ints(sizes: Iterable[int | str], env: dict[str, int]) -> list[int]:
    return [_int(_tree(s), env) for s in sizes]


def _view_strides(old: list[int], old_strides: list[int], new: list[int]) -> list[int] | None:
    """ATen's computeStride (TensorUtils.cpp): the strides a view of shape `new`
    would have, or None where the data cannot be viewed so (reshape copies)."""
    numel = 1
    for s in old:
        numel *= s
    if numel == 0 or not old:
        return [1] * len(new)
    new_strides = [0] * len(new)
    view_d = len(new) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[tensor_d]
        if tensor_d == 0 or (old[tensor_d - 1] != 1
                             and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    return new_strides if view_d == -1 else None


__all__ = ["MemoryModel", "MemoryPlan", "MemoryPlanError", "ModuleMemory", "SymbolRange",
           "format_bytes", "parse_size"]
