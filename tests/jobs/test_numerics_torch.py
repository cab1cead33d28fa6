"""`numerics` against torch itself.

- Every value the job captures, in both runs, is bit for bit what a plain
  torch.fx.Interpreter over the program torch's own loader makes gives for that node
  with the same inputs: across the fidelity corpus's loadable programs (HF GPT-2,
  BERT, Llama, T5, ViT, Whisper, MoE ..., torch.export feature cases) and more HF
  architectures (ResNet, Qwen2, DistilBERT, Whisper).
- An archive against itself and against its retarget: every node's error exactly 0.
- One NaN written into a weight: the first NaN reported is the first node whose
  output torch's interpreter shows with a NaN, made by that weight.
- --with on an fp32 and a bf16 export of one tiny GPT-2: the final output's error is
  what torch alone computes, and every matched node's error is what a torch
  interpreter pair over the two programs gives.
"""

from __future__ import annotations

import copy
import io
import json
import math
import struct
import sys
from pathlib import Path
from typing import Any

import graph_corpus
import pytest
from jobs_helpers import rewrite_archive
from test_profile import cli

torch = pytest.importorskip("torch")

from inspector.jobs.graph_run import load_for_run  # noqa: E402
from inspector.jobs.graph_spec import GraphRunSpec  # noqa: E402
from inspector.jobs.inputs import flat_arguments, user_values  # noqa: E402
from inspector.jobs.numerics import compare_program, prepare  # noqa: E402
from inspector.jobs.numerics_compare import unwrap  # noqa: E402
from inspector.jobs.numerics_spec import NumericsSpec  # noqa: E402
from inspector.jobs.protocol import Emitter  # noqa: E402

pytestmark = pytest.mark.slow  # captured values against torch's interpreter on the corpus: minutes

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _torch_programs(path: Path) -> dict[str, Any]:
    import transformers.modeling_outputs  # noqa: F401 - registers HF output types with pytree
    from torch.export.pt2_archive._package import load_pt2

    return load_pt2(str(path)).exported_programs


def _interpret(gm: Any, args: list[Any]) -> dict[str, Any]:
    """Every node's value under torch's own Interpreter (values cloned as made)."""
    seen: dict[str, Any] = {}

    class Recording(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            seen[n.name] = _clone(out)
            return out

    with torch.no_grad():
        Recording(gm).run(*args)
    return seen


def _clone(value: Any) -> Any:
    return torch.utils._pytree.tree_map(
        lambda v: v.clone() if isinstance(v, torch.Tensor) else v, value)


def _bitwise_equal(a: Any, b: Any) -> bool:
    if isinstance(a, torch.nn.Module) or isinstance(b, torch.nn.Module):
        # a control-flow subgraph fetched by get_attr: a module, not a value (torch
        # gives each GraphModule its own class, so compare the code it runs)
        return (isinstance(a, torch.nn.Module) and isinstance(b, torch.nn.Module)
                and getattr(a, "code", None) == getattr(b, "code", None))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        a, b = unwrap(torch, a), unwrap(torch, b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.device.type == "meta":
            return a.device == b.device  # no data to compare: dtype and shape did
        if a.is_floating_point():
            # bit for bit, NaNs included
            width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
            return torch.equal(a.contiguous().view(width), b.contiguous().view(width))
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return (isinstance(b, (tuple, list)) and len(a) == len(b)
                and all(_bitwise_equal(x, y) for x, y in zip(a, b)))
    return a == b


def _captured(spec: NumericsSpec, names: list[str] | None = None):
    """(loaded, per program: (record, ref values, cand values)) from compare_program."""
    emit = Emitter(io.StringIO())
    prepared = prepare(torch, spec, emit)
    loaded = prepared.loaded
    out = {}
    for name in names or loaded.names:
        ref: dict[str, Any] = {}
        cand: dict[str, Any] = {}

        def observe(rnode, rvalue, cname, cvalue):
            ref[rnode.name] = _clone(rvalue)
            if cname is not None:
                cand[cname] = _clone(cvalue)

        record = compare_program(torch, spec, prepared, name, emit, observe=observe)
        out[name] = (record, ref, cand)
    return loaded, out


def _args(ep: Any, plan: Any, seed: int = 0) -> list[Any]:
    users = user_values(torch, plan, torch.device("cpu"), seed)
    return flat_arguments(ep, users, lambda kind, target, v: v)


def _spec(path: Path, candidate: str, value: str = "") -> NumericsSpec:
    return NumericsSpec(GraphRunSpec(file=str(path)), candidate, value).validate()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, programs, skipped = graph_corpus.cached_build(exportdb=[
        "cond_operands", "list_unpack", "scalar_output", "dynamic_shape_slicing"])
    print("\ncorpus:", len(programs), "programs; skipped:", *skipped, sep="\n  ")
    return path


def _check_against_torch(path: Path) -> int:
    """Both runs of the CPU self-check (another thread count) against torch's own
    interpreter; returns how many programs were checked."""
    loaded, runs = _captured(_spec(path, "on", "cpu"))
    torch_eps = _torch_programs(path)
    checked = 0
    for name, (record, ref, cand) in runs.items():
        if not record["ok"]:
            # a program that cannot run on these inputs fails in torch too
            with pytest.raises(Exception):  # noqa: B017, PT011
                _interpret(torch_eps[name].graph_module, _args(torch_eps[name], loaded.plans[name]))
            continue
        ep, args = torch_eps[name], _args(torch_eps[name], loaded.plans[name])
        if any(torch.Tag.nondeterministic_seeded in getattr(n.target, "tags", ())
               and "empty" not in str(n.target)  # torch tags empty's garbage so too
               for n in ep.graph_module.graph.nodes):
            # a seeded random op (training-mode dropout): the lockstep runs draw from one
            # generator in turn, so no lone interpreter run draws the same numbers
            continue
        if (ep.graph_signature.buffers_to_mutate or ep.graph_signature.user_inputs_to_mutate
                or any(getattr(getattr(n.target, "_schema", None), "is_mutable", False)
                       for n in ep.graph_module.graph.nodes)):
            # a program that updates its state in place: each run starts where the last
            # one left it, so a fresh interpreter run starts elsewhere
            continue
        want = _interpret(ep.graph_module, args)
        # functorch's vmap nesting calls return the interpreter's global vmap level,
        # which counts up across runs: a counter, not a value the program computes
        counters = {n.name for n in ep.graph_module.graph.nodes
                    if "_nesting" in getattr(n.target, "__name__", "")}
        ops = [n for n in want if not n.startswith("output")]
        assert set(ops) <= set(ref), (name, set(ops) - set(ref))
        ops = [n for n in ops if n not in counters]
        for node in ops:
            assert _bitwise_equal(ref[node], want[node]), (name, node, "reference")
        # the candidate ran with another thread count: torch's interpreter with it
        threads = torch.get_num_threads()
        torch.set_num_threads(1 if threads > 1 else 2)
        try:
            cand_want = _interpret(ep.graph_module, args)
        finally:
            torch.set_num_threads(threads)
        assert set(ops) <= set(cand), (name, "candidate")
        for node in ops:
            assert _bitwise_equal(cand[node], cand_want[node]), (name, node, "candidate")
        checked += 1
    return checked


def test_captured_values_are_torch_s_on_the_corpus(corpus):
    assert _check_against_torch(corpus) >= 15


def test_with_the_other_archive_captures_its_torch_values(tiny_archive, tmp_path):
    """--with: the candidate's values are torch's interpreter over the other archive."""
    other = tmp_path / "other.pt2"
    other.write_bytes(tiny_archive.read_bytes())
    loaded, runs = _captured(_spec(tiny_archive, "with", str(other)))
    torch_eps = _torch_programs(other)
    for name, (record, _ref, cand) in runs.items():
        assert record["ok"], record["failures"]
        want = _interpret(torch_eps[name].graph_module, _args(torch_eps[name], loaded.plans[name]))
        for node, value in cand.items():
            if not node.startswith("output"):
                assert _bitwise_equal(value, want[node]), (name, node)
        assert len(cand) > 50


# --- zero error: itself, its retarget ---------------------------------------------

def _json(*args: str) -> tuple[int, dict[str, Any]]:
    proc = cli("numerics", *args, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _all_zero(result: dict[str, Any]) -> None:
    for p in result["programs"]:
        assert p["ok"] and p["nodes"], p["name"]
        for n in p["nodes"] + p["graph_inputs"] + p["outputs"]:
            assert n["max_abs"] == 0.0 and n["mean_abs"] == 0.0 and n["passes"], (p["name"], n)
            assert n["max_rel"] in (0.0, None)
        assert p["first_over_tolerance"] is None and p["first_nan"] is None


def test_an_archive_against_itself_and_its_retarget_is_exactly_zero(tiny_archive, tmp_path):
    same = tmp_path / "same.pt2"
    same.write_bytes(tiny_archive.read_bytes())
    code, result = _json(str(tiny_archive), "--device", "cpu", "--with", str(same))
    assert code == 0
    _all_zero(result)
    assert all(len(p["graph_inputs"]) > 10 for p in result["programs"])  # weights compared
    retargeted = tmp_path / "retargeted.pt2"
    proc = cli("retarget", str(tiny_archive), "--device", "cpu", "-o", str(retargeted))
    assert proc.returncode == 0, proc.stderr
    code, result = _json(str(tiny_archive), "--device", "cpu", "--with", str(retargeted))
    assert code == 0
    _all_zero(result)
    code, result = _json(str(tiny_archive), "--device", "cpu", "--on", "cpu",
                         "--program", "decoder")
    _all_zero(result)


# --- one NaN in a weight --------------------------------------------------------------

def test_a_nan_in_a_weight_is_found_where_torch_shows_it_first(tiny_archive, tmp_path):
    from inspector.core.archive import open_archive

    target = "decoder.transformer.h.1.mlp.c_fc.weight"
    with open_archive(tiny_archive) as ar:
        config = ar.payload_config("decoder", "weights")
    blob = config[target]["path_name"]

    def edit(rel: str, data: bytes) -> bytes:
        if rel == f"data/weights/{blob}":
            return struct.pack("<f", math.nan) + data[4:]
        return data

    broken = rewrite_archive(tiny_archive, tmp_path / "nan.pt2", edit)
    code, result = _json(str(broken), "--device", "cpu", "--on", "cpu", "--program", "decoder")
    (p,) = result["programs"]
    ep = _torch_programs(broken)["decoder"]
    loaded = load_for_run(GraphRunSpec(file=str(broken), programs=("decoder",)),
                          Emitter(io.StringIO()), payloads="cpu")
    plan = loaded.plans["decoder"]
    want = _interpret(ep.graph_module, _args(ep, plan))
    placeholders = {n.name for n in ep.graph_module.graph.nodes if n.op == "placeholder"}
    first = next(name for name, v in want.items() if name not in placeholders
                 and any(isinstance(t, torch.Tensor) and t.is_floating_point()
                         and bool(torch.isnan(t).any())
                         for t in torch.utils._pytree.tree_leaves(v)))
    assert p["first_nan"] == first
    info = p["first_nan_info"]
    assert info["from_input"] and info["made_by"] == "p_decoder_transformer_h_1_mlp_c_fc_weight"
    assert info["runs"] == ["reference", "candidate"]
    assert code == 0  # a NaN at the same place in both runs is the same computation


# --- fp32 against a bf16 export --------------------------------------------------------

@pytest.fixture(scope="module")
def gpt2_pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import transformers as tf

    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=2,
                                             n_positions=64, use_cache=False)).eval()
    ids = torch.zeros(2, 8, dtype=torch.long)
    root = tmp_path_factory.mktemp("gpt2-pair")
    with torch.no_grad():
        ep32 = torch.export.export(model, (ids,))
        ep16 = torch.export.export(copy.deepcopy(model).to(torch.bfloat16), (ids,))
    p32, p16 = root / "gpt2-fp32.pt2", root / "gpt2-bf16.pt2"
    torch.export.save(ep32, str(p32))
    torch.export.save(ep16, str(p16))
    return {"fp32": p32, "bf16": p16, "ids": ids}


def test_with_a_bf16_export_final_error_is_torch_s(gpt2_pair):
    code, result = _json(str(gpt2_pair["fp32"]), "--device", "cpu", "--with",
                         str(gpt2_pair["bf16"]))
    assert code == 1  # bf16 drifts past fp32's tolerance... and bf16's
    (p,) = result["programs"]
    ep32 = torch.export.load(str(gpt2_pair["fp32"]))
    ep16 = torch.export.load(str(gpt2_pair["bf16"]))
    x = gpt2_pair["ids"]  # the job's int inputs are zeros, as here
    with torch.no_grad():
        a = ep32.module()(x).logits
        b = ep16.module()(x).logits
    want = (a - b.float()).abs().max().item()
    want64 = (a.double() - b.double()).abs().max().item()
    (out,) = p["outputs"]
    assert out["max_abs"] == want64
    assert out["max_abs"] == pytest.approx(want, rel=1e-6)
    assert p["first_over_tolerance"] is not None


def test_with_a_bf16_export_every_matched_node_is_a_torch_pair_s(gpt2_pair):
    from inspector.jobs.numerics_compare import compare

    loaded, runs = _captured(_spec(gpt2_pair["fp32"], "with", str(gpt2_pair["bf16"])))
    name = loaded.names[0]
    record, ref, cand = runs[name]
    ep32 = _torch_programs(gpt2_pair["fp32"])[name]
    ep16 = _torch_programs(gpt2_pair["bf16"])[name]
    want32 = _interpret(ep32.graph_module, _args(ep32, loaded.plans[name]))
    users16 = {k: v for k, v in user_values(torch, loaded.plans[name], torch.device("cpu")).items()}
    want16 = _interpret(ep16.graph_module, flat_arguments(ep16, users16, lambda k, t, v: v))
    checked = 0
    for n in record["nodes"]:
        got = compare(torch, want32[n["node"]], want16[n["candidate"]], None, None).record()
        assert got["max_abs"] == n["max_abs"] and got["passes"] == n["passes"], n["node"]
        # a view node's numbers may be its source's (jobs/numerics_views.py): sums in
        # another order, the same to rounding
        for key in ("mean_abs", "cosine", "rel_l2"):
            if got[key] is None or n[key] is None:
                assert got[key] == n[key], (n["node"], key)
            else:
                assert n[key] == pytest.approx(got[key], rel=1e-12), (n["node"], key)
        assert _bitwise_equal(ref[n["node"]], want32[n["node"]])
        assert _bitwise_equal(cand[n["candidate"]], want16[n["candidate"]])
        checked += 1
    assert checked > 100


def test_on_another_device_moves_every_baked_device_literal(tiny_archive):
    """`--on DEV2` runs a copy of the graph whose baked devices are moved (the CPU path
    of `--on cuda:0`): exactly the literals the audit's device-literal rule counts, as
    torch's own move_to_device_pass moves them, and the reference graph untouched."""
    from torch.export.passes import move_to_device_pass

    from inspector.core.archive import open_archive
    from inspector.core.audit import DEVICE_LITERAL, audit_archive
    from inspector.jobs.numerics_candidates import move_device_literals

    ep = _torch_programs(tiny_archive)["decoder"]
    before = [(n.name, str(n.args), str(n.kwargs)) for n in ep.graph_module.graph.nodes]
    gm = copy.deepcopy(ep.graph_module)
    moved = move_device_literals(torch, gm, torch.device("cpu"), torch.device("meta"))
    with open_archive(tiny_archive) as ar:
        assert moved == len(audit_archive(ar, rules=[DEVICE_LITERAL], programs=["decoder"]))
    assert [(n.name, str(n.args), str(n.kwargs)) for n in ep.graph_module.graph.nodes] == before
    theirs = move_to_device_pass(copy.deepcopy(ep), "meta").graph_module

    def said(g):  # torch.device('meta') and 'meta' are one device
        return [(n.name, str(n.args), str(n.kwargs).replace("device(type='meta')", "'meta'"))
                for n in g.graph.nodes]

    assert said(gm) == said(theirs)
