"""`check` says the cause first: failures traced (in torch's FX graph) to baked device
literals, checked against the audit's findings, with what retarget was verified to do
by a dry run of the retargeted archive; its node count agrees with `info`."""

from __future__ import annotations

import json
import operator
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.core.archive import open_archive
from inspector.core.audit import DEVICE_LITERAL, audit_archive
from inspector.core.device_names import parse_device
from inspector.jobs.runner import child_env


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, env=child_env(), timeout=600)


@pytest.fixture(scope="module")
def cuda_json(tiny_archive: Path) -> dict:
    proc = cli("check", str(tiny_archive), "--device", "cuda", "--json")
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)


def test_each_failure_traces_to_literals_the_audit_also_finds(cuda_json, tiny_archive):
    with open_archive(tiny_archive) as archive:
        findings = audit_archive(archive, target=parse_device("cuda"), rules=[DEVICE_LITERAL])
    audited = {(f.program, f.node) for f in findings}
    for p in cuda_json["programs"]:
        assert p["failures"], p["name"]
        for f in p["failures"]:
            assert f["literals"], f["node"]  # the toy's every cuda failure is a cpu literal's
            for lit in f["literals"]:
                assert (p["name"], lit["node"]) in audited, lit
                assert isinstance(lit["line"], int)


def test_retarget_is_verified_by_a_dry_run_of_the_retargeted_archive(cuda_json):
    verified = cuda_json["retarget"]
    assert verified["device"] == "cuda"
    for p in cuda_json["programs"]:
        v = verified["programs"][p["name"]]
        assert v["traced"] == len(p["failures"])
        assert v["removed"] == v["traced"] and v["left"] == [] and v["failures_after"] == 0


def test_node_count_is_infos_and_the_graph_count_is_torchs(cuda_json, tiny_archive):
    from inspector.jobs import load

    info = json.loads(cli("info", str(tiny_archive), "--json").stdout)
    counts = {p["name"]: p["nodes"] for p in info["programs"]}
    _, programs = load.load(tiny_archive, payloads="meta")
    for p in cuda_json["programs"]:
        assert p["nodes"] == counts[p["name"]]
        graph = programs[p["name"]].graph_module.graph
        fx = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
        assert p["graph_nodes"] == len(fx)
        assert p["graph_nodes"] - p["nodes"] == sum(1 for n in fx if n.target is operator.getitem)


def test_text_gives_the_cause_and_the_verified_fix_before_any_block(tiny_archive):
    proc = cli("check", str(tiny_archive), "--device", "cuda")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    decoder = lines.index(next(ln for ln in lines if ln.startswith("decoder: ")))
    assert "would fail on cuda:0" in lines[decoder]
    assert lines[decoder + 1].startswith("  cause: all ") and "device literal" in lines[decoder + 1]
    assert "`pt2-inspector audit " in lines[decoder + 1]
    assert lines[decoder + 2].endswith("removes all " + lines[decoder + 1].split()[2]
                                       + " of them (dry run verified)")
    assert "--device cuda -o OUT.pt2" in lines[decoder + 2]
    assert lines[decoder + 3].startswith("  failures left over: none")
    assert "Expected all tensors" not in proc.stdout  # the 27 near-identical blocks: --all
    assert "verifying: a dry run of the archive retargeted to cuda" in proc.stderr
