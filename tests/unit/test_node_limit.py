"""The node limit without a cliff: past MAX_NODES a program of nodes as heavy as a
real model's opens (up to HEAVY_NODE_FACTOR x, memory bounded by the lean model's
budget); light nodes, the time bomb the limit is there for, are refused, and every
refusal names the variable that raises the limit."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest

from inspector.core.errors import ArchiveError
from inspector.core.program import lean as lean_mod
from inspector.core.program import parser as parser_mod
from inspector.core.program.lean import parse_program_lean

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "toy-tiny.pt2"


def _decoder() -> dict:
    with zipfile.ZipFile(DEMO) as z:
        name = next(n for n in z.namelist() if n.endswith("models/decoder.json"))
        return orjson.loads(z.read(name))


def _with_nodes(doc: dict, nodes: list[dict]) -> bytes:
    doc = orjson.loads(orjson.dumps(doc))
    doc["graph_module"]["graph"]["nodes"] = nodes
    return orjson.dumps(doc)


def test_real_nodes_a_few_past_the_limit_open(monkeypatch):
    doc = _decoder()
    real = doc["graph_module"]["graph"]["nodes"]
    limit = len(real) - 3  # the program is 3 nodes past a (small) round limit
    monkeypatch.setattr(lean_mod.full, "MAX_NODES", limit)
    program, values = parse_program_lean(_with_nodes(doc, real), "decoder")
    assert len(program.graph.nodes) == len(real)
    assert values >= lean_mod.LIGHT_NODE_VALUES * len(real)  # what made them heavy


def test_light_nodes_past_the_limit_are_refused_naming_the_variable(monkeypatch):
    doc = _decoder()
    real = doc["graph_module"]["graph"]["nodes"]
    src = next(n["outputs"][0]["as_tensor"]["name"] for n in real
               if "as_tensor" in n["outputs"][0])
    light = [{"target": "torch.ops.aten.relu.default",
              "inputs": [{"name": "self", "arg": {"as_tensor": {"name": src}}, "kind": 1}],
              "outputs": [{"as_tensor": {"name": f"r{i}"}}], "metadata": {}}
             for i in range(len(real))]
    monkeypatch.setattr(lean_mod.full, "MAX_NODES", len(real) - 3)
    with pytest.raises(ArchiveError, match=r"nodes that light.*PT2I_MAX_NODES=N"):
        parse_program_lean(_with_nodes(doc, real[:1] + light), "decoder")


def test_heavy_nodes_stop_at_twice_the_limit(monkeypatch):
    doc = _decoder()
    real = doc["graph_module"]["graph"]["nodes"]
    monkeypatch.setattr(lean_mod.full, "MAX_NODES", len(real) // 2 - 1)
    with pytest.raises(ArchiveError, match=r"more than .* nodes.*PT2I_MAX_NODES=N"):
        parse_program_lean(_with_nodes(doc, real), "decoder")


def test_the_variable_raises_the_limit_for_the_process():
    code = ("from inspector.core.program import parser, lean; "
            "print(parser.MAX_NODES, lean.MAX_TENSOR_RECORDS)")
    env = {"PT2I_MAX_NODES": "1000000", "PYTHONPATH": str(DEMO.parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    assert out == ["1000000", "4000000"]
    assert parser_mod._node_limit() == parser_mod.MAX_NODES  # this process: the default
    for junk in ("lots", "-5", "0"):
        env["PT2I_MAX_NODES"] = junk
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True).stdout.split()
        assert out[0] == "400000"
