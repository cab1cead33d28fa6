"""`check`: the fake-tensor dry run, through real children, on the tiny toy export.

What torch itself says decides: the failing node must be the one torch's own fake
run of the loaded program raises at (embedding_1, the position embedding of the
arange export baked with device='cpu'), at the line where `list --program` prints it;
after `retarget --device cuda` the same check passes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jobs_helpers import rewrite_archive, run_events

from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
from inspector.core.retarget import retarget
from inspector.jobs.__main__ import EXIT_CANCELLED
from inspector.jobs.runner import Job, child_env

FAILURE_KEYS = {"node", "target", "line", "message", "frames", "literals"}
FRAME_KEYS = {"file", "line", "function", "code", "user"}


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, env=child_env(), timeout=timeout)


@pytest.fixture(scope="module")
def cuda_check(tiny_archive: Path) -> dict:
    proc = cli("check", str(tiny_archive), "--device", "cuda", "--json")
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def retargeted(tiny_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("retarget") / "toy-cuda.pt2"
    retarget(tiny_archive, out, "cuda")
    return out


def _line_of(archive: Path, program: str, name: str) -> int:
    with open_archive(archive) as ar:
        listing = render_listing(ar.program(program))
        return listing.definitions[("", name)] + 1


def _torch_failures(archive: Path, program: str, inputs: list[dict]) -> list[tuple[str, str]]:
    """Every node torch's own FakeTensorMode run of the loaded program fails at, in
    graph order, with torch's message: a plain FX Interpreter over the graph torch
    loads, fed the user inputs `check` reports (`inputs`: name, shape, dtype) on cuda.
    A node that raises gets as output what export recorded for it (`meta["val"]`,
    its symbols replaced by the sizes the inputs give them), made on cuda, and the
    run goes on: what `check` must report, node by node."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch.utils._pytree import tree_map

    from inspector.jobs import load

    _, programs = load.load(archive, programs=[program], payloads="meta")
    ep = programs[program]
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    given = {i["name"]: i for i in inputs}
    sizes: dict[str, int] = {}  # symbol -> the size the inputs give it
    mode = FakeTensorMode(shape_env=ShapeEnv())
    with mode:
        flat = []
        for spec in ep.graph_signature.input_specs:
            if spec.kind.name == "USER_INPUT":
                meta = placeholders[spec.arg.name].meta["val"]
                shape = given[spec.arg.name]["shape"]
                assert len(shape) == meta.dim()
                for s, n in zip(meta.shape, shape):
                    if isinstance(s, torch.SymInt):
                        sizes[str(s.node.expr)] = n
                flat.append(torch.zeros(shape, dtype=meta.dtype, device="cuda"))
            else:
                t = ep.state_dict.get(spec.target, ep.constants.get(spec.target))
                flat.append(torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cuda"))

    def concrete(s: object) -> int:
        if not isinstance(s, torch.SymInt):
            return int(s)
        expr = s.node.expr
        return int(expr.xreplace({sym: sizes[sym.name] for sym in expr.free_symbols}))

    def recorded(value: object) -> object:
        if isinstance(value, torch.Tensor):
            return torch.empty([concrete(s) for s in value.shape], dtype=value.dtype,
                               device="cuda")
        return concrete(value) if isinstance(value, torch.SymInt) else value

    failed: list[tuple[str, str]] = []

    class EveryNode(torch.fx.Interpreter):
        def run_node(self, n):
            try:
                return super().run_node(n)
            except Exception as exc:  # noqa: BLE001 - torch's error is what we compare
                if n.op in ("placeholder", "output"):
                    raise
                failed.append((n.name, str(exc).strip()))
                return tree_map(recorded, n.meta.get("val"))

    with mode, torch.no_grad():
        EveryNode(ep.graph_module).run(*flat)
    return failed


def test_check_cuda_names_the_baked_arange_embedding(cuda_check, tiny_archive):
    assert set(cuda_check) == {"device", "programs", "retarget"}
    assert cuda_check["device"] == "cuda:0"
    decoder = next(p for p in cuda_check["programs"] if p["name"] == "decoder")
    assert decoder["ok"] is False
    first = decoder["failures"][0]
    name, message = _torch_failures(tiny_archive, "decoder", decoder["inputs"])[0]
    assert name == "embedding_1"
    assert first["node"] == name and first["message"] == message
    assert "cuda:0 and cpu" in first["message"]
    assert first["target"] == "torch.ops.aten.embedding.default"
    # the line `pt2-inspector list --program decoder` prints the node on
    listed = cli("list", str(tiny_archive), "--program", "decoder").stdout.splitlines()
    assert listed[first["line"] - 1].lstrip().startswith("embedding_1: ")
    assert first["line"] == _line_of(tiny_archive, "decoder", "embedding_1")
    # frames: the stack trace export recorded, user code marked
    frames = first["frames"]
    assert frames and all(set(f) == FRAME_KEYS for f in frames)
    assert any(f["code"] == "position_embeds = self.wpe(position_ids)" and not f["user"]
               for f in frames)
    assert any(f["user"] and f["file"].endswith("inspector/jobs/toy.py") for f in frames)


def test_check_json_schema_is_exact(cuda_check):
    for program in cuda_check["programs"]:
        assert {"name", "ok", "failures"} <= set(program)
        assert program["ok"] == (not program["failures"])
        for f in program["failures"]:
            assert set(f) == FAILURE_KEYS
            assert isinstance(f["line"], int) and isinstance(f["message"], str)


def test_check_reports_every_failing_node_in_one_pass(cuda_check, tiny_archive):
    """Past embedding_1 the run goes on: every node torch's own fake run fails at is
    reported, in graph order, with torch's message (the toy decoder: 7, the SDPA
    calls fed a cpu mask among them), and each at its line in the listing."""
    for program in cuda_check["programs"]:
        theirs = _torch_failures(tiny_archive, program["name"], program["inputs"])
        ours = [(f["node"], f["message"]) for f in program["failures"]]
        assert ours == theirs, program["name"]
        assert program["ok"] == (not theirs)
    decoder = next(p for p in cuda_check["programs"] if p["name"] == "decoder")
    names = [f["node"] for f in decoder["failures"]]
    assert len(names) == 7 and len(set(names)) == len(names)
    assert sum(n.startswith("scaled_dot_product_attention") for n in names) == 4
    with open_archive(tiny_archive) as ar:
        listing = render_listing(ar.program("decoder"))
    for f in decoder["failures"]:
        assert listing.lines[f["line"] - 1].lstrip().startswith(f["node"])


def test_check_passes_after_retarget(retargeted):
    proc = cli("check", str(retargeted), "--device", "cuda", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert [p["ok"] for p in result["programs"]] == [True, True]
    assert all(p["nodes"] > 50 for p in result["programs"])


def test_check_cpu_archive_on_cpu_passes_with_text_output(tiny_archive):
    proc = cli("check", str(tiny_archive), "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert "decoder: runs on cpu" in proc.stdout and "encoder: runs on cpu" in proc.stdout


def test_check_text_output_names_node_line_and_source(tiny_archive):
    proc = cli("check", str(tiny_archive), "--device", "cuda", "--program", "decoder",
               "--dim", "s70=16", "--all")  # --all: also the failures a literal explains
    assert proc.returncode == 1
    line = _line_of(tiny_archive, "decoder", "embedding_1")
    assert f"line {line}: embedding_1 = torch.ops.aten.embedding.default" in proc.stdout
    assert "modeling_gpt2.py" in proc.stdout
    assert "input_ids int64[2, 16]" in proc.stdout


@pytest.mark.parametrize("args, why", [
    (["--device", "gpu"], "unknown type 'gpu'"),
    (["--device", "cuda", "--program", "nope"], "no program named 'nope'"),
    (["--device", "cuda", "--dim", "s70=100000"], "outside its range"),
    (["--device", "cuda", "--dim", "zz3=3"], "no program (decoder, encoder) has a symbol"),
    (["--device", "cuda", "--dim", "s70"], "does not parse"),
    (["--device", "cuda", "--input", "input_ids=2xq"], "does not parse"),
    (["--device", "cuda", "--input", "input_ids=2"], "has 2 dimensions, not 1"),
    (["--device", "cuda", "--input", "encoder_hidden_states=2x49x64"], "fixed at 50"),
    (["--device", "cuda", "--input", "ghost=2"], "has an input of that name"),
])
def test_bad_input_is_one_error_line_exit_2(tiny_archive, args, why):
    proc = cli("check", str(tiny_archive), *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and why in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_untrusted_archive_is_refused_without_trust(tiny_archive, tmp_path):
    bad = rewrite_archive(tiny_archive, tmp_path / "so.pt2",
                          add={"data/aotinductor/model/model.so": b"\x7fELF"})
    proc = cli("check", str(bad), "--device", "cpu")
    assert proc.returncode == 2
    assert "data/aotinductor/model/model.so" in proc.stderr and "--trust" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_child_streams_progress_and_can_be_cancelled(tiny_archive):
    events, code = run_events("check", [str(tiny_archive), "--device", "cuda"])
    assert code == 0  # a result was sent; failing nodes are in it
    stages = [e["stage"] for e in events if e["event"] == "progress"]
    # vetting first, torch-free (a refusal costs no torch import), then torch
    assert stages[:2] == ["vet archive", "import torch"] and stages[-1] == "done"
    assert any(s.startswith("check decoder: node ") for s in stages)
    fractions = [e["fraction"] for e in events if e["event"] == "progress"]
    assert fractions == sorted(fractions)
    assert events[-1]["event"] == "result"

    child = Job("check", [str(tiny_archive), "--device", "cuda"])
    for event in child.events():
        assert event["event"] != "error", f"the check failed before vetting: {event}"
        if event["event"] == "progress" and event["stage"] == "vet archive":
            break
    else:
        pytest.fail(f"the check ended before vetting (exit {child.proc.returncode}): "
                    f"{child.stderr_tail()}")
    assert child.running(), "the check had already ended: nothing to cancel"
    code = child.cancel()
    # Ended by our SIGTERM through its handler inside the grace period (exit 130),
    # not SIGKILLed after it (-9) and not finished (0 or 1): how fast is
    # bench_check.py's to measure.
    assert code == EXIT_CANCELLED, f"exit {code}: {child.stderr_tail()}"
    assert not child.running()


def test_meta_payloads_read_no_weights_and_keep_their_meta(tiny_archive):
    """load.py payloads="meta": the same programs, every weight a meta tensor of the
    recorded size, stride and dtype (what lets a full-size check cost no memory)."""
    from inspector.jobs import load

    _, real = load.load(tiny_archive, programs=["decoder"])
    _, meta = load.load(tiny_archive, programs=["decoder"], payloads="meta")
    r, m = real["decoder"].state_dict, meta["decoder"].state_dict
    assert sorted(r) == sorted(m) and len(r) > 40
    for k in r:
        assert m[k].device.type == "meta"
        assert (m[k].shape, m[k].stride(), m[k].dtype) == (r[k].shape, r[k].stride(), r[k].dtype)
        assert type(m[k]) is type(r[k])  # parameters stay parameters


def test_cpu_payloads_load_a_retargeted_archive_here(retargeted):
    """A cuda-retargeted archive: torch's loader moves weights to cuda at once (fails
    on this CPU-only torch); payloads="cpu" keeps them here for profile to move."""
    from inspector.jobs import load

    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        load.load(retargeted, programs=["decoder"])
    _, programs = load.load(retargeted, programs=["decoder"], payloads="cpu")
    assert {t.device.type for t in programs["decoder"].state_dict.values()} == {"cpu"}
