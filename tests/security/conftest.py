"""Fixtures of the hostile-archive suite: one real archive exported once per
session, from which tests/security/hostile_corpus.py makes the hostile cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostile_corpus import Base


def export_base_archive(path: Path) -> Path:
    """A real archive that has every part a hostile file can abuse: parameters,
    a buffer, a lifted tensor constant, a dynamic dim (symbolic sizes and a range
    constraint), a baked device literal, a torch.cond subgraph, sample inputs."""
    import torch

    class Base(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)
            self.register_buffer("buf", torch.ones(3))
            self.const = torch.arange(3.0)  # lifted as a tensor constant

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.lin(x) + self.buf + self.const
            y = y + torch.arange(x.shape[0], device="cpu").unsqueeze(1)
            return torch.cond(y.sum() > 0, lambda a: a.cos(), lambda a: a.sin(), (y,))

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "tensor constant lifted" is the point here
        ep = torch.export.export(
            Base(), (torch.randn(5, 4),),
            dynamic_shapes={"x": {0: torch.export.Dim("b", min=2, max=64)}})
    torch.export.save(ep, path)
    return path


@pytest.fixture(scope="session")
def base_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_base_archive(tmp_path_factory.mktemp("security-base") / "m.pt2")


@pytest.fixture(scope="session")
def base(base_archive: Path) -> Base:
    return Base.load(base_archive)
