"""A run that cannot fit is refused before it starts (issue 18: `run --batch 4096
--max-tokens 256` was accepted on CPU and grew past 6 GB in ten minutes)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector.jobs import memory
from inspector.jobs.memory import SMALLEST, Dims, RunTooLargeError, estimate_run_bytes

REPO = Path(__file__).resolve().parents[2]
TINY = Dims.from_toy_config({"encoder": {"hidden_size": 64, "intermediate_size": 128,
                                         "num_attention_heads": 2, "patch_size": 32},
                             "decoder": {"n_embd": 64, "n_head": 2, "vocab_size": 1024}})


def test_the_issues_request_is_far_over_any_cpu() -> None:
    # full-size toy, batch 4096, 256 tokens: the attention scores alone are 4096 x 12 x
    # 257^2 x 4 bytes x 2 (scores and softmax) = 26 GB; logits 4096 x 257 x 1024 x 4 = 4.3 GB
    need = estimate_run_bytes(Dims(), 4096, 256)
    assert need > 30e9
    with pytest.raises(RunTooLargeError, match=r"batch 4096 x 256 tokens needs about .* GB "
                                               r"on cpu, more than the 6\.0 GB of available RAM"):
        memory.check_run_memory(Dims(), 4096, 256, 0, False, 6_000_000_000,
                                "of available RAM", "cpu")


def test_estimate_grows_with_batch_and_tokens_and_bf16_halves_activations() -> None:
    sizes = [estimate_run_bytes(TINY, b, t) for b, t in ((1, 8), (2, 8), (2, 16), (64, 64))]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4
    fp32, bf16 = estimate_run_bytes(Dims(), 64, 128), estimate_run_bytes(Dims(), 64, 128, bf16=True)
    pixels = 64 * 3 * 224 * 224 * 4
    assert bf16 - pixels == pytest.approx((fp32 - pixels) / 2, rel=1e-6)


def test_the_suggested_batch_fits_and_one_more_does_not() -> None:
    have = 3 << 30
    fit = memory.max_batch(Dims(), 256, 0, False, have)
    assert 0 < fit < 4096
    assert estimate_run_bytes(Dims(), fit, 256) <= have < estimate_run_bytes(Dims(), fit + 1, 256)
    with pytest.raises(RunTooLargeError, match=f"batch {fit} fits at 256 tokens"):
        memory.check_run_memory(Dims(), fit + 1, 256, 0, False, have, "free", "cuda:0")


def test_config_values_from_the_file_are_checked() -> None:
    odd = Dims.from_toy_config({"encoder": {"hidden_size": "64", "patch_size": 0},
                                "decoder": {"n_embd": True, "vocab_size": 10**30}})
    assert odd == Dims()  # each odd value keeps the full-size default
    assert Dims.from_toy_config(None) == SMALLEST == TINY
    assert memory.parse_size("512M") == 512 << 20 and memory.parse_size("8GiB") == 8 << 30
    with pytest.raises(RunTooLargeError):
        memory.parse_size("lots")


def test_cpu_budget_is_the_available_ram(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(memory.LIMIT_ENV, raising=False)
    have, what = memory.available_bytes(None, type("D", (), {"type": "cpu"})())
    with open("/proc/meminfo") as fp:
        total = int(next(line for line in fp if line.startswith("MemTotal:")).split()[1]) * 1024
    assert have is not None and 0 < have <= total and "RAM" in what
    monkeypatch.setenv(memory.LIMIT_ENV, "100M")
    assert memory.available_bytes(None, type("D", (), {"type": "cpu"})())[0] == 100 << 20


def test_run_cli_refuses_before_loading(tiny_archive: Path) -> None:
    """The real CLI and job child: one error line, exit 2, at once (no program load)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env[memory.LIMIT_ENV] = "8M"  # any machine fits the tiny model at batch 16 (~20 MB)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "inspector", "run", str(tiny_archive),
                           "--batch", "16", "--max-tokens", "64"], env=env,
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: batch 16 x 64 tokens needs about"), lines
    assert "allowed by PT2I_MEMORY_LIMIT" in lines[0] and "fits at 64 tokens" in lines[0]
    assert time.perf_counter() - started < 60
