"""The memory plan without torch: sizes, the budget search, the lean parse, the command.

The plan's bytes are checked against torch itself in tests/jobs/test_memory_plan_torch.py;
here: what follows from the plan's own definitions on the fixture archives of
tests/data (real exports by other torch releases)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import orjson
import pytest

from inspector.core.archive import open_archive
from inspector.core.memory_plan import MemoryModel, MemoryPlanError, format_bytes, parse_size
from inspector.core.program import parse_program
from inspector.core.program.lean import parse_program_lean

DATA = Path(__file__).resolve().parents[1] / "data"
BLOCK = DATA / "2.14.1" / "block.pt2"  # x: f32[s77, 4], s77 in [0, inf], traced 3
SEQUENTIAL = DATA / "2.14.1" / "sequential.pt2"


def _model(path: Path, name: str | None = None) -> MemoryModel:
    with open_archive(path) as ar:
        return MemoryModel(ar.program(name or ar.program_names[0]))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", "memory", *args],
                          capture_output=True, text=True, timeout=120)


def test_parse_size_units() -> None:
    assert parse_size("24GiB") == 24 * 2**30
    assert parse_size("8GB") == 8 * 10**9
    assert parse_size("512 MiB") == 512 * 2**20
    assert parse_size("1.5KiB") == 1536
    assert parse_size("1000") == 1000
    for bad in ("", "8Gx", "-1GiB", "0", "GiB", "1e9"):
        with pytest.raises(MemoryPlanError):
            parse_size(bad)
    assert format_bytes(1536) == "1.50 KiB" and format_bytes(12) == "12 B"


def test_sizes_follow_the_dims_and_the_baseline_does_not() -> None:
    model = _model(BLOCK)
    assert [s.name for s in model.dynamic_symbols] == ["s77"]
    at3, at6 = model.plan(), model.plan({"s77": 6})
    assert at3.dims == {"s77": 3}
    # every activation of this block has s77 rows (but the scalar head.sum())
    scaled = at6.out_bytes == 2 * at3.out_bytes
    assert scaled.sum() >= len(at3.out_bytes) - 2
    assert at3.weights_bytes == at6.weights_bytes > 0
    assert at6.inputs_bytes == 2 * at3.inputs_bytes == 6 * 4 * 4
    assert at3.peak_bytes == int(at3.live_bytes.max()) and at6.peak_bytes > at3.peak_bytes
    assert model.node_names[at3.peak_index] == at3.peak_node()
    # live bytes never drop under what every node holds: its own new storages
    assert np.all(at3.live_bytes >= at3.baseline_bytes + at3.new_bytes)


def test_largest_fitting_is_the_edge_of_the_budget() -> None:
    model = _model(BLOCK)
    for budget in (600, 4096, 1 << 20):
        largest = model.largest_fitting(budget)["s77"]
        assert largest is not None
        assert model.plan({"s77": largest}).peak_bytes <= budget
        assert model.plan({"s77": largest + 1}).peak_bytes > budget
    # a brute-force scan from the bottom of the range agrees
    peaks = [model.plan({"s77": v}).peak_bytes for v in range(0, 200)]
    assert model.largest_fitting(4096)["s77"] == max(v for v, p in enumerate(peaks) if p <= 4096)
    assert model.largest_fitting(10)["s77"] is None  # not even the weights fit


def test_bad_dims_name_the_range() -> None:
    model = _model(SEQUENTIAL)
    (sym,) = model.dynamic_symbols
    assert (sym.min, sym.max) == (0, None)
    with pytest.raises(MemoryPlanError, match=rf"--dim {sym.name}=-1 is outside its range "
                                              rf"\(program 'model' takes {sym.name} in \[0, inf\]\)"):
        model.plan({sym.name: -1})
    with pytest.raises(MemoryPlanError, match="no such symbol"):
        model.plan({"s999999": 4})


def test_the_lean_parse_plans_the_same() -> None:
    for path in sorted(DATA.glob("2.*/*.pt2")):
        with zipfile.ZipFile(path) as z:
            texts = {Path(n).stem: z.read(n) for n in z.namelist()
                     if "/models/" in n and n.endswith(".json")}
        for name, text in texts.items():
            lean = MemoryModel(parse_program_lean(text, name)[0]).plan()
            whole = MemoryModel(parse_program(orjson.loads(text), name)).plan()
            assert lean.live_bytes.tolist() == whole.live_bytes.tolist(), (path, name)
            assert lean.out_bytes.tolist() == whole.out_bytes.tolist(), (path, name)


def test_command_json_and_text() -> None:
    proc = _cli(str(BLOCK), "--json", "--dim", "s77=5", "--budget", "1KiB")
    assert proc.returncode == 0, proc.stderr
    doc = orjson.loads(proc.stdout)
    (p,) = doc["programs"]
    assert set(p) == {"name", "dims", "nodes", "peak", "weights_bytes", "fits", "largest"}
    assert p["dims"] == {"s77": 5} and p["fits"] is True
    assert set(p["largest"]) == {"s77"}
    assert all(set(n) == {"node", "line", "module", "out_bytes", "live_bytes"} for n in p["nodes"])
    assert p["peak"]["bytes"] == max(n["live_bytes"] for n in p["nodes"])
    peak = next(n for n in p["nodes"] if n["live_bytes"] == p["peak"]["bytes"])
    assert p["peak"]["node"] == peak["node"]
    # the lines are `list`'s: the peak node's statement is on its line
    listing = subprocess.run([sys.executable, "-m", "inspector", "list", str(BLOCK), "--program", "model"],
                             capture_output=True, text=True, timeout=120).stdout.splitlines()
    for n in p["nodes"]:
        assert listing[n["line"] - 1].lstrip().startswith(n["node"]), n
    plain = _cli(str(BLOCK), "--json")
    assert set(orjson.loads(plain.stdout)["programs"][0]) == {
        "name", "dims", "nodes", "peak", "weights_bytes"}
    text = _cli(str(BLOCK), "--budget", "200B")
    assert text.returncode == 1  # does not fit
    assert "does not fit" in text.stdout and "peak node" in text.stdout
    assert "top 10 nodes by live bytes" in text.stdout


@pytest.mark.parametrize("args, words", [
    (["--dim", "s77"], "--dim 's77' does not parse"),
    (["--dim", "s5=3"], "--dim s5: no program here has that symbol"),
    (["--budget", "lots"], "--budget 'lots' does not parse"),
    (["--program", "nope"], "no program named 'nope'"),
])
def test_bad_input_is_one_error_line(args: list[str], words: str) -> None:
    proc = _cli(str(BLOCK), *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], proc.stderr
