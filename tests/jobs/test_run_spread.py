"""`run --threads N`, the spread of each figure, and `run --compile`'s word on stderr:
real run children on the tiny archive."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from jobs_helpers import run_events

from inspector.jobs.runner import Job, child_env


def test_threads_reach_torch_and_each_figure_carries_its_spread(tiny_archive):
    events, code = run_events("run", [str(tiny_archive), "--batch", "1", "--max-tokens", "4",
                                      "--warmup", "0", "--repeats", "3", "--threads", "2"])
    assert code == 0, events[-1]
    result = events[-1]
    assert result["threads"] == 2  # torch.get_num_threads() in the child, after our set
    samples = [e for e in events if e["event"] == "sample"]
    steps = result["tokens"]
    per_run = [[s["ms"] for s in samples if s["repeat"] == r] for r in range(3)]
    assert all(len(run) == steps for run in per_run)
    # each run's own p50, and their min-max: what says whether the runs agree
    expected = [float(np.percentile(run, 50)) for run in per_run]
    assert result["run_p50_ms"] == pytest.approx(expected, abs=1e-3)
    sp = result["spread"]
    assert sp["run_p50_ms"]["n"] == 3
    assert sp["run_p50_ms"]["min"] == pytest.approx(min(expected), abs=1e-3)
    assert sp["run_p50_ms"]["max"] == pytest.approx(max(expected), abs=1e-3)
    every = [s["ms"] for s in samples]
    assert sp["per_token_ms"]["n"] == len(every)
    assert sp["per_token_ms"]["q1"] == pytest.approx(float(np.percentile(every, 25)), abs=1e-3)
    assert sp["per_token_ms"]["q3"] == pytest.approx(float(np.percentile(every, 75)), abs=1e-3)
    assert sp["encoder_ms"]["n"] == sp["total_ms"]["n"] == 3
    assert isinstance(result["warnings"], list) and result["cpus"] >= 1
    if result["load_average"] is not None and result["load_average"] >= result["cpus"]:
        assert any("load average" in w for w in result["warnings"])


def test_default_is_one_thread_and_the_text_shows_the_spread(tiny_archive):
    proc = subprocess.run(
        [sys.executable, "-m", "inspector", "run", str(tiny_archive), "--batch", "1",
         "--max-tokens", "3", "--warmup", "0"],
        capture_output=True, text=True, env=child_env({"OMP_NUM_THREADS": "2"}), timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "batch 1, 1 thread:" in out and "3 timed runs after 0 warm-up" in out
    assert "(IQR " in out and "each run's p50 " in out and "over 3 runs)" in out


def test_compile_says_so_on_stderr_before_the_first_call(tiny_archive):
    """The word comes before compilation starts: read it, then cancel (compiling the
    toy takes a minute on a busy machine)."""
    child = Job("run", [str(tiny_archive), "--compile", "--mode", "eager", "--batch", "1",
                        "--max-tokens", "2", "--warmup", "1", "--repeats", "1"])
    try:
        note = None
        for event in child.events():
            if event["event"] == "log" and event["level"] == "note":
                note = event["message"]
                break
            assert event["event"] != "error", event
    finally:
        child.cancel()
    assert note == "compiling (first call)…"
    from inspector.commands.output import ProgressBar, event_printer

    class Sink:
        text = ""

        def write(self, s):
            self.text += s

    sink = Sink()
    event_printer(ProgressBar(stream=sink), stream=sink)(
        {"event": "log", "level": "note", "message": note})
    assert sink.text == "compiling (first call)…\n"


def test_only_the_first_generation_goes_through_torchs_input_checks(tiny_archive, monkeypatch):
    """torch's module() checks every call's inputs in Python (more than the tiny
    decoder's own ops cost): the run job lets it check the first generation, whose
    shapes every timed one repeats, and no other. Counted in torch's own check."""
    import io

    from torch.export import _unlift

    from inspector.jobs import timed_generation
    from inspector.jobs.protocol import Emitter
    from inspector.jobs.spec import RunSpec

    calls = []
    real = _unlift._check_input_constraints_for_module

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_unlift, "_check_input_constraints_for_module", counted)
    spec = RunSpec(file=str(tiny_archive), batch=1, max_tokens=4, warmup=1, repeats=2).validate()
    result = timed_generation.run(spec, Emitter(io.StringIO()))
    steps = result["tokens"]
    assert len(calls) == 1 + steps  # the warm-up's encoder call and its decoder steps
    assert len(result["per_token_ms"]) == 2 * steps
