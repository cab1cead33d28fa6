"""Retarget is equivalent to torch's own move_to_device_pass (torch runs here, in tests).

Where torch can run the pass on this machine (to `meta`; `cpu` is the identity for
a CPU export), the retargeted archive must load with torch and print the same
readable graph, with the same device on every node value and every weight, as
`move_to_device_pass` applied to the original. A retarget to `cuda` (which this
machine cannot load) and back to `cpu` must give back the original program and
the very same weights.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

from archive_factory import ArchiveFactory  # noqa: E402
from audit_models import (  # noqa: E402
    cond_archive,
    device_model_archive,
    readable,
    torch_programs,
    toy_archive,
    two_program_archive,
)

from inspector.core.retarget import retarget  # noqa: E402

BUILDERS = {
    "devices": device_model_archive,
    "cond": cond_archive,
    "two": two_program_archive,
    "toy": toy_archive,
}


@pytest.fixture(scope="session", params=sorted(BUILDERS))
def archive(request: pytest.FixtureRequest, archive_factory: ArchiveFactory) -> Path:
    return BUILDERS[request.param](archive_factory.root)


def _node_devices(ep) -> list[tuple[str, str]]:
    import torch

    out = []
    for module in ep.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                val = node.meta.get("val")
                if isinstance(val, torch.Tensor):
                    out.append((node.name, str(val.device)))
    return out


def _tensor_devices(ep) -> dict[str, str]:
    import torch

    devices = {k: str(v.device) for k, v in ep.state_dict.items()}
    devices.update({k: str(v.device) for k, v in ep.constants.items()
                    if isinstance(v, torch.Tensor)})
    return devices


# What the original archive loads as, per archive: (readable, node devices, state
# dict) per program. Loading the toy model is slow, so each original loads once;
# the facts are taken before move_to_device_pass (which edits the program in place).
_ORIGINAL: dict[Path, dict[str, tuple]] = {}


def _original(archive: Path, programs: dict | None = None) -> dict[str, tuple]:
    if archive not in _ORIGINAL:
        programs = programs or torch_programs(archive)
        _ORIGINAL[archive] = {
            name: (readable(ep), _node_devices(ep), dict(ep.state_dict))
            for name, ep in programs.items()}
    return _ORIGINAL[archive]


def test_matches_move_to_device_pass(archive: Path, tmp_path: Path) -> None:
    from torch.export.passes import move_to_device_pass

    out = tmp_path / "meta.pt2"
    retarget(archive, out, "meta")
    ours = torch_programs(out)
    originals = torch_programs(archive)
    _original(archive, originals)
    assert sorted(ours) == sorted(originals)
    for name, original in originals.items():
        moved = move_to_device_pass(original, "meta")
        assert readable(ours[name]) == readable(moved), name
        assert _node_devices(ours[name]) == _node_devices(moved), name
        assert _tensor_devices(ours[name]) == _tensor_devices(moved), name
        if "device(type='cpu')" in original.graph_module.print_readable(print_output=False):
            assert "'cpu'" not in readable(ours[name])


def test_cuda_and_back_gives_the_original(archive: Path, tmp_path: Path) -> None:
    import torch

    cuda = tmp_path / "cuda.pt2"
    back = tmp_path / "back.pt2"
    retarget(archive, cuda, "cuda")  # no CUDA here: the archive is only rewritten
    retarget(cuda, back, "cpu")
    again = torch_programs(back)
    for name, (text, node_devices, state_dict) in _original(archive).items():
        assert readable(again[name]) == text, name
        assert _node_devices(again[name]) == node_devices, name
        for key, value in state_dict.items():
            assert torch.equal(again[name].state_dict[key], value), key
