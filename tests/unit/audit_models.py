"""Real archives for the audit and retarget tests (torch runs here, in tests only).

Each builder exports once and caches the file in the folder it is given (the
session's archive factory folder), so test modules that need the same archive
share one export.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

DEVICE_REPR = re.compile(r"device\(type='(\w+)'(?:, index=(\d+))?\)")


def _cached(root: Path, name: str, build: Any) -> Path:
    """The archive `build(path)` writes, made once in `root` (the archive factory's folder)."""
    return ArchiveFactory(root).build(name, build)


def device_model_archive(root: Path) -> Path:
    """Creation ops and copies with baked-in devices, a buffer, a lifted constant,
    a dynamic batch dim."""

    def build(path: Path) -> None:
        import torch

        class Devices(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)
                self.register_buffer("buf", torch.ones(4))
                self.table = torch.tensor([1.0, 2.0, 3.0, 4.0])  # lifted constant

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                n = x.shape[0]
                pos = torch.arange(n, device="cpu")
                y = self.lin(x) + self.buf + self.table
                z = torch.zeros(n, 4, device=torch.device("cpu"))
                w = torch.full((n, 4), 0.5, device="cpu")
                return (y + z + w).to("cpu") + pos[:, None].to(torch.float32)

        batch = torch.export.Dim("batch", min=2, max=64)
        ep = torch.export.export(Devices(), (torch.randn(3, 4),), dynamic_shapes=({0: batch},))
        torch.export.save(ep, str(path))

    return _cached(root, "devices", build)


def cond_archive(root: Path) -> Path:
    """A torch.cond program (nested subgraphs), no device literals."""

    def build(path: Path) -> None:
        import torch

        class Cond(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(3, 3)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return torch.cond(x.sum() > 0, lambda t: self.lin(t).relu(),
                                  lambda t: t.cos(), (x,))

        batch = torch.export.Dim("batch", min=2, max=32)
        ep = torch.export.export(Cond(), (torch.randn(4, 3),), dynamic_shapes=({0: batch},))
        torch.export.save(ep, str(path))

    return _cached(root, "cond", build)


def two_program_archive(root: Path) -> Path:
    """Two programs in one archive (package_pt2), one with a device literal."""

    def build(path: Path) -> None:
        import torch
        from torch.export.pt2_archive._package import package_pt2

        class First(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(4, 2)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.lin(x).sigmoid()

        class Second(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x * torch.ones(x.shape[1], device="cpu")

        batch = torch.export.Dim("batch", min=2, max=32)
        first = torch.export.export(First(), (torch.randn(3, 4),), dynamic_shapes=({0: batch},))
        second = torch.export.export(Second(), (torch.randn(3, 5),), dynamic_shapes=({0: batch},))
        package_pt2(str(path), exported_programs={"first": first, "second": second})

    return _cached(root, "two", build)


def toy_archive(root: Path) -> Path:
    """The seed's toy model (tiny preset) exported on CPU: encoder + decoder, by the
    real export child, the one archive the GUI and search tests open too (made once
    per source version: tests/export_cache.py; `root` is not used)."""
    from export_cache import toy_export

    return toy_export()[0]


def torch_programs(path: Path) -> dict[str, Any]:
    """Load every program of an archive with torch (tests only)."""
    import torch
    # A bare `import transformers` is lazy and registers nothing: the submodule
    # registers the toy encoder's output pytree type that torch's load needs.
    import transformers.modeling_outputs  # noqa: F401
    from torch.export.pt2_archive._package import load_pt2

    programs = load_pt2(str(path)).exported_programs
    if not programs:
        programs = {"model": torch.export.load(str(path))}
    return programs


def readable(ep: Any) -> str:
    """print_readable text with each device written one way: move_to_device_pass
    puts strings ('meta') where a loaded program has torch.device objects."""
    text = ep.graph_module.print_readable(print_output=False)
    return DEVICE_REPR.sub(
        lambda m: repr(m.group(1) + (f":{m.group(2)}" if m.group(2) else "")), text)


@pytest.fixture(scope="session")
def devices_pt2(archive_factory: ArchiveFactory) -> Path:
    """device_model_archive in the session's folder (a fixture: import it by name)."""
    return device_model_archive(archive_factory.root)


@pytest.fixture(scope="session")
def two_pt2(archive_factory: ArchiveFactory) -> Path:
    """two_program_archive in the session's folder (a fixture: import it by name)."""
    return two_program_archive(archive_factory.root)


def serialized_devices(doc: object, keys: tuple[str, ...] = ("device", "as_device")
                       ) -> list[dict]:
    """Every serialized device under one of `keys`, anywhere in a JSON document
    (read with json: the retarget tests' view of an archive, independent of ours)."""
    found, stack = [], [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if k in keys and isinstance(v, dict) and "type" in v:
                    found.append(v)
                else:
                    stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)
    return found
