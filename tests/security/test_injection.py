"""Running a file runs only torch's ops (issue 27): code hidden in a program's strings
is live under plain torch and dead under every command of ours that loads.

The variants are REAL archives (the demo toy, the small fixture archive, fidelity
corpus archives) with one field rewritten by tests/security/injection.py. Plain torch
is the judge of liveness: in a child process, `load_pt2(p)` (+ `module()` and a call
with the archive's sample inputs, or FX's Interpreter as check/profile run a graph)
writes the marker. Ours: `check`, `profile`, `run` exit 2 with exactly one `error:`
line naming the program, the node and the field, and no marker.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest

from injection import CALL, FIELDS, INTERPRET, LOAD, TORCH_CHILD, Variant, variants
from inspector.core import vetting
from inspector.core.errors import ArchiveError
from inspector.jobs.runner import child_env

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "resources" / "demo" / "toy-tiny.pt2"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, env=child_env(), timeout=900)


def torch_runs(v: Variant) -> subprocess.CompletedProcess[str]:
    """Plain torch on the variant, as far as `v.live` says the code runs."""
    return subprocess.run([sys.executable, "-c", TORCH_CHILD, str(v.path), v.program,
                           v.live or CALL], capture_output=True, text=True,
                          env={**child_env(), **(v.env or {})}, timeout=900)


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def assert_refused(proc: subprocess.CompletedProcess[str], v: Variant, *words: str) -> str:
    errors = error_lines(proc)
    assert proc.returncode == 2 and len(errors) == 1, (v.id, proc.returncode, proc.stderr[-2000:])
    assert not v.marker.exists(), f"{v.id}: our loader ran the file's code"
    line = errors[0]
    assert f"program '{v.program}'" in line, line
    for word in words:
        assert word in line, (word, line)
    return line


def _one(base: Path, label: str, tmp: Path, program: str, field: str) -> Variant:
    (v,) = variants(base, label, tmp, program=program, fields=[field])
    return v


# --- the two routes of the issue -------------------------------------------------

def test_issue_route_1_operator_argument_names_os_system(tmp_path: Path) -> None:
    """Critical 1: wrap(torch.serialization.os.system, "touch M"). Live under torch's
    Interpreter (what check/profile run); dead under check, profile and run."""
    live = _one(TOY, "toy", tmp_path / "live", "decoder", "operator argument")
    torch_runs(live)
    assert live.marker.exists(), "the route is not live under plain torch: the test proves nothing"
    for command, extra in (("check", ["--device", "cpu"]), ("profile", ["--device", "cpu"]),
                           ("run", ["--device", "cpu", "--max-tokens", "2", "--repeats", "1",
                                    "--warmup", "0"])):
        v = _one(TOY, "toy", tmp_path / command, "decoder", "operator argument")
        line = assert_refused(cli(command, str(v.path), *extra), v,
                              "node 'wrap_injected'", "operator argument",
                              "'torch.serialization.os.system'")
        assert "--trust" in line  # says that consent does not widen it
        # consent does not widen it
        assert_refused(cli(command, str(v.path), *extra, "--trust"), v, "operator argument")


def test_issue_route_2_keyword_name_pasted_into_code(tmp_path: Path) -> None:
    """Critical 2: a higher-order op's keyword name, written by FX as f"{name} = {value}".
    Live under torch (module() and a call); dead under check, profile and run."""
    live = _one(TOY, "toy", tmp_path / "live", "decoder", "keyword name")
    torch_runs(live)
    assert live.marker.exists(), "the route is not live under plain torch: the test proves nothing"
    for command, extra in (("check", ["--device", "cpu"]), ("profile", ["--device", "cpu"]),
                           ("run", ["--device", "cpu", "--max-tokens", "2", "--repeats", "1",
                                    "--warmup", "0"])):
        v = _one(TOY, "toy", tmp_path / command, "decoder", "keyword name")
        assert_refused(cli(command, str(v.path), *extra, "--trust"), v,
                       "node 'wrap_injected'", "keyword name", "not a Python identifier")


# --- no false refusals ----------------------------------------------------------------

def test_every_real_archive_passes_vetting(tmp_path_factory: pytest.TempPathFactory,
                                           small_archive: Path) -> None:
    """The fidelity corpus (every ExportDB example that exports, HF models, control
    flow, multi-program archives, decompositions), the toy and the small archive pass
    the allow-list; the only refusals are the corpus's own custom ops, which need
    consent and are named."""
    sys.path.insert(0, str(ROOT / "tests" / "unit"))  # the corpus lives with the unit tests
    from fidelity_cases import session_corpus

    archives, _ = session_corpus(tmp_path_factory)
    assert len(archives) > 60
    refused = {}
    operators: set[str] = set()
    for path in [TOY, small_archive] + [a.path for a in archives]:
        try:
            vetted = vetting.vet(path)
        except vetting.UntrustedArchiveError as exc:
            refused[path.name] = str(exc)
            vetted = vetting.vet(path, trust=True)
        operators |= set(vetted.operators)
    assert set(refused) == {"ops__custom_ops.pt2", "ops__custom_ops__noname.pt2",
                            "decomp__custom_ops.pt2"}, refused
    assert all("torch.ops.fidelity.twice.default" in why for why in refused.values())
    # the corpus exercises each kind of the allow-list
    assert "torch.ops.higher_order.cond" in operators and "_operator.getitem" not in operators
    assert any(o.startswith("torch._functorch.predispatch.") for o in operators)
    assert "_operator.mul" in operators


def test_check_and_profile_run_the_real_toy(tmp_path: Path) -> None:
    """The toy still runs through both jobs after vetting (no false refusal end to end)."""
    for command in ("check", "profile"):
        proc = cli(command, str(TOY), "--device", "cpu", "--json")
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert not error_lines(proc)


# --- limits before torch ------------------------------------------------------------

def _rewrite(src: Path, dst: Path, change) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info.filename))
            if isinstance(data, tuple):  # (data, compress_type)
                zout.writestr(info.filename, data[0], compress_type=data[1])
            else:
                zout.writestr(info.filename, data)
    return dst


def _many_nodes(tmp_path: Path, count: int) -> Path:
    def change(name: str, data: bytes):
        if not name.endswith("models/decoder.json"):
            return data
        doc = orjson.loads(data)
        graph = doc["graph_module"]["graph"]
        src = graph["inputs"][-1]["as_tensor"]["name"]
        graph["nodes"] = graph["nodes"] + [
            {"target": "torch.ops.aten.relu.default",
             "inputs": [{"name": "self", "arg": {"as_tensor": {"name": src}}, "kind": 1}],
             "outputs": [{"as_tensor": {"name": f"r{i}"}}], "metadata": {}}
            for i in range(count)]
        return orjson.dumps(doc)
    return _rewrite(TOY, tmp_path / "many.pt2", change)


PROBE = """
import sys
from inspector.core import vetting
try:
    vetting.vet(sys.argv[1])
except Exception as exc:
    print(type(exc).__name__, exc)
print("torch imported" if "torch" in sys.modules else "no torch")
"""


def test_node_limit_refuses_before_torch(tmp_path: Path) -> None:
    """The issue's 300,000-node hostile program: refused by the count of its text,
    before the JSON is parsed and before torch is imported; check says so in one line."""
    path = _many_nodes(tmp_path, 300_000)
    probe = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                           text=True, env=child_env(), timeout=900)
    assert "ArchiveError" in probe.stdout and "over the limit of 100,000" in probe.stdout
    assert probe.stdout.strip().endswith("no torch"), probe.stdout
    proc = cli("check", str(path), "--device", "cpu")
    assert proc.returncode == 2 and len(error_lines(proc)) == 1, proc.stderr[-2000:]
    assert "PT2I_MAX_NODES" in error_lines(proc)[0]


def test_node_limit_counts_nodes_not_text(tmp_path: Path) -> None:
    """The walk counts nodes of subgraphs too, whatever the text count said."""
    doc = {"graph_module": {"graph": {"nodes": [{"target": "torch.ops.aten.relu.default",
                                                 "inputs": [], "outputs": []}] * 3}}}
    old = vetting.MAX_LOAD_NODES
    try:
        vetting.MAX_LOAD_NODES = 2
        with pytest.raises(ArchiveError, match="over the limit of 2 nodes"):
            vetting.check_program("p", doc)
    finally:
        vetting.MAX_LOAD_NODES = old


def test_weight_deflate_bomb_is_refused_before_torch(tmp_path: Path) -> None:
    """A weight record deflated from 64 MB of zeros (a ~64 KB record declaring 64 MB):
    profile, check and run refuse it by its declared sizes, before torch inflates it."""
    def change(name: str, data: bytes):
        if name.endswith("data/weights/weight_2"):
            return (bytes(64 << 20), zipfile.ZIP_DEFLATED)
        return data
    path = _rewrite(TOY, tmp_path / "bomb.pt2", change)
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("weights/weight_2"))
        assert info.file_size > 500 * info.compress_size  # a bomb indeed
    probe = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                           text=True, env=child_env(), timeout=900)
    assert "zip bomb" in probe.stdout and probe.stdout.strip().endswith("no torch"), probe.stdout
    for command in ("check", "profile"):
        proc = cli(command, str(path), "--device", "cpu")
        assert proc.returncode == 2 and len(error_lines(proc)) == 1, proc.stderr[-2000:]
        assert "zip bomb" in error_lines(proc)[0]
