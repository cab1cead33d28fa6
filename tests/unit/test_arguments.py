"""Argument's typed accessors against torch's own deserialized arguments.

For every operator call in every program of the fidelity corpus (fidelity_cases.py,
exported and loaded once per session), plus one model reaching the kinds the corpus
lacks (optional-tensor lists, complex scalars, memory formats, an infinite float),
each argument as our accessors decode it (Argument.name, sym, device, items, ...)
must equal what torch.export.load put into the FX node's args and kwargs. The
sym_scalar / sym_size / decode_device helpers are checked against the example
inputs and the state dict torch loads from the same file.
"""

from __future__ import annotations

import math
import operator
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

from fidelity_cases import Archive, session_corpus, torch_programs
from inspector.core.archive import open_archive
from inspector.core.dtypes import DTYPE_REPR, LAYOUT_NAMES, MEMORY_FORMAT_NAMES
from inspector.core.program import (
    FLOAT_WORDS,
    KEYWORD,
    POSITIONAL,
    SYM_KINDS,
    ArgKind,
    Argument,
    Graph,
    decode_device,
    sym_scalar,
    sym_size,
)

K = ArgKind
_LIST_KINDS = (K.TENSORS, K.INTS, K.FLOATS, K.BOOLS, K.STRINGS, K.SYM_INTS, K.SYM_FLOATS,
               K.SYM_BOOLS, K.OPTIONAL_TENSORS, K.INT_LISTS, K.FLOAT_LISTS, K.NESTED_TENSORS)
# Kinds torch 2.13 writes for the corpus and the extra model below (a kind that
# stops appearing means the comparison lost its coverage, not that it passed).
_EXPECTED_KINDS = {K.TENSOR, K.TENSORS, K.INT, K.INTS, K.FLOAT, K.BOOL, K.STRING, K.NONE,
                   K.SYM_INT, K.SYM_INTS, K.SYM_BOOL, K.SYM_FLOAT, K.DEVICE, K.SCALAR_TYPE,
                   K.LAYOUT, K.MEMORY_FORMAT, K.GRAPH, K.OPTIONAL_TENSORS, K.COMPLEX, K.OPERATOR}


def _extra_model(archives: ArchiveFactory) -> Path:
    import torch

    class Corners(torch.nn.Module):
        def forward(self, x: torch.Tensor, idx: torch.Tensor) -> Any:
            picked = x[:, idx]  # index.Tensor: [None, idx], an optional-tensor list
            cl = x.contiguous(memory_format=torch.channels_last)
            full = torch.full((2,), float("inf"))  # written as the word "Infinity"
            cplx = torch.ops.aten.mul.Scalar(x, 1 + 2j)
            return picked, cl, full, cplx

    return archives.export("arguments/corners", Corners(), (torch.randn(2, 3, 4, 4), torch.tensor([0, 1])))


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory, archive_factory: ArchiveFactory) -> list[Archive]:
    import transformers  # noqa: F401  (HF output types must be registered for load)

    # FIDELITY_ONLY=cond,hf/ narrows the corpus as in the listing test (the
    # coverage asserts then fail on purpose)
    only = [x for x in os.environ.get("FIDELITY_ONLY", "").split(",") if x]
    archives, _ = session_corpus(tmp_path_factory, only or None)
    extra = _extra_model(archive_factory)
    loadable = []
    for archive in [*archives, Archive("corners", "extra", extra)]:
        try:
            torch_programs(archive)
        except Exception:  # noqa: BLE001 - only torch's side may be skipped (as the listing test does)
            continue
        loadable.append(archive)
    return loadable


def _float_equal(ours: Any, theirs: Any) -> bool:
    value = FLOAT_WORDS.get(ours, ours) if isinstance(ours, str) else ours
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not isinstance(theirs, float):
        return False
    return (math.isnan(value) and math.isnan(theirs)) or float(value) == theirs


def agree(arg: Argument, theirs: Any, seen: Counter[str]) -> bool:
    """Whether our decoding of `arg` is the value torch's deserializer made of it."""
    import torch
    from torch.fx import Node

    kind = arg.kind
    seen[kind] += 1
    if kind in (K.TENSOR, K.CUSTOM_OBJ):
        name = arg.name()
        return name is not None and isinstance(theirs, Node) and name == theirs.name
    if kind == K.NONE:
        return arg.is_none and theirs is None
    if kind in (K.INT, K.BOOL, K.STRING):
        value = arg.literal()
        return type(value) is type(theirs) and value == theirs \
            and (kind != K.INT or arg.int_value() == theirs)
    if kind == K.FLOAT:
        return _float_equal(arg.literal(), theirs)
    if kind in _LIST_KINDS:
        items = arg.items()
        if kind in (K.SYM_INTS, K.SYM_FLOATS, K.SYM_BOOLS) and (
                items is None or arg.syms() != [i.sym() for i in items]):
            return False  # the list decoder and the one-element one disagree
        return items is not None and isinstance(theirs, (list, tuple)) and len(items) == len(theirs) \
            and all(agree(i, t, seen) for i, t in zip(items, theirs))
    if kind in SYM_KINDS:
        sym = arg.sym()
        if sym is None:
            return False
        if sym.name is not None:
            return arg.name() == sym.name and isinstance(theirs, Node) and sym.name == theirs.name
        if kind == K.SYM_FLOAT:
            return _float_equal(sym.literal, theirs)
        return not isinstance(theirs, Node) and sym.literal == theirs
    if kind == K.OPTIONAL_TENSOR:
        inner = arg.optional()
        return inner is not None and agree(inner, theirs, seen)
    if kind == K.DEVICE:
        device = arg.device()
        return isinstance(theirs, torch.device) and device is not None \
            and (device.type, device.index) == (theirs.type, theirs.index) and str(device) == str(theirs)
    if kind == K.SCALAR_TYPE:
        return isinstance(theirs, torch.dtype) and DTYPE_REPR.get(arg.enum_code()) == str(theirs)
    if kind == K.MEMORY_FORMAT:
        return isinstance(theirs, torch.memory_format) \
            and f"torch.{MEMORY_FORMAT_NAMES.get(arg.enum_code())}" == str(theirs)
    if kind == K.LAYOUT:
        return isinstance(theirs, torch.layout) and f"torch.{LAYOUT_NAMES.get(arg.enum_code())}" == str(theirs)
    if kind == K.COMPLEX:
        return isinstance(theirs, complex) and arg.complex_value() == theirs
    if kind == K.GRAPH:  # the deserializer makes a get_attr node for the subgraph
        return isinstance(theirs, Node) and theirs.op == "get_attr" and theirs.target == arg.graph_name()
    if kind == K.OPERATOR:  # a HOP's operator argument: torch resolves the op
        return isinstance(theirs, torch._ops.OpOverload) and str(arg.value) == f"torch.ops.{theirs}"
    if kind == K.STRING_TO_ARGUMENT:
        members = arg.mapping()
        return members is not None and isinstance(theirs, dict) and members.keys() == theirs.keys() \
            and all(agree(members[k], theirs[k], seen) for k in members)
    return False  # a kind torch wrote that we cannot decode


def _graph_pairs(graph: Graph, module: Any) -> Iterator[tuple[Graph, Any]]:
    """Our graphs with the FX graph module torch built for each (a control-flow
    subgraph is an attribute of its parent's module, by the name we keep)."""
    yield graph, module
    for sub in graph.subgraphs:
        yield from _graph_pairs(sub, getattr(module, sub.name))


def _target_names(target: Any) -> tuple[str, ...]:
    """How the file may name an FX node's target: `torch.ops.aten.add.Tensor`,
    `torch.ops.higher_order.cond`, `_operator.getitem`."""
    return (f"torch.ops.{target}", f"torch.ops.higher_order.{getattr(target, '__name__', '')}",
            f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', '')}")


def _calls(archive: Archive) -> Iterator[tuple[str, Any, Argument, Any]]:
    """(where, FX node, our argument, torch's value) for each argument of each
    operator call torch and we both know by the same name (FX keeps the names of
    the file on its nodes; only its printer renames a few)."""
    from torch.fx import Node

    for name, ep in torch_programs(archive).items():
        with open_archive(archive.path) as arc:
            program = arc.program(name)
        for graph, module in _graph_pairs(program.graph, ep.graph_module):
            fx_nodes = {n.name: n for n in module.graph.nodes if n.op == "call_function"}
            for node in graph.nodes:
                candidates = [node.name, *node.output_names()] if node.name_in_file \
                    else node.output_names()
                fx = next((fx_nodes[c] for c in candidates if c in fx_nodes), None)
                # a node without a name in the file (older torch) is found through
                # its outputs: the getitem nodes the deserializer hangs under it
                while fx is not None and fx.target is operator.getitem and "getitem" not in node.target \
                        and isinstance(fx.args[0], Node):
                    fx = fx.args[0]
                where = f"{archive.name}:{name}:{node.name}"
                if fx is None or node.target not in _target_names(fx.target):
                    yield where, None, Argument(K.UNKNOWN, None), None
                    continue
                positional = [i for i in node.inputs if i.kind == POSITIONAL]
                if len(positional) != len(fx.args) or any(
                        i.kind not in (POSITIONAL, KEYWORD) for i in node.inputs):
                    continue  # an op torch rebuilds by its schema (older files): not here
                for inp, value in zip(positional, fx.args):
                    yield f"{where}:{inp.name}", fx, inp.arg, value
                for inp in node.inputs:
                    if inp.kind == KEYWORD:
                        yield f"{where}:{inp.name}", fx, inp.arg, fx.kwargs.get(inp.name, KeyError)


def test_accessors_agree_with_torch_deserializer(corpus: list[Archive]) -> None:
    seen: Counter[str] = Counter()
    compared = 0
    wrong: list[str] = []
    unmatched: list[str] = []
    for archive in corpus:
        for where, fx, arg, theirs in _calls(archive):
            if fx is None:
                unmatched.append(where)
                continue
            compared += 1
            if not agree(arg, theirs, seen):
                wrong.append(f"{where}: ours {arg.kind} {arg.value!r:.120} vs torch {theirs!r:.120}")
    print(f"\n{compared} arguments compared, {len(unmatched)} nodes unmatched, kinds: {dict(seen)}")
    assert not wrong, f"{len(wrong)} of {compared} arguments differ:\n" + "\n".join(wrong[:40])
    assert compared > 4000, f"only {compared} arguments compared: the corpus or the matching shrank"
    # Nodes we could not pair with torch's by name are not compared: keep them rare.
    assert len(unmatched) < 0.02 * compared, f"{len(unmatched)} nodes not matched: {unmatched[:20]}"
    missing = _EXPECTED_KINDS - set(seen)
    assert not missing, f"kinds no longer reached: {sorted(missing)}"


def test_sym_sizes_agree_with_torch(corpus: list[Archive]) -> None:
    """sym_scalar / sym_size / decode_device on the raw records: each user input's
    sizes (a literal, or an expression whose hint is the example export traced
    with) against torch's example inputs; each weight's sizes and device against
    the state dict torch loads."""
    import torch

    sizes = hints = weights = 0
    for archive in corpus:
        for name, ep in torch_programs(archive).items():
            with open_archive(archive.path) as arc:
                doc = arc.program_json(name)
                program = arc.program(name)
                raw_values = doc["graph_module"]["graph"]["tensor_values"]
                examples = torch.utils._pytree.tree_leaves(ep.example_inputs) \
                    if ep.example_inputs is not None else []
                users = program.forward_inputs()
                if len(examples) == len(users):
                    for spec, example in zip(users, examples):
                        if not isinstance(example, torch.Tensor) or spec.name not in raw_values:
                            continue
                        raw_sizes = raw_values[spec.name]["sizes"]
                        assert len(raw_sizes) == example.dim()
                        for raw, size in zip(raw_sizes, example.shape):
                            sym = sym_scalar(raw)
                            assert sym is not None, raw
                            sizes += 1
                            if sym.expr is None:
                                assert sym.literal == size == sym_size(raw)
                            else:
                                hints += sym.hint is not None
                                assert sym.hint in (None, size), (archive.name, spec.name, raw)
                                assert sym_size(raw) == sym.expr
                rel = f"data/weights/{name}_weights_config.json"
                if arc.record(rel) is None:
                    continue
                config = arc.read_json(rel).get("config", {})
                for fqn, entry in config.items():
                    tensor = ep.state_dict.get(fqn)
                    if tensor is None:
                        continue
                    meta = entry["tensor_meta"]
                    assert tuple(sym_size(s) for s in meta["sizes"]) == tuple(tensor.shape), fqn
                    device = decode_device(meta["device"])
                    assert device is not None and str(device) == str(tensor.device), fqn
                    weights += 1
    assert sizes > 100 and hints > 20 and weights > 100, (sizes, hints, weights)


def test_accessors_on_other_kinds_answer_none() -> None:
    """Each accessor answers for its own kinds only, and damaged values decode to
    None (or `unknown` for a device) instead of raising."""
    tensor = Argument.of({"as_tensor": {"name": "x"}})
    assert (tensor.name(), tensor.sym(), tensor.device(), tensor.items(), tensor.literal(),
            tensor.graph_name(), tensor.enum_code(), tensor.mapping()) == ("x", *[None] * 7)
    assert Argument.of({"as_int": 3, "extra": 1}).kind == K.UNKNOWN
    assert Argument.of({"as_device": None}).device() is not None  # still a device, type unknown
    assert str(Argument.of({"as_device": None}).device()) == "unknown"
    for damaged in ({"as_tensor": 5}, {"as_sym_int": {"as_name": 3}}, {"as_tensors": None},
                    {"as_optional_tensor": {"as_int": 1}}, {"as_graph": []},
                    {"as_string_to_argument": [1]}, {"as_complex": "1+2j"}):
        arg = Argument.of(damaged)
        assert (arg.name(), arg.sym(), arg.items(), arg.optional(), arg.graph_name(),
                arg.mapping(), arg.complex_value()) == (None,) * 7, damaged
    assert sym_scalar({"as_expr": {"expr_str": 7}}) is not None and sym_size({"as_expr": {}}) == "?"
    assert sym_size({"as_int": True}) == "?" and sym_size(None) == "?"
