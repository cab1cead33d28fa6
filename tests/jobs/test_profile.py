"""`profile` (and `check`) on archives this project never wrote, through real children.

The corpus (graph_corpus.py) is the fidelity corpus's models: HF architectures,
torch.export feature cases (multi-output ops, control flow, symbolic ints, mutation,
decompositions), ExportDB examples, in one multi-program archive. Every op node must
be timed under the name torch gives it and at the line the listing prints it on."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import graph_corpus
import pytest

from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
from inspector.jobs.__main__ import EXIT_CANCELLED
from inspector.jobs.runner import Job, child_env

NODE_KEYS = {"name", "target", "ms", "share", "line", "module"}
MODULE_KEYS = {"path", "class", "ms", "share", "nodes"}
PROGRAM_KEYS = {"name", "inputs", "forward_ms", "nodes", "modules"}


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, env=child_env(), timeout=timeout)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    path, programs, skipped = graph_corpus.cached_build(exportdb=[
        "cond_operands", "dynamic_shape_map", "list_unpack", "dictionary", "nested_function",
        "scalar_output", "static_for_loop", "type_reflection_method",
        "constrain_as_size_example", "pytree_flatten", "tensor_setattr",
        "user_input_mutation", "dynamic_shape_view", "dynamic_shape_slicing"])
    print("\ncorpus:", len(programs), "programs; skipped:", *skipped, sep="\n  ")
    return path, sorted(programs)


@pytest.fixture(scope="module")
def corpus_profile(corpus) -> dict[str, Any]:
    proc = cli("profile", str(corpus[0]), "--device", "cpu", "--warmup", "0", "--repeats", "2",
               "--json")
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _torch_programs(path: Path) -> dict[str, Any]:
    """What torch's own loader makes of the archive."""
    import transformers  # noqa: F401 - registers the HF output types with pytree
    from torch.export.pt2_archive._package import load_pt2

    return load_pt2(str(path)).exported_programs


def _torch_names(ep: Any) -> list[str]:
    return [n.name for n in ep.graph_module.graph.nodes if n.op not in ("placeholder", "output")]


def _check_names(path: Path, result: dict[str, Any], expect_failures: set[str]) -> int:
    torch_programs = _torch_programs(path)
    checked = 0
    with open_archive(path) as ar:
        for p in result["programs"]:
            if p["name"] in expect_failures:
                assert not p["ok"], p["name"]
                continue
            assert p["ok"], (p["name"], p["failures"])
            assert PROGRAM_KEYS <= set(p)
            listing = render_listing(ar.program(p["name"]))
            names = [n["name"] for n in p["nodes"]]
            # every op node, in graph order, under torch's own names
            assert names == _torch_names(torch_programs[p["name"]]), p["name"]
            for n in p["nodes"]:
                assert set(n) == NODE_KEYS
                assert n["ms"] >= 0 and 0 <= n["share"] <= 1
                # the line of `list --program` that defines the node
                assert isinstance(n["line"], int), (p["name"], n)
                text = listing.lines[n["line"] - 1].lstrip()
                # the listing prints a value FX renames (a node `sum_1` after an input
                # `sum`) under its printed name, as print_readable does
                shown = {n["name"], *(v for (_g, k), v in listing.printed.items()
                                       if k == n["name"])}
                assert text.startswith(tuple(f"{s}{sep}" for s in shown for sep in (": ", " = "))), (
                    p["name"], text)
            if p["nodes"]:
                total = sum(n["ms"] for n in p["nodes"])
                if total > 0:
                    assert math.isclose(sum(n["share"] for n in p["nodes"]), 1.0, abs_tol=1e-3)
            checked += 1
    return checked


@pytest.mark.slow
def test_every_op_node_is_timed_under_the_listing_names(corpus, corpus_profile):
    path, names = corpus
    assert [p["name"] for p in corpus_profile["programs"]] == names
    # ops_unbacked checks `u1 >= 2` on data it reads from its input: zeros fail it
    checked = _check_names(path, corpus_profile, {"ops_unbacked"})
    assert checked >= 45
    groups = {n.split("_")[0] for n in names}
    assert {"hf", "ops", "cond", "decomp", "exportdb", "multi"} <= groups


@pytest.mark.slow
def test_legacy_archive_without_node_names_profiles_under_the_deserializers_names(
        corpus, tmp_path):
    path = graph_corpus.without_names(corpus[0], tmp_path / "noname.pt2")
    proc = cli("profile", str(path), "--device", "cpu", "--warmup", "0", "--repeats", "1",
               "--json", "--program", "hf_bart", "--program", "ops_multi_output",
               "--program", "cond_nested_cond")
    assert proc.returncode == 0, proc.stderr
    assert _check_names(path, json.loads(proc.stdout), set()) == 3


def test_rollups_add_up(corpus_profile):
    for p in corpus_profile["programs"]:
        if not p["ok"] or not p["nodes"]:
            continue
        total = sum(n["ms"] for n in p["nodes"])
        assert math.isclose(sum(o["ms"] for o in p["ops"]), total, rel_tol=1e-4, abs_tol=1e-5)
        assert sum(o["nodes"] for o in p["ops"]) == len(p["nodes"])
        parent = {m["path"]: m["parent"] for m in p["modules"]}

        def chain(path: str) -> list[str]:
            out = []
            while path is not None and path in parent:
                out.append(path)
                path = parent[path]
            return out

        for m in p["modules"]:
            assert set(m) >= MODULE_KEYS
            if m["path"] == "":
                continue  # "" is both the root module and "no module": not separable here
            inside = [n for n in p["nodes"] if n["module"] and m["path"] in chain(n["module"])]
            assert m["nodes"] == len(inside), (p["name"], m["path"])
            assert math.isclose(m["ms"], sum(n["ms"] for n in inside), rel_tol=1e-4,
                                abs_tol=1e-4), (p["name"], m["path"])


def test_hf_gpt2_modules_are_the_model_s_own(corpus_profile):
    gpt2 = next(p for p in corpus_profile["programs"] if p["name"] == "hf_gpt2")
    paths = {m["path"]: m for m in gpt2["modules"]}
    assert {"transformer.h.0", "transformer.h.1", "transformer.h.0.attn", "lm_head"} <= set(paths)
    assert paths["transformer.h.0"]["class"].endswith("GPT2Block")
    assert paths["transformer.h.0.attn"]["parent"] == "transformer.h.0"
    # a module's time holds its submodules' times
    assert paths["transformer.h.0"]["ms"] >= paths["transformer.h.0.attn"]["ms"]
    assert any(s["file"].endswith("modeling_gpt2.py") for s in gpt2["sources"])


def test_a_failure_during_the_real_run_exits_1_with_check_s_record(corpus):
    import torch

    proc = cli("profile", str(corpus[0]), "--device", "cpu", "--program", "ops_unbacked",
               "--warmup", "0", "--repeats", "1", "--json")
    assert proc.returncode == 1, proc.stderr
    (p,) = json.loads(proc.stdout)["programs"]
    assert p["ok"] is False and p["nodes"] == []
    (f,) = p["failures"]
    assert set(f) == {"node", "target", "line", "message", "frames"}
    # torch's own run of the same graph on the same inputs fails the same way
    ep = _torch_programs(corpus[0])["ops_unbacked"]
    shapes = [i["shape"] for i in p["inputs"]]
    args = [torch.zeros(s, dtype=getattr(torch, i["dtype"])) for s, i in zip(shapes, p["inputs"])]
    with pytest.raises(Exception) as info:
        ep.module()(*args)
    assert f["message"] in str(info.value)
    with open_archive(corpus[0]) as ar:
        listing = render_listing(ar.program("ops_unbacked"))
    assert listing.lines[f["line"] - 1].lstrip().startswith(f["node"])
    assert f["target"] == "torch.ops.aten._assert_scalar.default"


@pytest.mark.slow
def test_check_finds_nothing_on_cpu_across_the_corpus(corpus):
    proc = cli("check", str(corpus[0]), "--device", "cpu", "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    result = json.loads(proc.stdout)
    assert len(result["programs"]) == len(corpus[1])
    assert all(p["ok"] for p in result["programs"])


def test_toy_decoder_step_at_a_chosen_sequence_length(tiny_archive):
    """Item 5: one decoder step of the toy, at sequence length 24, batch 1."""
    proc = cli("profile", str(tiny_archive), "--device", "cpu", "--program", "decoder",
               "--input", "input_ids=1x24", "--warmup", "1", "--repeats", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert {"device", "programs"} <= set(result) and result["device"] == "cpu"
    (p,) = result["programs"]
    assert p["inputs"] == [
        {"name": "input_ids", "shape": [1, 24], "dtype": "int64"},
        {"name": "encoder_hidden_states", "shape": [1, 50, 64], "dtype": "float32"}]
    assert p["forward_ms"] > 0 and p["node_ms"] > 0
    assert p["symbols"] == {"s70": 24, "s72": 1}
    assert _check_names(tiny_archive, {"programs": [p]}, set()) == 1
    heavy = {o["target"] for o in p["ops"][:5]}
    assert heavy & {"torch.ops.aten.addmm.default", "torch.ops.aten.linear.default",
                    "torch.ops.aten.scaled_dot_product_attention.default",
                    "torch.ops.aten.layer_norm.default"}


def test_text_output_and_bf16(tiny_archive):
    proc = cli("profile", str(tiny_archive), "--device", "cpu", "--program", "decoder",
               "--precision", "bf16", "--warmup", "0", "--repeats", "1", "--top", "3",
               "--threads", "1")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "bf16, perf_counter" in out
    assert "decoder: inputs input_ids int64[2, 8]" in out
    assert "forward " in out and "nodes sum " in out and "instrumented run " in out
    assert "decoder.transformer (GPT2Model)" in out


@pytest.mark.parametrize("args, why", [
    (["--device", "cuda"], "device cuda is not available here"),
    (["--device", "cpu", "--repeats", "0"], "repeats 0 is out of range"),
    (["--device", "cpu", "--precision", "fp16"], "invalid choice"),
    (["--device", "cpu", "--dim", "s70=1"], "outside its range"),
])
def test_bad_input_is_one_error_line_exit_2(tiny_archive, args, why):
    proc = cli("profile", str(tiny_archive), *args)
    assert proc.returncode == 2, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and why in lines[0], proc.stderr


def test_cancel_ends_the_profile_child(tiny_archive):
    child = Job("profile", [str(tiny_archive), "--device", "cpu", "--repeats", "10000"])
    for event in child.events():
        assert event["event"] != "error", f"the profile failed before its runs: {event}"
        if event["event"] == "progress" and event["stage"].startswith("profile decoder: run"):
            break
    else:
        pytest.fail(f"the profile ended before its runs (exit {child.proc.returncode}): "
                    f"{child.stderr_tail()}")
    assert child.running(), "the profile had already ended: nothing to cancel"
    code = child.cancel()
    # Ended by our SIGTERM through its handler inside the grace period (exit 130),
    # not SIGKILLed after it (-9) and not finished: the latency is bench_profile.py's.
    assert code == EXIT_CANCELLED, f"exit {code}: {child.stderr_tail()}"
    assert not child.running()
