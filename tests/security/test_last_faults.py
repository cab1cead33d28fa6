"""The last faults of issue 27 ("The other faults found"), through the real CLI.

- `node` read and printed any local file a frame named (/etc/passwd, a .txt, a
  `.py` link to a key file): it now follows the window's rule, one function in
  core (sources.source_file);
- a recorded line number of 2**64 showed as `:0`;
- `report -o` trusted its output path (the input archive, a FIFO, a device, a
  symlink), left `.NAME.HEX.tmp` behind when SIGKILLed, and allowed inline scripts;
- a deflate bomb weight was inflated whole before its size was checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_corpus import Base, _walk_program

REPO = Path(__file__).resolve().parents[2]


def _cli(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PT2I_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "inspector", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _one_error_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "internal error" not in lines[0] and "Traceback" not in done.stderr, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _with_trace(base: Base, out: Path, trace: str) -> tuple[Path, str]:
    """The base archive with `trace` as every node's stack trace; returns it and
    the name of a node that carries it."""
    doc = base.json()
    nodes = _walk_program(doc)["nodes"]
    for node in nodes:
        node["metadata"]["stack_trace"] = trace
    name = next(o["as_tensor"]["name"] for n in nodes for o in n["outputs"] if "as_tensor" in o)
    out.write_bytes(base.with_program(doc))
    return out, name


# --------------------------------------------------------------- node: local files


SECRET = "SECRET-TOKEN-6f1e"


def _local_files(tmp: Path) -> dict[str, str]:
    """Files a frame may name, and whether their text may be shown."""
    (tmp / "notes.txt").write_text(f"{SECRET} notes\n")
    (tmp / "key").write_text(f"{SECRET} key\n")
    (tmp / "link.py").symlink_to(tmp / "key")  # a .py name, a key file behind it
    (tmp / "model.py").write_text("y = torch.relu(x)\n")
    (tmp / "lib.py").symlink_to(tmp / "model.py")  # a link to Python source: fine
    os.mkfifo(tmp / "pipe.py")  # opening it would block forever
    return {"/etc/passwd": "refused", str(tmp / "notes.txt"): "refused",
            str(tmp / "link.py"): "refused", str(tmp / "pipe.py"): "refused",
            str(tmp / "model.py"): "shown", str(tmp / "lib.py"): "shown"}


def test_node_shows_only_python_sources(base: Base, tmp_path: Path) -> None:
    files = _local_files(tmp_path)
    trace = "".join(f'File "{f}", line 1, in forward\n    y = self.lin(x)\n' for f in files)
    path, name = _with_trace(base, tmp_path / "frames.pt2", trace)
    text = _cli(["node", str(path), name], tmp_path, timeout=60)
    assert text.returncode == 0, text.stderr
    assert SECRET not in text.stdout
    assert "root:" not in text.stdout  # /etc/passwd's first line
    done = _cli(["node", str(path), name, "--json"], tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    frames = json.loads(done.stdout)["frames"]
    assert [f["file"] for f in frames] == list(files)
    for f in frames:
        if files[f["file"]] == "refused":
            assert f["local"] is None, f
        else:  # a real source still shows, its line checked (the rule is not "nothing")
            assert f["local"] == f["file"] and f["local_check"] == "differs", f
            assert f["local_code"] == "y = torch.relu(x)"
    assert SECRET not in done.stdout and "root:" not in done.stdout


def test_window_and_node_follow_one_rule(tmp_path: Path) -> None:
    """The Source pane reads exactly what `node` may read (one function in core)."""
    pytest.importorskip("PySide6")
    from inspector.core.sources import source_file, source_lines
    from inspector.ui.widgets.source_pane import read_source

    for path, verdict in _local_files(tmp_path).items():
        allowed = verdict == "shown"
        assert (source_file(path) is not None) is allowed, path
        assert (source_lines(path) is not None) is allowed, path
        assert (read_source(path) is not None) is allowed, path
    big = tmp_path / "big.py"
    with open(big, "wb") as fp:  # over the size cap: neither reads it
        fp.truncate(8 * 1024 * 1024 + 1)
    assert source_file(str(big)) is None and read_source(str(big)) is None


# --------------------------------------------------------------- line 2**64


def test_an_unreal_line_number_shows_as_recorded(base: Base, tmp_path: Path) -> None:
    huge = str(2**64)
    path, name = _with_trace(base, tmp_path / "lines.pt2",
                             f'File "/home/u/model.py", line {huge}, in forward\n    y = self.lin(x)\n')
    done = _cli(["node", str(path), name], tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"/home/u/model.py:{huge} in forward" in done.stdout
    assert "model.py:0 " not in done.stdout
    js = _cli(["node", str(path), name, "--json"], tmp_path, timeout=60)
    frame = json.loads(js.stdout)["frames"][0]
    assert frame["line_text"] == huge and frame["line"] == 0  # 0: unknown, for arithmetic


def test_line_text_of_recorded_numbers() -> None:
    from inspector.core.frames import parse_stack_trace

    def first(digits: str):
        return parse_stack_trace(f'File "/u/m.py", line {digits}, in f\n    y = 1')[0]

    assert first("42").line_text == "42" and first("42").location == "/u/m.py:42"
    assert first(str(2**64)).line_text == str(2**64)
    assert first("0" * 3000 + "7").line == 7  # leading zeros are not digits of the number
    long = first("9" * 5000).line_text
    assert long.startswith("9999") and "5,000 digits" in long and len(long) < 60
