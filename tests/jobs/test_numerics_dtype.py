"""The frozen-dtype rewrite against a real bf16 export of the same model.

One tiny GPT-2, exported at fp32 and as `copy.deepcopy(model).to(torch.bfloat16)`:
- `retarget --dtype bf16` of the fp32 archive loads with torch and is the bf16
  export: every weight bit for bit, every node's recorded dtype, every node's
  arguments, the logits bit for bit;
- the audit's `dtype-literal` rule finds the fp32 archive's frozen literals (the
  assert that raises "Tensor dtype mismatch" under bf16 weights among them) and none
  in the bf16 export or the retargeted archive;
- `numerics --precision bf16`: its candidate's value at every node is what torch's
  interpreter over the bf16 export gives for that node;
- the raw-bytes conversion is torch's own `Tensor.to` (NaN, Inf, subnormals, ties).
"""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_profile import cli

torch = pytest.importorskip("torch")

from inspector.core.archive import open_archive  # noqa: E402
from inspector.core.audit import DTYPE_LITERAL, audit_archive  # noqa: E402
from inspector.core.dtype_literals import BFLOAT16, FLOAT16, FLOAT32  # noqa: E402
from inspector.core.retarget_dtype import convert  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import transformers as tf

    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=2,
                                             n_positions=64, use_cache=False)).eval()
    ids = torch.zeros(2, 8, dtype=torch.long)
    root = tmp_path_factory.mktemp("dtype-pair")
    with torch.no_grad():
        ep32 = torch.export.export(model, (ids,))
        ep16 = torch.export.export(copy.deepcopy(model).to(torch.bfloat16), (ids,))
    p32, p16, pr = root / "fp32.pt2", root / "bf16.pt2", root / "retargeted.pt2"
    torch.export.save(ep32, str(p32))
    torch.export.save(ep16, str(p16))
    proc = cli("retarget", str(p32), "--dtype", "bf16", "-o", str(pr), "--json")
    assert proc.returncode == 0, proc.stderr
    return {"fp32": p32, "bf16": p16, "retargeted": pr, "ids": ids,
            "result": json.loads(proc.stdout)}


def _values(ep: Any) -> dict[str, Any]:
    return {n.name: n for n in ep.graph_module.graph.nodes}


def test_retarget_dtype_is_the_bf16_export(pair):
    ours = torch.export.load(str(pair["retargeted"]))
    theirs = torch.export.load(str(pair["bf16"]))
    assert set(ours.state_dict) == set(theirs.state_dict)
    for key, want in theirs.state_dict.items():
        got = ours.state_dict[key]
        assert got.dtype == want.dtype == torch.bfloat16, key
        assert torch.equal(got.view(torch.int16), want.view(torch.int16)), key
    a, b = _values(ours), _values(theirs)
    assert list(a) == list(b)
    for name, node in a.items():
        va, vb = node.meta.get("val"), b[name].meta.get("val")
        if isinstance(vb, torch.Tensor):
            assert va.dtype == vb.dtype, name
        if node.op == "call_function":
            assert (str(node.args), str(node.kwargs)) == (str(b[name].args), str(b[name].kwargs)), name
    with torch.no_grad():
        got = ours.module()(pair["ids"]).logits
        want = theirs.module()(pair["ids"]).logits
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)
    (program,) = pair["result"]["programs"]
    assert program["dtype"]["literals"] >= 2 and pair["result"]["remaining_fp32_literals"] == {
        program["program"]: 0}


def test_an_fp32_archive_cast_by_torch_fails_where_the_rule_points(pair):
    """The issue's failure, and the rule's finding at that very node."""
    ep = torch.export.load(str(pair["fp32"]))
    with pytest.raises(RuntimeError, match="Tensor dtype mismatch") as raised:
        with torch.no_grad():
            ep.module().to(torch.bfloat16)(pair["ids"])
    with open_archive(pair["fp32"]) as ar:
        found = audit_archive(ar, rules=[DTYPE_LITERAL])
    asserts = [f for f in found if f.group == "assert"]
    assert asserts
    assert any(f.group == "cast" for f in found)
    for clean in ("bf16", "retargeted"):
        with open_archive(pair[clean]) as ar:
            assert audit_archive(ar, rules=[DTYPE_LITERAL]) == [], clean


def test_precision_candidate_values_are_the_bf16_export_s(pair):
    from test_numerics_torch import _bitwise_equal, _interpret, _torch_programs

    from inspector.jobs.graph_spec import GraphRunSpec
    from inspector.jobs.inputs import flat_arguments, user_values
    from inspector.jobs.numerics import compare_program, prepare
    from inspector.jobs.numerics_spec import NumericsSpec
    from inspector.jobs.protocol import Emitter

    spec = NumericsSpec(GraphRunSpec(file=str(pair["fp32"])), "precision", "bf16").validate()
    emit = Emitter(io.StringIO())
    prepared = prepare(torch, spec, emit)
    name = prepared.loaded.names[0]
    cand: dict[str, Any] = {}

    def observe(rnode, rvalue, cname, cvalue):
        if cname is not None:
            cand[cname] = cvalue.clone() if isinstance(cvalue, torch.Tensor) else cvalue

    record = compare_program(torch, spec, prepared, name, emit, observe=observe)
    assert record["ok"], record["failures"]
    ep16 = _torch_programs(pair["bf16"])[name]
    users = user_values(torch, prepared.loaded.plans[name], torch.device("cpu"))
    users = {k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in users.items()}
    want = _interpret(ep16.graph_module, flat_arguments(ep16, users, lambda k, t, v: v))
    checked = 0
    for node, value in want.items():
        if node in cand and not node.startswith("output"):
            assert _bitwise_equal(cand[node], value), node
            checked += 1
    assert checked == len([n for n in want if not n.startswith("output")])
    assert record["candidate"]["dtype_literals"]["rewritten"] >= 2


@pytest.mark.parametrize("to", [BFLOAT16, FLOAT16])
def test_conversion_is_torch_s(to):
    gen = torch.Generator().manual_seed(0)
    values = torch.cat([
        torch.randn(4096, generator=gen) * 10.0 ** torch.randint(-45, 39, (4096,), generator=gen),
        torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, -1e-45,
                      3.4028235e38, 65504.0, 65520.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8]),
    ]).float()
    dtype = torch.bfloat16 if to == BFLOAT16 else torch.float16
    want = values.to(dtype)
    got = torch.frombuffer(bytearray(convert(values.numpy().tobytes(), FLOAT32, to)),
                           dtype=dtype)
    same = got.view(torch.int16) == want.view(torch.int16)
    both_nan = torch.isnan(got) & torch.isnan(want)
    assert bool((same | both_nan).all())


def test_retarget_needs_a_device_or_a_dtype(pair, tmp_path):
    proc = cli("retarget", str(pair["fp32"]), "-o", str(tmp_path / "x.pt2"))
    assert proc.returncode == 2 and proc.stderr.startswith("error:")
    assert not (tmp_path / "x.pt2").exists()
    proc = subprocess.run([sys.executable, "-m", "inspector", "retarget", str(pair["fp32"]),
                           "--dtype", "fp8", "-o", str(tmp_path / "x.pt2")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
