"""Issue 12 items 4 and 5 with real torch: export explains rejected ranges in our
words (with the source line), the facts behind the advice are measured, and a run
honours the archive's ranges before any work."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from export_cache import toy_export
from jobs_helpers import run_events

from inspector.core.archive import open_archive
from inspector.core.run_ranges import (
    DEFAULT_MAX_TOKENS,
    export_run_problems,
    generator_ranges,
    run_defaults,
)


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


# --- export explains ---------------------------------------------------------------


def test_example_size_1_is_explained_with_the_fix_that_works(tmp_path: Path) -> None:
    out = tmp_path / "x.pt2"
    proc = _cli("export", "--preset", "tiny", "--batch", "1:16", "--example-batch", "1",
                "-o", str(out))
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and "Traceback" not in proc.stderr
    assert "Constraints violated (batch)" in line
    assert "example batch size is 1" in line
    # the fix that works is ours; torch's own (batch = 1: static) is named as such
    fix = line.split("Suggested fixes:", 1)[1]
    assert fix.strip().startswith("an example batch size of 2 or more")
    assert "would make batch static" in fix
    assert list(tmp_path.iterdir()) == []


class _PinsBatch:
    """A module whose reshape pins dim 0 to 4 (the line torch must be traced to)."""

    @staticmethod
    def build() -> Any:
        import torch

        class PinsBatch(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                y = x.reshape(4, -1)  # PIN-LINE
                return y * 2

        class Narrows(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                if x.shape[0] > 5:  # NARROW-LINE
                    return x * 2
                return x
        return PinsBatch(), Narrows()


def _line_of(marker: str) -> int:
    lines, start = inspect.getsourcelines(_PinsBatch)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def test_code_that_pins_or_narrows_a_dim_is_named() -> None:
    import torch

    from inspector.jobs.export import ExportFailed, _export

    pins, narrows = _PinsBatch.build()
    dims = ({0: torch.export.Dim("batch", min=1, max=16)},)
    for module, marker, what, fix in ((pins, "PIN-LINE", "made it a constant", "batch = 4"),
                                      (narrows, "NARROW-LINE", "narrowed its range",
                                       "batch = Dim('batch', max=5)")):
        with pytest.raises(ExportFailed) as info:
            _export(torch, module, (torch.randn(4, 3),), dims, strict=False)
        message = str(info.value)
        assert f"the code that {what}: {__file__}:{_line_of(marker)}" in message, message
        assert message.endswith(f"Suggested fixes: {fix}")  # torch's fix is right here
        assert "draft_export found:" in info.value.details


def test_a_range_from_1_exported_from_an_example_of_2_runs_size_1(tiny_archive: Path) -> None:
    """The measured fact behind the advice: tiny_archive is batch 1:16 from the
    default example batch 2, seq_len 2:64 from 8; torch keeps min 1 for batch, and
    the programs accept batch 1 and a one-token sequence, with eager's tokens."""
    with open_archive(tiny_archive) as archive:
        ranges = generator_ranges(archive)
    assert (ranges.batch.min, ranges.batch.max) == (1, 16)
    assert (ranges.seq.min, ranges.seq.max) == (2, 64)
    tokens = {}
    for mode in ("export", "eager"):
        events, code = run_events("run", [str(tiny_archive), "--batch", "1", "--max-tokens", "4",
                                          "--warmup", "0", "--mode", mode])
        assert code == 0, events[-1]
        result = events[-1]
        assert result["batch"] == 1 and result["tokens"] >= 1
        tokens[mode] = result["token_ids"]
    assert tokens["export"] == tokens["eager"]


# --- run honours the archive's ranges -------------------------------------------------


@pytest.fixture(scope="module")
def narrow_archive() -> Path:
    """The issue's archive: seq_len 4:128 (and batch 2:16, so 1 is outside), made by
    the real export child once per source version (tests/export_cache.py)."""
    return toy_export(["--batch", "2:16", "--example-batch", "2", "--seq-len", "4:128"],
                      file="narrow.pt2")[0]


# The CLI in a process where `import torch` fails and no child process can start:
# what runs there provably did neither.
_NO_TORCH_NO_CHILD = """\
import subprocess, sys
sys.modules["torch"] = None  # from here on `import torch` raises ImportError
def _refuse(*args, **kwargs):
    raise AssertionError("the command started a child process")
subprocess.Popen = _refuse
from inspector.cli import console
sys.argv = ["pt2-inspector", *sys.argv[1:]]
console()
"""


def test_a_generation_outside_the_seq_range_is_refused_before_any_work(narrow_archive: Path) -> None:
    # the same command in a process that can import no torch and start no child
    # (the refusal needs neither; how fast it is is bench_run.py's business)
    proc = subprocess.run([sys.executable, "-c", _NO_TORCH_NO_CHILD, "run", str(narrow_archive),
                           "--warmup", "0"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: the decoder accepts 4 to 128 tokens")
    assert "generation starts from one token" in line and "starting at 1 or 2" in line
    assert "--" not in line  # names the quantity, not a CLI flag
    assert _cli("run", str(narrow_archive), "--warmup", "0").stderr.strip() == line  # as usual
    # the job child the window starts refuses the same way, before importing torch
    events, code = run_events("run", [str(narrow_archive)])
    assert code == 1 and events[-1]["event"] == "error"
    assert events[-1]["message"] == line[len("error: "):]
    assert not any(e.get("stage") == "import torch" for e in events)


def test_defaults_come_from_the_archive(narrow_archive: Path, tiny_archive: Path) -> None:
    with open_archive(narrow_archive) as archive:
        narrow = run_defaults(generator_ranges(archive))
    with open_archive(tiny_archive) as archive:
        tiny = run_defaults(generator_ranges(archive))
    assert narrow.batch == 2  # 1 is outside the archive's 2:16
    assert tiny.batch == 1 and tiny.max_tokens == DEFAULT_MAX_TOKENS
    proc = _cli("run", str(narrow_archive), "--batch", "1")
    assert proc.returncode == 2
    assert "batch 1 is outside the archive's batch range 2:16" in proc.stderr


def test_run_help_shows_the_defaults() -> None:
    proc = _cli("run", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for default in ("default: cpu", "default: export", "default: fp32",
                    f"default: {DEFAULT_MAX_TOKENS}", "default: 1,", "(default: 1)"):
        assert default in text, default


def test_export_ranges_the_generator_cannot_run_are_flagged() -> None:
    assert export_run_problems(1, 64, 2, 256) == []
    assert export_run_problems(1, 64, 1, 256) == []
    (problem,) = export_run_problems(1, 64, 4, 128)
    assert "generation starts from one token" in problem
    (problem,) = export_run_problems(1, 64, 8, 8)
    assert "fixed at 8" in problem
    (note,) = export_run_problems(1, 64, 2, 16)
    assert "stop after 16 tokens" in note


def test_export_records_the_dims_it_asked_for(narrow_archive: Path) -> None:
    with open_archive(narrow_archive) as archive:
        record = json.loads(archive.read_extra("pt2_inspector.json"))
    assert record["dynamic_shapes"]["decoder"]["input_ids"] == {"0": "batch", "1": "seq_len"}
    assert record["dynamic_shapes"]["encoder"]["pixel_values"] == {"0": "batch"}
