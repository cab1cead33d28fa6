"""Half-written archives (issue 14, item 5): torch's save failed midway.

Two real ways torch leaves one: an exception inside torch.export.save (its
writer still closes the zip, without the program JSON), and a process that
dies while saving (no zip directory at all). Both must say "incomplete
archive (... missing ...)", not a generic "not a .pt2" message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inspector.core.archive import open_archive
from inspector.core.errors import ArchiveError

_MODEL = """
import torch
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(64, 64)
        self.b = torch.nn.Linear(64, 64)
        self.register_buffer("c", torch.ones(3))
        self.k = torch.ones(2)  # a lifted constant: written after the weights
    def forward(self, x):
        return self.b(self.a(x)) + self.k.sum() + self.c.sum()
ep = torch.export.export(M(), (torch.randn(2, 64),))
"""

_RAISE = _MODEL + """
import torch.export.pt2_archive._package as pkg
def fail(*args, **kwargs):
    raise OSError("No space left on device")
pkg._package_constants = fail  # the weights are written, then the save fails
try:
    torch.export.save(ep, PATH)
except OSError:
    pass
"""

_DIE = _MODEL + """
import os
import torch.export.pt2_archive._package as pkg
calls = [0]
original = pkg.PT2ArchiveWriter.write_bytes
def write_bytes(self, name, data):
    original(self, name, data)
    calls[0] += 1
    if calls[0] == 3:
        os._exit(1)  # the process dies mid-save: no zip directory is written
pkg.PT2ArchiveWriter.write_bytes = write_bytes
torch.export.save(ep, PATH)
"""


def _run(script: str, path: Path) -> None:
    code = script.replace("PATH", repr(str(path)))
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=300)
    assert path.exists() and path.stat().st_size > 0


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("incomplete")
    paths = {"raised": out / "raised.pt2", "died": out / "died.pt2"}
    _run(_RAISE, paths["raised"])
    _run(_DIE, paths["died"])
    return paths


def test_save_that_raised(broken: dict[str, Path]) -> None:
    import torch

    with pytest.raises(Exception):  # noqa: B017 - torch cannot load it either
        torch.export.load(str(broken["raised"]))
    with pytest.raises(ArchiveError) as err:
        open_archive(broken["raised"])
    message = str(err.value)
    assert "incomplete archive (" in message
    assert "models/model.json" in message and "missing" in message
    assert "data/constants/model_constants_config.json" in message


def test_save_that_died(broken: dict[str, Path]) -> None:
    with pytest.raises(ArchiveError) as err:
        open_archive(broken["died"])
    message = str(err.value)
    assert "incomplete archive (its zip directory is missing" in message


def test_cli_line(broken: dict[str, Path]) -> None:
    for path in broken.values():
        proc = subprocess.run([sys.executable, "-m", "inspector", "info", str(path)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2
        (line,) = proc.stderr.splitlines()
        assert line.startswith(f"error: {path.name} is an incomplete archive (")


def test_other_files_keep_their_message(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pt2"
    junk.write_bytes(b"PK\x03\x04" + b"\x00" * 26 + b"hello.txt")
    with pytest.raises(ArchiveError, match="not a zip file"):
        open_archive(junk)
