"""The one-line error contract where issue 18 broke it, through the real CLI.

- a stack trace with a 5,000-digit or 2**64 line number (core/frames.py);
- a device name with a trailing newline (`$` matches before it: fullmatch now);
- a full disk while exporting or retargeting (torch's writer raises RuntimeError
  from inline_container.cc, not OSError), simulated with RLIMIT_FSIZE;
- bidi controls and zero-width characters from the file on the terminal.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_corpus import Base, by_name
from inspector.core.frames import parse_stack_trace
from inspector.core.text import MARKED, mark_invisible

REPO = Path(__file__).resolve().parents[2]


def _cli(args: list[str], cwd: Path, fsize: int | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PT2I_DEBUG", None)

    def limit() -> None:
        if fsize is not None:
            # a write past the limit fails with EFBIG, as on a full disk (SIGXFSZ
            # would kill instead: ignore it, and the ignore survives exec)
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run([sys.executable, "-m", "inspector", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=limit,
                          stdin=subprocess.DEVNULL)


def _one_error_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "internal error" not in lines[0] and "Traceback" not in done.stderr, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.mark.parametrize("digits", ["9" * 5000, str(2**64), "0" * 3000 + "7"])
def test_huge_line_numbers_parse(digits: str) -> None:
    frames = parse_stack_trace(f'File "/u/m.py", line {digits}, in f\n    y = 1')
    assert len(frames) == 1 and frames[0].function == "f" and frames[0].code == "y = 1"
    assert 0 <= frames[0].line < 2**31


def test_huge_line_numbers_list_info_audit(base: Base, tmp_path: Path) -> None:
    path, _ = by_name("json-huge-line-numbers").make(base, tmp_path)
    for command in ("info", "list", "audit"):
        done = _cli([command, str(path)], tmp_path)
        assert done.returncode in (0, 1), done.stderr
        assert done.stderr == ""


@pytest.mark.parametrize("argv", [
    ["retarget", "{file}", "--device", "cpu\n", "-o", "{out}"],
    ["retarget", "{file}", "--device", "cuda:0\nx", "-o", "{out}"],
    ["run", "{file}", "--device", "cpu\n"],
    ["export", "--preset", "tiny", "--device", "cpu\n", "-o", "{out}"],
], ids=["retarget", "retarget-two-lines", "run", "export"])
def test_device_with_a_newline_is_refused(argv: list[str], base_archive: Path,
                                          tmp_path: Path) -> None:
    out = tmp_path / "out" / "o.pt2"
    out.parent.mkdir()
    args = [a.format(file=base_archive, out=out) for a in argv]
    line = _one_error_line(_cli(args, tmp_path))
    assert "device" in line and "\\n" in line or "'cpu\\n'" in line, line
    assert list(out.parent.iterdir()) == []


def test_export_to_a_full_disk(tmp_path: Path) -> None:
    out = tmp_path / "out" / "toy.pt2"
    out.parent.mkdir()
    done = _cli(["export", "--preset", "tiny", "--batch", "1:4", "-o", str(out)], tmp_path,
                fsize=256 << 10)
    _one_error_line(done, "cannot write", str(out), "ulimit -f")
    assert list(out.parent.iterdir()) == []


def test_retarget_to_a_full_disk(base: Base, tmp_path: Path) -> None:
    src = tmp_path / "big.pt2"
    src.write_bytes(base.zip(add=[("data/weights/pad", os.urandom(2 << 20))]))
    out = tmp_path / "out" / "r.pt2"
    out.parent.mkdir()
    done = _cli(["retarget", str(src), "--device", "cuda", "-o", str(out)], tmp_path,
                fsize=1 << 20)
    _one_error_line(done, "cannot write", "too large")
    assert list(out.parent.iterdir()) == []


def test_bidi_and_invisible_characters_are_escaped(base: Base, tmp_path: Path) -> None:
    path, _ = by_name("text-bidi-and-invisible").make(base, tmp_path)
    for args in (["list", str(path)], ["list", str(path), "--program", "model"],
                 ["info", str(path)], ["audit", str(path)]):
        done = _cli(args, tmp_path)
        assert done.returncode in (0, 1), done.stderr
        raw = [hex(ord(c)) for c in done.stdout if ord(c) in MARKED and c not in "\t\n"]
        assert not raw, f"{args[0]}: printed raw {sorted(set(raw))}"
    listing = _cli(["list", str(path)], tmp_path).stdout
    assert "\\u202e" in listing and "\\u200b" in listing  # shown, not dropped
    done = _cli(["info", str(path), "--json"], tmp_path)
    assert not any(ord(c) in MARKED for c in done.stdout if c not in "\t\n")
    doc = json.loads(done.stdout)  # JSON escapes: the data itself is unchanged
    assert any("\u202e" in json.dumps(doc, ensure_ascii=False) for _ in [0])
    assert mark_invisible("a\u202eb\u200bc\x1b") == "a\\u202eb\\u200bc\\x1b"
