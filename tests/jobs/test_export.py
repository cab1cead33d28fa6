"""The export job in a real child process (tiny preset), and the `export` CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inspector.core.archive import open_archive
from inspector.jobs.__main__ import EXIT_CANCELLED
from inspector.jobs.runner import Job, child_env, cleanup_partial
from inspector.jobs.spec import ExportSpec, ExportSpecError, parse_range, partial_dir

from jobs_helpers import run_events

STAGES = ["import torch", "build model", "export encoder", "export decoder", "save", "done"]


def test_events_arrive_in_order(tiny_export):
    out, events = tiny_export
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "result" and "error" not in kinds
    progress = [e for e in events if e["event"] == "progress"]
    assert [e["stage"] for e in progress] == STAGES
    fractions = [e["fraction"] for e in progress]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    result = events[-1]
    assert result["paths"] == [str(out)]
    assert result["programs"] == ["decoder", "encoder"]
    assert result["bytes"] == out.stat().st_size
    assert result["ranges"] == {"batch": [1, 16], "seq_len": [2, 64]}


def test_archive_holds_both_programs_and_the_ranges(tiny_archive):
    with open_archive(tiny_archive) as ar:
        assert ar.program_names == ["decoder", "encoder"]
        # The archive's top folder is named after the file (staged under its final name).
        assert ar.top == "toy-tiny/"
        dec = ar.program_json("decoder")["range_constraints"]
        enc = ar.program_json("encoder")["range_constraints"]
        info = json.loads(ar.read_extra("pt2_inspector.json"))
    assert sorted((r["min_val"], r["max_val"]) for r in dec.values()) == [(1, 16), (2, 64)]
    assert [(r["min_val"], r["max_val"]) for r in enc.values()] == [(1, 16)]
    assert info["spec"]["batch_min"] == 1 and info["spec"]["seq_max"] == 64
    assert info["toy_config"]["encoder"]["hidden_size"] == 64
    assert info["toy_config"]["decoder"]["vocab_size"] == 1024
    assert info["programs"]["decoder"]["inputs"] == ["input_ids", "encoder_hidden_states"]
    # and nothing was left beside it
    assert [p.name for p in tiny_archive.parent.iterdir()] == [tiny_archive.name]


def test_info_json_shows_the_programs_and_chosen_ranges(tiny_archive, tmp_path):
    proc = _cli("info", "--json", str(tiny_archive), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    programs = {p["name"]: p for p in json.loads(proc.stdout)["programs"]}
    assert sorted(programs) == ["decoder", "encoder"]
    ranges = sorted((r["min"], r["max"]) for r in programs["decoder"]["range_constraints"].values())
    assert ranges == [(1, 16), (2, 64)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_min": 5, "batch_max": 2}, "batch range 5:2 is empty"),
        ({"batch_min": -1}, "batch min is -1"),
        ({"seq_max": 300}, "seq_len max is 300, over 256"),
        ({"example_seq": 100, "seq_max": 64}, "example seq_len size 100 is outside the range 2:64"),
        ({"example_batch": 0}, "example batch size 0 is outside the range 1:64"),
        ({"preset": "huge"}, "unknown preset 'huge'"),
        ({"device": "gpu0"}, "bad export device 'gpu0'"),
    ],
)
def test_bad_specs_are_refused_before_torch(kwargs, message):
    with pytest.raises(ExportSpecError, match=message.replace("(", r"\(")):
        ExportSpec(**kwargs).validate()


def test_range_parsing():
    assert parse_range("--batch", "1:64") == (1, 64)
    assert parse_range("--batch", "8") == (8, 8)
    with pytest.raises(ExportSpecError, match="not MIN:MAX"):
        parse_range("--batch", "1-64")


def test_spec_round_trips_through_argv():
    from inspector.jobs.export import add_arguments
    from inspector.jobs.__main__ import _Parser

    spec = ExportSpec(batch_min=2, batch_max=9, seq_min=3, seq_max=40, example_batch=3,
                      example_seq=5, cache_position=True, decompose=True)
    parser = _Parser()
    add_arguments(parser)
    assert ExportSpec.from_args(parser.parse_args([*spec.to_argv(), "-o", "x.pt2"])) == spec


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, cwd=cwd, env=child_env(), timeout=120)


def test_cli_bad_spec_exits_2_and_writes_nothing(tmp_path):
    proc = _cli("export", "--seq-len", "2:512", "-o", "out.pt2", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: seq_len max is 512") and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_torch_constraint_error_keeps_suggested_fix(tmp_path):
    # Example batch 1 passes our checks (inside 1:64) but torch specializes it.
    out = tmp_path / "x.pt2"
    events, code = run_events("export", ["--example-batch", "1", "-o", str(out)])
    assert code == 1
    err = events[-1]
    assert err["event"] == "error"
    assert "Constraints violated (batch)" in err["message"]
    # torch's own fix (batch = 1) makes batch static; ours keeps it dynamic
    assert "Suggested fixes: an example batch size of 2 or more" in err["message"]
    assert "torch's own suggestion, batch = 1" in err["message"]
    assert "Suggested fixes" in err["details"]  # torch's whole text, one click away
    assert list(tmp_path.iterdir()) == []


def _until_save(child: Job) -> None:
    """Read the child's events up to "save" (its partial folder exists then); fail
    if it ends or errors first, so no later assertion can pass on a dead child."""
    for event in child.events():
        assert event["event"] != "error", f"the export failed before saving: {event}"
        if event["event"] == "progress" and event["stage"] == "save":
            return
    pytest.fail(f"the export ended without reaching save (exit {child.proc.returncode}): "
                f"{child.stderr_tail()}")


def test_cancel_during_save_leaves_nothing_and_keeps_the_earlier_file(tmp_path):
    out = tmp_path / "keep.pt2"
    out.write_bytes(b"earlier archive")
    child = Job("export", ["-o", str(out)])
    _until_save(child)  # the child is now writing into its partial folder
    staged = partial_dir(out, child.pid)
    assert child.running() and staged.parent == tmp_path
    code = child.cancel()  # SIGTERM: the child removes its partial folder itself
    # Ended by our SIGTERM through its handler (which removes the partial folder),
    # not by finishing and not by the SIGKILL after the grace period. How fast is
    # bench_export.py's business, not a unit test's (issue 20, item 8).
    assert code == EXIT_CANCELLED, f"exit {code}: {child.stderr_tail()}"
    assert out.read_bytes() == b"earlier archive"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.pt2"]


def test_kill_then_cleanup_partial(tmp_path):
    """SIGKILL gives the child no chance to clean up: the parent removes the folder."""
    import signal

    out = tmp_path / "x.pt2"
    child = Job("export", ["-o", str(out)])
    _until_save(child)
    # Freeze it at once (the tiny save takes a few hundred ms), so what is on disk
    # is what a SIGKILL during the save leaves.
    os.kill(child.pid, signal.SIGSTOP)
    staged = partial_dir(out, child.pid)
    try:
        assert staged.is_dir(), "the save had already finished: nothing to kill"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        code = child.cancel()
    assert code == -signal.SIGKILL
    assert staged.is_dir() and not out.exists()  # the half-written folder stays behind
    cleanup_partial(out, child.pid)
    assert list(tmp_path.iterdir()) == []


def test_separate_files_cache_position_and_decompose(tmp_path):
    out = tmp_path / "toy.pt2"
    events, code = run_events("export", ["--separate", "--cache-position", "--decompose",
                                         "--batch", "1:4",
                                         "--seq-len", "2:32", "-o", str(out)])
    assert code == 0, events[-1]
    enc, dec = tmp_path / "toy-encoder.pt2", tmp_path / "toy-decoder.pt2"
    assert events[-1]["paths"] == [str(enc), str(dec)]
    assert "decompose" in [e["stage"] for e in events if e["event"] == "progress"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["toy-decoder.pt2", "toy-encoder.pt2"]
    with open_archive(dec) as ar:
        assert ar.program_names == ["model"]  # torch.export.save's layout, as in the blog
        doc = ar.program_json("model")
        info = json.loads(ar.read_extra("pt2_inspector.json"))
    inputs = [s for s in doc["graph_module"]["signature"]["input_specs"] if "user_input" in s]
    assert len(inputs) == 3  # input_ids, encoder_hidden_states, cache_position
    assert info["spec"]["cache_position"] is True and info["spec"]["decompose"] is True
    targets = {n["target"] for n in doc["graph_module"]["graph"]["nodes"]}
    assert "torch.ops.aten.linear.default" not in targets  # core ATen after decompositions
    assert "torch.ops.aten.scaled_dot_product_attention.default" in targets  # kept whole
    # the positions come in as an input: the position arange is gone (the masks'
    # aranges stay: transformers 5 builds them inside create_causal_mask)
    traces = [n["metadata"].get("stack_trace", "") for n in doc["graph_module"]["graph"]["nodes"]
              if "arange" in n["target"]]
    assert traces and not any("position_ids = torch.arange" in t for t in traces)
    assert sorted((r["min_val"], r["max_val"]) for r in doc["range_constraints"].values()) == [
        (1, 4), (2, 32)]


@pytest.mark.skipif(os.name != "posix", reason="signals")
def test_export_without_output_folder_is_a_clear_error(tmp_path):
    proc = _cli("export", "-o", str(tmp_path / "missing" / "x.pt2"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_cli_ctrl_c_cancels_the_child_and_writes_nothing(tmp_path):
    import signal

    # A shell starts background jobs with SIGINT ignored, and Python then keeps
    # it ignored: give the CLI the terminal's default, as a user's Ctrl+C meets it.
    proc = subprocess.Popen([sys.executable, "-m", "inspector", "export", "-o", "out.pt2"],
                            cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 60
    kids: list[str] = []
    while not kids and time.monotonic() < deadline and proc.poll() is None:
        kids = children.read_text().split() if children.exists() else []
        time.sleep(0.05)  # polling for the child to exist, not waiting for work
    assert kids, "the CLI never started its export child"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)  # slack for a loaded CI machine
    assert proc.returncode == 130
    assert err.strip().splitlines()[-1] == "error: interrupted (Ctrl+C); nothing was written"
    assert not Path(f"/proc/{kids[0]}").exists() or "Z" in Path(
        f"/proc/{kids[0]}/stat").read_text().split()[2]
    assert list(tmp_path.iterdir()) == []
