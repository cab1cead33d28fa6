"""The run and devices jobs in real child processes (CPU, tiny preset), and their CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from jobs_helpers import rewrite_archive, run_events

from inspector.jobs.timed_generation import percentile, summarize
from inspector.jobs.__main__ import EXIT_CANCELLED
from inspector.jobs.runner import Job, JobError, child_env, run_job

RUN = ["--batch", "2", "--max-tokens", "6", "--warmup", "0", "--repeats", "2"]


@pytest.fixture(scope="module")
def export_run(tiny_archive):
    events, code = run_events("run", [str(tiny_archive), *RUN])
    assert code == 0, events[-1]
    return events


def test_events_stream_in_order_and_stats_match_the_samples(export_run):
    kinds = [e["event"] for e in export_run]
    assert kinds[-1] == "result"
    first_sample = kinds.index("sample")
    # (a log: the one-line warning of an unsteady run, on a busy machine)
    assert all(k in ("sample", "progress", "log") for k in kinds[first_sample:-1])
    samples = [e for e in export_run if e["event"] == "sample"]
    result = export_run[-1]
    # two repeats of the same number of steps, in order
    steps = result["tokens"]
    assert [(s["repeat"], s["step"]) for s in samples] == [
        (r, i) for r in range(2) for i in range(steps)]
    assert result["per_token_ms"] == [s["ms"] for s in samples]
    ms = [s["ms"] for s in samples]
    assert result["p50_ms"] == pytest.approx(percentile(ms, 50), abs=1e-3)
    assert result["p90_ms"] == pytest.approx(percentile(ms, 90), abs=1e-3)
    assert result["p99_ms"] == pytest.approx(percentile(ms, 99), abs=1e-3)
    assert min(ms) <= result["p50_ms"] <= result["p90_ms"] <= result["p99_ms"] <= max(ms)
    # a generation's total covers its encoder and its steps
    per_run = [sum(ms[r * steps:(r + 1) * steps]) for r in range(2)]
    for total, steps_ms in zip(result["runs_total_ms"], per_run):
        assert total >= steps_ms
    assert result["total_ms"] == pytest.approx(sum(result["runs_total_ms"]) / 2, abs=1e-3)
    assert result["tokens_per_s"] == pytest.approx(
        steps * 2 / (result["total_ms"] / 1000), rel=1e-3)
    assert result["device"] == "cpu" and result["mode"] == "export" and result["batch"] == 2
    assert result["timer"] == "perf_counter"
    ids = result["token_ids"]
    assert len(ids) == 2 and all(len(row) == steps for row in ids)
    assert all(0 <= t < 1024 for row in ids for t in row)


def test_eager_and_export_agree_on_tokens_cli_json(export_run, tiny_archive):
    """The CLI's --json contract, in eager mode; same tokens as the exported program."""
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", "run", str(tiny_archive), "--device", "cpu",
         "--mode", "eager", *RUN, "--json"],
        capture_output=True, text=True, env=child_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    for key in ("device", "mode", "batch", "per_token_ms", "encoder_ms", "total_ms", "p50_ms",
                "p90_ms", "p99_ms", "tokens_per_s", "token_ids"):
        assert key in result
    assert result["mode"] == "eager"
    assert result["token_ids"] == export_run[-1]["token_ids"]


def test_greedy_stops_when_every_sequence_ended():
    import torch

    from inspector.jobs.timed_generation import END, PAD, Generator, greedy

    calls = []

    def decode(ids, hidden):
        # sequence 0 ends at step 1, sequence 1 at step 3
        calls.append(ids.shape[1])
        logits = torch.zeros(ids.shape[0], ids.shape[1], 8)
        step = ids.shape[1] - 1
        logits[0, -1, END if step == 1 else 5] = 1
        logits[1, -1, END if step == 3 else 6] = 1
        return logits

    gen = Generator(lambda px: px, decode, positions=False, seq_max=None, batch_range=None)
    ids, _, steps, _ = greedy(gen, torch, torch.zeros(2, 1), max_tokens=50)
    assert ids.tolist() == [[5, END, PAD, PAD], [6, 6, 6, END]]
    assert calls == [1, 2, 3, 4] and len(steps) == 4


def test_summary_numbers():
    s = summarize([1.0, 2.0, 3.0, 4.0], [5.0], [20.0], tokens=4, batch=3)
    assert s["p50_ms"] == 2.5 and s["encoder_ms"] == 5.0
    assert s["tokens_per_s"] == 600.0  # 12 tokens in 20 ms


def test_bad_device_ends_cleanly(tiny_archive):
    events, code = run_events("run", [str(tiny_archive), "--device", "cuda:3"])
    assert code == 1
    assert events[-1]["event"] == "error"
    assert "device cuda:3 is not available here (torch sees: cpu" in events[-1]["message"]
    assert events[-1]["code"] == "device"  # what a parent acts on, not the text


def test_archive_without_the_two_programs_ends_cleanly(tiny_archive, tmp_path):
    only_dec = rewrite_archive(tiny_archive, tmp_path / "dec.pt2",
                               lambda rel, d: None if "encoder" in rel else d)
    with pytest.raises(JobError, match="no program 'encoder'"):
        run_job("run", [str(only_dec)])


def test_untrusted_archive_is_refused_by_the_run_job(tiny_archive, tmp_path):
    bad = rewrite_archive(tiny_archive, tmp_path / "so.pt2",
                          add={"data/aotinductor/model/model.so": b"\x7fELF"})
    with pytest.raises(JobError, match="data/aotinductor/model/model.so.*--trust") as info:
        run_job("run", [str(bad)])
    assert info.value.code == "untrusted"  # the window asks to trust on this code


def test_batch_outside_the_archive_range_is_refused(tiny_archive):
    with pytest.raises(JobError, match="batch 17 is outside the archive's batch range 1:16"):
        run_job("run", [str(tiny_archive), "--batch", "17"])


def test_cancel_ends_the_child_through_its_handler(tiny_archive):
    # 50 repeats of 64 tokens: minutes of work, so the child is mid-run when cancelled.
    child = Job("run", [str(tiny_archive), "--max-tokens", "64", "--repeats", "50",
                        "--warmup", "0"])
    for event in child.events():
        assert event["event"] != "error", f"the run failed before its first sample: {event}"
        if event["event"] == "sample":
            break
    else:
        pytest.fail(f"the run ended without a sample (exit {child.proc.returncode}): "
                    f"{child.stderr_tail()}")
    assert child.running()
    code = child.cancel()
    # Ended by our SIGTERM inside the grace period (exit 130 from its handler), not
    # killed after it and not finished: the latency is bench_run.py's to measure.
    assert code == EXIT_CANCELLED, f"exit {code}: {child.stderr_tail()}"
    assert not child.running()


def test_devices_job_lists_cpu():
    result = run_job("devices")
    cpu = result["devices"][0]
    assert cpu["id"] == "cpu" and cpu["memory_bytes"] > 0
    assert result["torch"].startswith("2.")


def test_device_mismatch_and_oom_messages_name_the_fix():
    """The GPU-only failures, from torch's own texts (no GPU in CI)."""
    import torch

    from inspector.jobs.timed_generation import _explain
    from inspector.jobs.spec import RunSpec

    spec = RunSpec(file="toy.pt2", device="cuda:0")
    mismatch = RuntimeError("Expected all tensors to be on the same device, but found at "
                            "least two devices, cuda:0 and cpu!")
    msg = str(_explain(mismatch, spec, torch.device("cuda:0")))
    assert msg.startswith("baked cpu device")
    assert "pt2-inspector audit toy.pt2" in msg and "retarget toy.pt2 --device cuda" in msg
    oom = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert "out of memory on cuda:0" in str(_explain(oom, spec, torch.device("cuda:0")))
