"""`info` lists every argument of forward, constants included (issue 14, item 3).

torch's `graph_signature.user_inputs` for `forward(x, n, scale=0.5, flag=True,
mode="fast")` is `('x', 3, 0.5, True, 'fast')`: names for tensors and
symbols, the values export froze for the rest. `info --json` gives the same
list (`user_inputs`) and an entry per input; the text names the constants.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

from inspector.core.archive import open_archive
from inspector.core.summary import program_summary


def _models() -> dict[str, tuple[Any, tuple, dict, Any]]:
    import torch
    from torch.export import Dim

    class Constants(torch.nn.Module):
        def forward(self, x, n, scale=0.5, flag=True, mode="fast", none=None):  # type: ignore[no-untyped-def]
            y = x * n * scale
            return y.relu() if flag and mode == "fast" and none is None else y

    class SymInt(torch.nn.Module):
        def forward(self, x, k):  # type: ignore[no-untyped-def]
            return x * k + k

    class Nested(torch.nn.Module):
        def forward(self, x, pair, *, eps=1e-6, name="layer"):  # type: ignore[no-untyped-def]
            return x + pair[0] * pair[1] + eps if name == "layer" else x

    t = torch.randn
    return {
        "constants": (Constants(), (t(2), 3), {"scale": 0.5, "flag": True, "mode": "fast",
                                               "none": None}, None),
        "strings_kwargs": (Nested(), (t(3), (t(3), 2.0)), {"eps": 1e-6, "name": "layer"}, None),
        "symint": (SymInt(), (t(6, 2), 4), {},
                   {"x": {0: Dim("n", min=2, max=32)}, "k": Dim.DYNAMIC}),
    }


@pytest.fixture(scope="module")
def archives(archive_factory: ArchiveFactory) -> dict[str, tuple[Path, list, list]]:
    import torch

    result = {}
    for name, (model, args, kwargs, dynamic) in _models().items():
        path = archive_factory.export(f"info_inputs/{name}", model, args, kwargs,
                                      dynamic_shapes=dynamic)
        # what torch says about the file it loads back
        loaded = torch.export.load(str(path))
        names = [spec.arg.name for spec in loaded.graph_signature.input_specs
                 if spec.kind.name == "USER_INPUT"]
        result[name] = (path, list(loaded.graph_signature.user_inputs), names)
    return result


def test_user_inputs_are_torchs(archives: dict[str, tuple[Path, list, list]]) -> None:
    for name, (path, theirs, names) in archives.items():
        with open_archive(path) as archive:
            summary = program_summary(archive.program("model"))
        assert summary["user_inputs"] == theirs, name
        assert [i["name"] for i in summary["inputs"]] == names, name  # one per argument
    constants = archives["constants"][1]
    assert constants == ["x", 3, 0.5, True, "fast", None]  # the case covers every kind
    assert archives["symint"][1] == ["x", "k"]  # a dynamic int is a name


def test_info_cli_shows_constants(archives: dict[str, tuple[Path, list, list]]) -> None:
    path, theirs, _names = archives["constants"]
    proc = subprocess.run([sys.executable, "-m", "inspector", "info", str(path), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (program,) = json.loads(proc.stdout)["programs"]
    assert program["user_inputs"] == theirs
    by_name = {i["name"]: i for i in program["inputs"]}
    assert by_name["x"] == {"name": "x", "type": "f32[2]", "constant": False}
    assert by_name["mode"] == {"name": "mode", "type": "str", "constant": True, "value": "fast"}
    assert by_name["scale"]["value"] == 0.5 and by_name["flag"]["value"] is True
    text = subprocess.run([sys.executable, "-m", "inspector", "info", str(path)],
                          capture_output=True, text=True, timeout=120).stdout
    assert "input  n = 3 (constant int)" in text
    assert "input  mode = 'fast' (constant str)" in text
    assert "input  none = None (constant None)" in text
