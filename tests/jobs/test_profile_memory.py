"""`profile --memory` (each node's memory measured on the CPU with torch's profiler)
and `check --budget` (the static plan added to the dry run), through real children on
the tiny toy.

On the CPU the measured allocation of every node (bytes held after it minus before,
replayed from the profiler's `[memory]` events) equals the plan's new storages
exactly, and the measured baseline (the arguments' storages) equals the plan's
weights + inputs, tied weights counted once. Deliberate break: the job planning
without the archive's weight records (GPT-2's tied lm_head/wte counted twice) fails
the baseline equality, 900,896 vs 1,163,040 bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from inspector.jobs.memory_measure import PROFILER_METHOD
from inspector.jobs.runner import child_env

MEMORY_KEYS = {"method", "dims", "baseline_bytes", "estimated_baseline_bytes", "peak", "nodes"}
ROW_KEYS = {"name", "line", "measured_bytes", "allocated_bytes", "estimated_bytes",
            "estimated_new_bytes", "ratio"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, env=child_env(), timeout=600)


@pytest.fixture(scope="module")
def profiled(tiny_archive) -> dict[str, Any]:
    proc = cli("profile", str(tiny_archive), "--device", "cpu", "--memory", "--warmup", "0",
               "--repeats", "1", "--threads", "1", "--dim", "s72=3", "--dim", "s70=12", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_measured_allocations_are_the_plans(profiled):
    assert [p["name"] for p in profiled["programs"]] == ["decoder", "encoder"]
    for p in profiled["programs"]:
        m = p["memory"]
        assert set(m) == MEMORY_KEYS and m["method"] == PROFILER_METHOD
        assert m["baseline_bytes"] == m["estimated_baseline_bytes"], p["name"]
        op_nodes = [n["name"] for n in p["nodes"] if n["target"] != "_operator.getitem"]
        assert [r["name"] for r in m["nodes"]] == op_nodes
        for r in m["nodes"]:
            assert set(r) == ROW_KEYS
            assert r["allocated_bytes"] == r["estimated_new_bytes"], (p["name"], r)
            # while a node runs it holds at least what the plan says is live
            assert r["measured_bytes"] >= r["estimated_bytes"], (p["name"], r)
            assert r["ratio"] == round(r["measured_bytes"] / r["estimated_bytes"], 4)
        peak = m["peak"]
        assert peak["measured_bytes"] == max(r["measured_bytes"] for r in m["nodes"])
        assert 1.0 <= peak["ratio"] < 2.0, peak
    assert profiled["programs"][0]["memory"]["dims"] == {"s70": 12, "s72": 3}


def test_text_shows_measured_beside_estimated(tiny_archive):
    proc = cli("profile", str(tiny_archive), "--device", "cpu", "--memory", "--warmup", "0",
               "--repeats", "1", "--threads", "1", "--program", "decoder")
    assert proc.returncode == 0, proc.stderr
    assert "memory (torch.profiler" in proc.stdout
    assert "peak measured" in proc.stdout and "estimated" in proc.stdout
    plain = cli("profile", str(tiny_archive), "--device", "cpu", "--warmup", "0",
                "--repeats", "1", "--program", "decoder", "--json")
    assert "memory" not in json.loads(plain.stdout)["programs"][0]


def test_check_budget_adds_the_memory_answer(tiny_archive):
    from inspector.core.archive import open_archive
    from inspector.core.memory_report import program_memory

    proc = cli("check", str(tiny_archive), "--device", "cpu", "--budget", "1MiB",
               "--dim", "s72=2", "--json")
    assert proc.returncode == 1  # the encoder's peak (2.29 MiB) does not fit
    doc = json.loads(proc.stdout)
    with open_archive(tiny_archive) as ar:
        for p in doc["programs"]:
            assert p["ok"]
            m = p["memory"]
            want = program_memory(ar.program(p["name"]), None, 1 << 20, archive=ar)
            assert m["peak_bytes"] == want.plan.peak_bytes
            assert m["fits"] == (want.plan.peak_bytes <= 1 << 20)
    fits = cli("check", str(tiny_archive), "--device", "cpu", "--budget", "8GiB",
               "--program", "decoder")
    assert fits.returncode == 0 and "fits in 8.00 GiB" in fits.stdout
    bad = cli("check", str(tiny_archive), "--device", "cpu", "--budget", "lots")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --budget 'lots' does not parse")
