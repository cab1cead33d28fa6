"""`diff` gives its summary first; hunks that change only stack-trace paths or line
numbers (the same model exported from another checkout) are counted in one line and
shown with --frames; a real change is still shown."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "toy-tiny.pt2"
ROOT = DEMO.parents[2]


def _rewrite(dst: Path, *swaps: tuple[bytes, bytes]) -> Path:
    with zipfile.ZipFile(DEMO) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("models/decoder.json"):
                for old, new in swaps:
                    assert old in data, old
                    data = data.replace(old, new)
            zout.writestr(info, data)
    return dst


def _diff(a: Path, b: Path, *extra: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "inspector", "diff", str(a), str(b), *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1, proc.stderr
    return proc.stdout.splitlines()


@pytest.fixture(scope="module")
def moved(tmp_path_factory) -> Path:
    """The demo as if exported from another checkout: every library path and one
    line number moved."""
    return _rewrite(tmp_path_factory.mktemp("diff") / "moved.pt2",
                    (b'File \\"transformers/', b'File \\"/elsewhere/venv/site-packages/transformers/'),
                    (b'modeling_gpt2.py\\", line 573', b'modeling_gpt2.py\\", line 575'))


def test_summary_first_and_frame_only_hunks_counted_in_one_line(moved):
    lines = _diff(DEMO, moved)
    assert lines[0].endswith("differ (2 programs compared)")
    counted = [ln for ln in lines if "change only stack-trace paths or line numbers" in ln]
    assert len(counted) == 1 and "--frames shows them" in counted[0]
    assert not any(ln.startswith(("-", "+")) and "# File:" in ln for ln in lines)
    assert not any(ln.startswith("@@") for ln in lines)


def test_frames_shows_them(moved):
    lines = _diff(DEMO, moved, "--frames")
    assert lines[0].endswith("differ (2 programs compared)")
    minus = [ln for ln in lines if ln.startswith("-") and "# File:" in ln]
    plus = [ln for ln in lines if ln.startswith("+") and "# File:" in ln]
    assert minus and len(minus) == len(plus)
    assert any("/elsewhere/venv/site-packages/" in ln for ln in plus)
    assert any("modeling_gpt2.py:575" in ln for ln in plus)
    assert not any("change only stack-trace paths" in ln for ln in lines)


def test_a_changed_statement_is_still_shown(tmp_path, moved):
    changed = _rewrite(tmp_path / "changed.pt2",
                       (b'"torch.ops.aten.arange.default"', b'"torch.ops.aten.arange.start"'))
    lines = _diff(DEMO, changed)
    assert lines[0].endswith("differ (2 programs compared)")
    assert any(ln.startswith("+") and "torch.ops.aten.arange.start" in ln for ln in lines)
    # the summaries come before the first diff line
    first_diff = next(i for i, ln in enumerate(lines) if ln.startswith("--- "))
    assert any(ln.startswith("program decoder:") for ln in lines[:first_diff])
