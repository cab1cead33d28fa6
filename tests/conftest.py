"""Fixtures shared by every test room: small real archives made with real torch.

Small exports happen once per session and are cached in a session temp folder, all
through one factory (`archive_factory`, tests/archive_factory.py); the expensive
setup (the export corpus, the toy export, AOTInductor compiles) once per source
version, in a disk cache the xdist workers share (tests/export_cache.py)."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest

from archive_factory import ArchiveFactory
from export_cache import cached_dir, source_key

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# PT2I_REQUIRE_TOOLS=1 (.ci/run): a skip is a failure (tests/require_tools.py; in
# xdist workers too, tests/unit/test_require_tools.py)
pytest_plugins = ["require_tools"]


# Under pytest-xdist (the README's command) the files that take longest are handed
# out first, so that no worker is left running a long file after the other one has
# finished (longest first, as measured with --durations on this 2-core machine);
# the other files keep their order after them. A plain run keeps the file order.
LONGEST_FIRST = [
    "tests/security/test_contract.py", "tests/jobs/test_numerics_torch.py",
    "tests/jobs/test_profile.py", "tests/security/test_injection.py",
    "tests/unit/test_listing_fidelity.py", "tests/gui/test_plain_text.py",
    "tests/jobs/test_graph_edges.py", "tests/jobs/test_memory_plan_torch.py",
    "tests/gui/test_compiled_view.py", "tests/jobs/test_export_explains.py",
    "tests/unit/test_aoti.py", "tests/gui/test_export_panel.py",
    "tests/gui/test_weights_panel.py", "tests/gui/test_run_defaults.py",
    "tests/gui/test_window_hardening.py", "tests/gui/test_profile_panel.py",
    "tests/gui/test_run_panel.py", "tests/unit/test_shapes.py", "tests/jobs/test_check_cause.py",
    "tests/gui/test_chart_glitches.py", "tests/unit/test_incomplete.py", "tests/jobs/test_run.py",
    "tests/unit/test_diff.py",
]


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable


@pytest.fixture(scope="session")
def archive_factory(tmp_path_factory: pytest.TempPathFactory) -> ArchiveFactory:
    """Export a tiny model (or save a program) as a real archive, once per session:
    `archive_factory.export("mine/relu", Model(), (torch.randn(2),))`."""
    return ArchiveFactory(tmp_path_factory.mktemp("archives"))


def _small_model() -> object:
    import torch

    class Small(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)
            self.register_buffer("scale", torch.ones(3))

        def forward(self, x: torch.Tensor, y: torch.Tensor):
            z = self.lin(x) * self.scale
            positions = torch.arange(x.shape[0], device="cpu")
            values, index = torch.max(z, dim=1)
            return z.relu(), torch.cat([z, y], 0).sum(), positions, values, index

    batch = torch.export.Dim("batch", min=2, max=64)
    return torch.export.export(
        Small(), (torch.randn(5, 4), torch.randn(2, 3)),
        dynamic_shapes={"x": {0: batch}, "y": None},
    )


@pytest.fixture(scope="session")
def small_archive(archive_factory: ArchiveFactory) -> Path:
    """A real one-program archive: a Linear, a buffer, a dynamic batch dim,
    a baked `device='cpu'` arange and a multi-output op."""
    return archive_factory.save("small", _small_model)


@pytest.fixture(scope="session")
def aoti_packages() -> dict[str, Path]:
    """Real AOTInductor packages of one tiny model, compiled here on CPU (a compile
    costs tens of seconds: made once per torch version and version of this function,
    in the suite's disk cache, tests/export_cache.py) for tests/unit/test_aoti.py and
    tests/gui/test_compiled_view.py, packaged each way torch does:
    "only" `package_aoti` (compiled code only, from `aot_compile`'s files),
    "compiled" `aoti_compile_and_package` (the same, through torch's one-call API),
    "both" `package_pt2(exported_programs=..., aoti_files=...)` (code + program)."""
    names = {"only": "compiled.pt2", "compiled": "compiled_api.pt2", "both": "with_program.pt2"}
    folder = cached_dir("aoti", source_key(extra=inspect.getsource(_compile_aoti)), _compile_aoti)
    return {k: folder / v for k, v in names.items()}


def _compile_aoti(out: Path) -> None:
    import torch
    from torch._inductor.package import package_aoti
    from torch.export.pt2_archive._package import package_pt2

    class Small(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.lin(x)) * 2

    example = (torch.randn(2, 4),)
    ep = torch.export.export(Small(), example)
    only, compiled, both = out / "compiled.pt2", out / "compiled_api.pt2", out / "with_program.pt2"
    torch._inductor.aoti_compile_and_package(ep, package_path=str(compiled))
    files = torch._inductor.aot_compile(ep.module(), example,
                                        options={"aot_inductor.package": True})
    package_aoti(str(only), {"model": files})
    package_pt2(str(both), exported_programs={"model": ep}, aoti_files={"model": files})
