"""Running a file runs only torch's ops (issue 27): code hidden in a program's strings
is live under plain torch and dead under every command of ours that loads.

The variants are REAL archives (the demo toy, the small fixture archive, fidelity
corpus archives: a cond with subgraphs, one with buffers and lifted constants, one
with keyword inputs) with one field rewritten by tests/security/injection.py, for
every string field torch resolves or pastes into the code FX generates. Plain torch
is the judge of liveness: in a child process, `load_pt2` + FX's Interpreter (how
check/profile run a graph) + `module()` and a call with the archive's sample inputs;
the marker file says whether the code ran. Ours: `check`, `profile`, `run`, `numerics` exit 2
with exactly one `error:` line naming the program and the field, and no marker,
with `--trust` too. The fields that reach code only with FX_GRAPH_SHOW_META=1 (node
metadata) are dead under ours because the job child drops that variable: there the
program runs normally (exit 0) and no marker appears, with the variable set.

The torch child and our child each run all their variants in one process (a torch
import costs seconds): the module's `matrix` fixture, about two minutes.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from injection import (
    CALL,
    COMMAND_ARGS,
    FIELDS,
    INTERPRET,
    LOAD,
    NEUTRALIZED,
    Variant,
    ours,
    torch_verdicts,
    variants,
)
from inspector.core import vetting
from inspector.core.errors import ArchiveError
from inspector.jobs.runner import child_env

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "resources" / "demo" / "toy-tiny.pt2"
# the fidelity corpus cases the variants are made from (tests/unit/fidelity_models.py)
CORPUS_BASES = ("cond/nested_cond", "ops/state_mutation_constants", "ops/kwargs_inputs")

# What the error line says for each field (the loader's name for it).
FIELD_WORDS = {
    "operator argument": "operator argument",
    "operator arguments": "operator argument",
    "keyword name": "keyword name",
    "subgraph name": "subgraph name",
    "value name": "value name",
    "placeholder name": "placeholder name",
    "parameter name": "parameter name",
    "buffer name": "buffer name",
    "tensor constant name": "tensor constant name",
    "custom obj name": "custom obj name",
    "node name": "node name",
    "forward argument name": "forward argument name",
    "input spec keyword": "input spec keyword",
    "module FQN": "module FQN",
    "symbolic shape": "symbolic shape",
    "guard": "guard",
    "range constraint key": "range constraint key",
    "pytree type": "Python types",
    "source_fn_stack": "source_fn_stack",
}
# Where plain torch cannot load the variant at all, so the field is not live on
# that base (torch falls back from the code it cannot compile, an `os.system` repr,
# to a GraphModule that misses the cond's subgraphs).
NOT_LIVE_ON = {("cond/nested_cond", "operator argument")}


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, env=child_env(env), timeout=900)


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error:")]


@dataclass
class Matrix:
    variants: list[Variant]
    torch: dict[str, dict]  # variant id -> {"live": stage or "", "errors"}
    ours: dict[str, dict]  # call key -> {"rc", "stderr", "marker", "torch"}
    calls: dict[str, tuple[Variant, str, bool]]  # key -> (variant, command, trusted)


def _bases(tmp_path_factory: pytest.TempPathFactory, small_archive: Path) -> list[tuple]:
    sys.path.insert(0, str(ROOT / "tests" / "unit"))  # the corpus lives with the unit tests
    from fidelity_cases import session_corpus

    archives, _ = session_corpus(tmp_path_factory, list(CORPUS_BASES))
    by_name = {a.name: a.path for a in archives}
    assert set(CORPUS_BASES) <= set(by_name), sorted(by_name)
    return ([("toy", TOY, "decoder"), ("small", small_archive, None)]
            + [(name, by_name[name], None) for name in CORPUS_BASES])


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory, small_archive: Path) -> Matrix:
    out = tmp_path_factory.mktemp("injection")
    vs = [v for label, path, program in _bases(tmp_path_factory, small_archive)
          for v in variants(path, label, out / "torch", program=program)]
    judged = torch_verdicts(vs, child_env(), sys.executable)
    # ours on fresh copies (their own markers): the toy under every loading command,
    # plain and --trust; the other bases under check plain and profile --trust. A
    # metadata field (reaching code only with FX_GRAPH_SHOW_META=1) runs for real,
    # with the variable set: under check for each field, under profile and run for one.
    calls: dict[str, tuple[Variant, str, bool]] = {}
    plan: list[tuple[str, Variant, list[str], dict[str, str]]] = []
    for label, path, program in _bases(tmp_path_factory, small_archive):
        for v in variants(path, label, out / "ours", program=program):
            if v.field in NEUTRALIZED:
                runs = [] if label != "toy" else [("check", False)] + (
                    [("profile", False), ("run", False)] if v.field == "stack trace" else [])
            elif label == "toy":
                runs = [(c, t) for c in COMMAND_ARGS for t in (False, True)]
            else:
                runs = [("check", False), ("profile", True)]
            for command, trusted in runs:
                key = f"{v.id}:{command}{':trust' if trusted else ''}"
                argv = [command, str(v.path), *COMMAND_ARGS[command]] + (["--trust"] if trusted else [])
                calls[key] = (v, command, trusted)
                plan.append((key, v, argv, dict(v.env or {})))
    return Matrix(vs, judged, ours(plan, child_env(), sys.executable), calls)


def _table(m: Matrix) -> str:
    """field -> (torch's verdict per base, ours), for the report and the failures."""
    rows = []
    for field_name in FIELDS:
        live = sorted({f"{v.base}={m.torch[v.id]['live'] or '-'}" for v in m.variants
                       if v.field == field_name})
        mine = [r for k, r in m.ours.items() if m.calls[k][0].field == field_name]
        dead = sum(1 for r in mine if not r["marker"])
        rows.append(f"{field_name:22s} torch: {', '.join(live)}  ours: {dead}/{len(mine)} dead")
    return "\n".join(rows)


@pytest.mark.slow
def test_every_variant_has_the_liveness_the_generator_says(matrix: Matrix) -> None:
    """Plain torch runs the code of each field the generator marks live, at the stage
    it says (load, FX's Interpreter as check runs a graph, module() + a call), on every
    base that has the field; the others never run it (refused by ours as precaution).
    The two routes of the issue are among the live ones."""
    print("\n" + _table(matrix))
    wrong = []
    for v in matrix.variants:
        expected = None if (v.base, v.field) in NOT_LIVE_ON else v.live
        got = matrix.torch[v.id]["live"] or None
        if got != expected:
            wrong.append((v.id, expected, got, matrix.torch[v.id]["errors"]))
    assert not wrong, "\n".join(map(str, wrong))
    live = {(v.base, v.field) for v in matrix.variants if matrix.torch[v.id]["live"]}
    assert ("toy", "operator argument") in live and ("toy", "keyword name") in live
    assert ("toy", "subgraph name") in live
    fields = {v.field for v in matrix.variants}
    assert fields == set(FIELDS), set(FIELDS) - fields  # every field made on some base
    stages = {matrix.torch[v.id]["live"] for v in matrix.variants}
    assert {LOAD, INTERPRET, CALL} <= stages


@pytest.mark.slow
def test_every_variant_is_dead_under_check_profile_and_run(matrix: Matrix) -> None:
    """No marker under any of our loading commands, plain or --trust; a refused
    variant: exit 2, exactly one `error:` line naming the program and the field,
    refused before torch is imported in the command's process."""
    bad = []
    for key, result in matrix.ours.items():
        v, command, trusted = matrix.calls[key]
        errors = error_lines(result["stderr"])
        if result["marker"]:
            bad.append((key, "the marker was written: our loader ran the file's code"))
        elif v.field in NEUTRALIZED:
            if result["rc"] != 0 or errors:
                bad.append((key, "a neutralized field should load normally", result["stderr"][-600:]))
        elif result["rc"] != 2 or len(errors) != 1:
            bad.append((key, result["rc"], result["stderr"][-600:]))
        elif (f"program '{v.program}'" not in errors[0]
              or FIELD_WORDS[v.field] not in errors[0]):
            bad.append((key, "the error does not name the program and field", errors[0][:300]))
        elif "Traceback" in result["stderr"]:
            bad.append((key, "a traceback", result["stderr"][-600:]))
        elif result["torch"]:
            bad.append((key, "refused only after torch was imported"))
    assert not bad, "\n".join(map(str, bad))
    assert len(matrix.ours) > 150
    commands = {(c, t) for c, t in ((cmd, tr) for _, cmd, tr in matrix.calls.values())}
    assert commands >= {(c, t) for c in COMMAND_ARGS for t in (False, True)}
    # the metadata fields ran for real: FX_GRAPH_SHOW_META was set for them
    assert any(v.field in NEUTRALIZED and c == "run" for v, c, _ in matrix.calls.values())


# --- the two routes of the issue, through the console script ------------------------

def _one(base: Path, label: str, tmp: Path, program: str, field: str) -> Variant:
    (v,) = variants(base, label, tmp, program=program, fields=[field])
    return v


def assert_refused(proc: subprocess.CompletedProcess[str], v: Variant, *words: str) -> str:
    errors = error_lines(proc.stderr)
    assert proc.returncode == 2 and len(errors) == 1, (v.id, proc.returncode, proc.stderr[-2000:])
    assert not v.marker.exists(), f"{v.id}: our loader ran the file's code"
    line = errors[0]
    assert f"program '{v.program}'" in line, line
    for word in words:
        assert word in line, (word, line)
    return line


def test_issue_route_1_operator_argument_names_os_system(tmp_path: Path) -> None:
    """Critical 1: wrap(torch.serialization.os.system, "touch M"). Live under torch's
    Interpreter (what check/profile run); dead under check, profile and run."""
    live = _one(TOY, "toy", tmp_path / "live", "decoder", "operator argument")
    assert torch_verdicts([live], child_env(), sys.executable)[live.id]["live"] == INTERPRET
    assert live.marker.exists(), "the route is not live under plain torch: the test proves nothing"
    for command, extra in COMMAND_ARGS.items():
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
    assert torch_verdicts([live], child_env(), sys.executable)[live.id]["live"] == CALL
    assert live.marker.exists(), "the route is not live under plain torch: the test proves nothing"
    for command, extra in COMMAND_ARGS.items():
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
    from inspector.core.archive import open_archive
    from inspector.core.audit import CODE_IN_NAMES, OPERATOR_ARGUMENT, audit_archive

    refused = {}
    operators: set[str] = set()
    flagged = {}
    for path in [TOY, small_archive] + [a.path for a in archives]:
        try:
            vetted = vetting.vet(path)
        except vetting.UntrustedArchiveError as exc:
            refused[path.name] = str(exc)
            vetted = vetting.vet(path, trust=True)
        operators |= set(vetted.operators)
        with open_archive(path) as archive:  # and the audit agrees: nothing to name
            found = audit_archive(archive, rules=[CODE_IN_NAMES, OPERATOR_ARGUMENT])
        if found:
            flagged[path.name] = [(f.group, f.message[:200]) for f in found[:3]]
    assert not flagged, flagged
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
        assert not error_lines(proc.stderr)


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
    assert proc.returncode == 2 and len(error_lines(proc.stderr)) == 1, proc.stderr[-2000:]
    assert "PT2I_MAX_NODES" in error_lines(proc.stderr)[0]


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
        assert proc.returncode == 2 and len(error_lines(proc.stderr)) == 1, proc.stderr[-2000:]
        assert "zip bomb" in error_lines(proc.stderr)[0]


# --- retarget ----------------------------------------------------------------------------

@pytest.mark.slow
def test_retarget_never_imports_torch_and_its_output_is_still_refused(
        tmp_path: Path, small_archive: Path) -> None:
    """`retarget` reads and rewrites the JSON without torch: on every variant of the
    toy and the small archive it imports no torch and writes no marker, and either
    refuses (one `error:` line) or writes an archive that check still refuses by the
    same field."""
    plan, outputs = [], {}
    for label, path, program in (("toy", TOY, "decoder"), ("small", small_archive, None)):
        for v in variants(path, label, tmp_path, program=program):
            if v.field in NEUTRALIZED:
                continue
            out = v.path.with_name("retargeted.pt2")
            outputs[v.id] = (v, out)
            plan.append((f"{v.id}:retarget", v, ["retarget", str(v.path), "--device", "cuda",
                                                 "-o", str(out)], {}))
            plan.append((f"{v.id}:check", v, ["check", str(out), "--device", "cpu"], {}))
    got = ours(plan, child_env(), sys.executable)
    bad, wrote = [], 0
    for vid, (v, out) in outputs.items():
        r, c = got[f"{vid}:retarget"], got[f"{vid}:check"]
        if r["torch"] or r["marker"]:
            bad.append((vid, "retarget imported torch or ran the code"))
        elif r["rc"] == 0:
            wrote += 1
            errors = error_lines(c["stderr"])
            if (c["rc"] != 2 or len(errors) != 1 or c["marker"]
                    or FIELD_WORDS[v.field] not in errors[0]):
                bad.append((vid, "the retargeted archive is not refused", c["stderr"][-400:]))
        elif r["rc"] != 2 or len(error_lines(r["stderr"])) != 1 or "Traceback" in r["stderr"]:
            bad.append((vid, "retarget failed without one error line", r["stderr"][-400:]))
    assert not bad, "\n".join(map(str, bad))
    print(f"\nretarget: {wrote} of {len(outputs)} variants rewritten, the rest refused")
    assert wrote >= len(outputs) // 2, wrote  # most variants are rewritten, not refused


# --- info/audit name what the loader refuses -----------------------------------------------

# The audit's group for each field (the rule: operator-argument for the first two).
AUDIT_GROUPS = {**{f: f for f in FIELDS}, "operator arguments": "operator argument",
                "source_fn_stack": "metadata source_fn_stack",
                "stack trace": "metadata stack_trace", "custom metadata": "metadata custom",
                "module stack key": "metadata nn_module_stack"}


def _full_programs(path: Path) -> dict:
    """The archive's programs parsed the full way (nodes in plain lists, every node
    walked by the rule), to compare with the lean parse (nodes the screens find)."""
    from inspector.core.program import parse_program

    with zipfile.ZipFile(path) as z:
        return {Path(n).stem: parse_program(orjson.loads(z.read(n)), Path(n).stem)
                for n in z.namelist() if "/models/" in n and n.endswith(".json")}


def test_audit_names_every_variant_and_agrees_with_the_loader(
        tmp_path_factory: pytest.TempPathFactory, small_archive: Path) -> None:
    """Every variant of the generator, on every base, gets a `code-in-names` or
    `operator-argument` finding naming its field (a warning for the metadata fields,
    which the loader neutralizes; an error for the rest, which it refuses), from the
    lean parse (only the nodes vetting's screens point at are made) and the same from
    the full parse (every node walked); `audit` and `info` show it."""
    from inspector.core.archive import open_archive
    from inspector.core.audit import CODE_IN_NAMES, ERROR, OPERATOR_ARGUMENT, WARNING, \
        audit_archive, audit_program

    out = tmp_path_factory.mktemp("audited")
    rules = [CODE_IN_NAMES, OPERATOR_ARGUMENT]
    missing, made, checked = [], [], 0
    for label, path, program in _bases(tmp_path_factory, small_archive):
        for v in variants(path, label, out, program=program):
            with open_archive(v.path) as archive:
                found = audit_archive(archive, rules=rules, programs=[v.program])
                nodes = archive.program(v.program).graph.nodes
                if hasattr(nodes, "made_count") and nodes.made_count() > 8:
                    made.append((v.id, nodes.made_count()))
            full = audit_program(_full_programs(v.path)[v.program], rules=rules)
            if [f.as_dict() for f in found] != [f.as_dict() for f in full]:
                missing.append((v.id, "lean and full audits differ", found, full))
            want_rule = OPERATOR_ARGUMENT if AUDIT_GROUPS[v.field] == "operator argument" \
                else CODE_IN_NAMES
            severity = WARNING if v.field in NEUTRALIZED else ERROR
            if not any(f.rule == want_rule and f.group == AUDIT_GROUPS[v.field]
                       and f.severity == severity for f in found):
                missing.append((v.id, [(f.rule, f.group, f.severity) for f in found]))
            checked += 1
    assert not missing, "\n".join(map(str, missing))
    assert not made, made  # the screens made a handful of nodes at most
    assert checked > 90
    # the CLI shows it: audit's report, info's summary
    (v,) = variants(TOY, "toy", out / "cli", program="decoder", fields=["keyword name"])
    proc = cli("audit", str(v.path), "--rule", "code-in-names")
    assert "keyword name" in proc.stdout and "wrap_injected" in proc.stdout, proc.stdout[-2000:]
    assert "code-in-names" in cli("info", str(v.path)).stdout


# --- the job child itself, as the window's buttons start it ----------------------------

def _job_child(job: str, argv: list[str]) -> tuple[int, list[dict], str]:
    proc = subprocess.run([sys.executable, "-m", "inspector.jobs", job, *argv],
                          capture_output=True, text=True, env=child_env(), timeout=600)
    events = [orjson.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, events, proc.stderr


@pytest.mark.slow
def test_the_job_child_refuses_every_toy_variant(tmp_path: Path) -> None:
    """The window's Check and Profile buttons start `python -m inspector.jobs check|profile`
    with no CLI in front (the CLI vets in its own process first): that child refuses every
    variant of the toy by itself (an error event naming the program and the field,
    exit 1, no marker, before torch is imported). tests/security/test_injection_buttons.py
    drives the buttons on the issue's two routes; this covers every field."""
    from concurrent.futures import ThreadPoolExecutor

    from inspector.jobs.graph_spec import GraphRunSpec

    calls = []
    for v in variants(TOY, "toy", tmp_path, program="decoder"):
        if v.field in NEUTRALIZED:
            continue  # reach code only with FX_GRAPH_SHOW_META=1: the child drops it
        spec = GraphRunSpec(file=str(v.path), device="cpu")
        calls += [(v, "check", spec.to_argv()), (v, "profile", spec.to_argv(profile=True))]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda c: _job_child(c[1], c[2]), calls))
    bad = []
    for (v, job, _), (rc, events, stderr) in zip(calls, results):
        errors = [e for e in events if e.get("event") == "error"]
        if v.marker.exists():
            bad.append((v.id, job, "the marker was written"))
        elif rc != 1 or len(errors) != 1:
            bad.append((v.id, job, rc, stderr[-400:]))
        elif (f"program '{v.program}'" not in errors[0]["message"]
              or FIELD_WORDS[v.field] not in errors[0]["message"]):
            bad.append((v.id, job, "the error does not name the program and field",
                        errors[0]["message"][:300]))
        elif "Traceback" in errors[0].get("details", ""):
            bad.append((v.id, job, "a traceback in the details"))
        elif any(e.get("event") == "progress" and e.get("stage") == "import torch"
                 for e in events):
            bad.append((v.id, job, "refused only after torch was imported"))
    assert not bad, "\n".join(map(str, bad))
    assert len(calls) >= 30
