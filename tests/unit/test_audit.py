"""The audit on real exports: device literals, weights, constants, dims, portability."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from archive_factory import ArchiveFactory
from audit_models import (
    cond_archive,
    device_model_archive,
    torch_programs,
    toy_archive,
    two_program_archive,
)

from inspector.cli import main
from inspector.core import audit
from inspector.core.archive import open_archive
from inspector.core.audit import Finding, audit_archive, audit_program
from inspector.core.device_names import DeviceNameError, parse_device
from inspector.core.listing import render_listing
from inspector.core.program import Device
from inspector.core.retarget import retarget

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo" / "toy-tiny.pt2"


@pytest.fixture(scope="session")
def root(archive_factory: ArchiveFactory) -> Path:
    return archive_factory.root


@pytest.fixture(scope="session")
def devices_pt2(root: Path) -> Path:
    return device_model_archive(root)


@pytest.fixture(scope="session")
def toy_pt2(root: Path) -> Path:
    return toy_archive(root)


def _findings(path: Path, **kw) -> list[Finding]:
    with open_archive(path) as archive:
        listings = {n: render_listing(archive.program(n)) for n in archive.program_names}
        return audit_archive(archive, listings=listings, **kw)


def _literals(findings: list[Finding], program: str | None = None) -> list[Finding]:
    return [f for f in findings if f.rule == audit.DEVICE_LITERAL
            and (program is None or f.program == program)]


# --- device literals ------------------------------------------------------------

def test_one_finding_per_device_literal_torch_prints(devices_pt2: Path) -> None:
    text = torch_programs(devices_pt2)["model"].graph_module.print_readable(print_output=False)
    expected = text.count("device(type='cpu')")
    assert expected >= 5  # arange, zeros, full, _assert_tensor_metadata, to
    found = _literals(_findings(devices_pt2))
    assert len(found) == expected
    assert {f.group for f in found} == {"cpu"}
    assert all(f.severity == audit.WARNING for f in found)  # no target: warning


def test_literals_point_at_listing_lines_and_user_source(devices_pt2: Path) -> None:
    with open_archive(devices_pt2) as archive:
        listing = render_listing(archive.program("model"))
        found = _literals(audit_program(archive.program("model"), listing=listing))
    by_node = {f.node: f for f in found}
    assert "arange" in by_node and "zeros" in by_node and "full" in by_node
    for f in found:
        assert f.line is not None
        assert f"{f.node}" in listing.lines[f.line]
        assert "device(type='cpu')" in listing.lines[f.line]
        assert f.source and f.source.startswith(str(REPO / "tests" / "unit" / "audit_models.py"))
    assert "creates its result on cpu" in by_node["arange"].message
    assert by_node["arange"].fix and "retarget" in by_node["arange"].fix


def test_target_makes_mismatches_errors(devices_pt2: Path) -> None:
    on_cuda = _literals(_findings(devices_pt2, target=parse_device("cuda")))
    assert on_cuda and all(f.severity == audit.ERROR for f in on_cuda)
    assert "Expected all tensors to be on the same device" in on_cuda[0].message
    # literals on the named target are fine for it: info, so `audit --target`
    # passes on a retargeted archive; without a target they stay warnings
    on_cpu = _literals(_findings(devices_pt2, target=parse_device("cpu")))
    assert on_cpu and all(f.severity == audit.INFO for f in on_cpu)
    untargeted = _literals(_findings(devices_pt2))
    assert untargeted and all(f.severity == audit.WARNING for f in untargeted)


def test_toy_decoder_literals_match_torch_and_vanish_after_retarget(
        toy_pt2: Path, tmp_path: Path) -> None:
    programs = torch_programs(toy_pt2)
    expected = programs["decoder"].graph_module.print_readable(
        print_output=False).count("device(type='cpu')")
    assert expected >= 1
    found = _literals(_findings(toy_pt2, target=parse_device("cuda")), "decoder")
    assert len(found) == expected
    assert all(f.severity == audit.ERROR and f.group == "cpu" for f in found)
    assert {f.node.rstrip("_0123456789") for f in found} >= {"arange", "to"}

    out = tmp_path / "toy-cuda.pt2"
    result = retarget(toy_pt2, out, "cuda")
    assert {p.program: p.literals for p in result.programs}["decoder"] == len(found)
    after = _literals(_findings(out, target=parse_device("cuda")))
    assert not [f for f in after if f.group == "cpu" or f.severity == audit.ERROR]


def test_toy_encoder_needs_transformers(toy_pt2: Path) -> None:
    port = [f for f in _findings(toy_pt2) if f.rule == audit.PORTABILITY]
    enc = [f for f in port if f.program == "encoder" and f.group == "transformers"]
    assert len(enc) == 1
    assert "transformers.modeling_outputs.BaseModelOutputWithPooling" in enc[0].message
    assert "import transformers" in (enc[0].fix or "")
    assert not [f for f in port if f.program == "decoder"]  # the wrapper returns a tensor


@pytest.mark.skipif(not DEMO.exists(), reason="demo archive not built in this checkout")
def test_demo_archive() -> None:
    findings = _findings(DEMO)
    assert [f for f in findings if f.rule == audit.PORTABILITY and f.program == "encoder"
            and f.group == "transformers"]
    assert _literals(findings, "decoder")


# --- weights, constants, dims -----------------------------------------------------

def test_weights_and_lifted_constants(devices_pt2: Path) -> None:
    found = _findings(devices_pt2)
    weights = [f for f in found if f.rule == audit.WEIGHT_DEVICE]
    assert {f.group for f in weights} == {"cpu"}
    assert any("2 parameters" in f.message for f in weights)
    assert any("1 buffers" in f.message for f in weights)
    const = [f for f in found if f.rule == audit.LIFTED_CONSTANT]
    assert len(const) == 1
    assert "table" in const[0].message and "f32[4]" in const[0].message
    assert "16 B" in const[0].message
    on_cuda = [f for f in _findings(devices_pt2, target=parse_device("cuda"))
               if f.rule == audit.WEIGHT_DEVICE]
    assert all(f.severity == audit.WARNING for f in on_cuda)


def test_specialized_dims(toy_pt2: Path) -> None:
    dims = [f for f in _findings(toy_pt2) if f.rule == audit.SPECIALIZED_DIM]
    static = {f.node: f for f in dims if f.node}
    assert "pixel_values" in static and "1=3, 2=224, 3=224" in static["pixel_values"].message
    assert "encoder_hidden_states" in static
    assert any("size()[0]" in f.message for f in dims if f.group == "guards")


def test_literal_example_size(root: Path) -> None:
    """A size computed from the example (a captured Python int equal to the dynamic
    dim's example value). (min == max ranges: see the hand-made test below; torch
    refuses such a Dim, but its solver can still pin one.)"""
    import torch

    class Pinned(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.sum() + torch.zeros(7, 2).sum()

    path = ArchiveFactory(root).export("audit/pinned", Pinned(), (torch.randn(7, 2),),
                                       dynamic_shapes=({0: torch.export.Dim("b", min=2, max=9)},))
    dims = [f for f in _findings(path) if f.rule == audit.SPECIALIZED_DIM]
    literal = [f for f in dims if f.node and "example size" in f.message]
    assert literal and literal[0].severity == audit.WARNING
    assert "zeros" in literal[0].message


def test_window_partition_coincidence(root: Path) -> None:
    """torchvision's swin_t, in small: the shifted-window attention mask (static
    14 x 14, padded) is viewed as [14 // 7, 7, 14 // 7, 7] while the dynamic
    batch's example is 2. One finding for the view (not one per 2), and info:
    it only reshapes a static tensor. A zeros(2, ...) beside it is a warning."""
    import torch

    class Windows(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, h, w, c = x.shape  # [s77, 14, 14, 8]
            windows = x.view(b, h // 7, 7, w // 7, 7, c).permute(0, 1, 3, 2, 4, 5)
            mask = x.new_zeros((h, w))
            mask[7:, :] = 1.0
            mask = mask.view(h // 7, 7, w // 7, 7).permute(0, 2, 1, 3).reshape(4, 49)
            extra = torch.zeros(2, 8)  # a captured batch-sized constant: suspicious
            return windows.sum() + mask.sum() + extra.sum()

    path = ArchiveFactory(root).export("audit/window", Windows(), (torch.randn(2, 14, 14, 8),),
                                       dynamic_shapes=({0: torch.export.Dim("batch")},))
    with open_archive(path) as archive:
        program = archive.program("model")
        listing = render_listing(program)
        findings = audit.audit_archive(archive, listings={"model": listing})
    literal = [f for f in findings if f.rule == audit.SPECIALIZED_DIM and f.node
               and "example size" in f.message]
    by_node = {f.node: f for f in literal}
    assert len(by_node) == len(literal), "a node is reported once"
    views = [f for f in literal if f.message.startswith("view has size containing 2")]
    assert len(views) == 1 and views[0].severity == audit.INFO
    assert "coincidence" in views[0].message
    node = next(n for n in program.all_nodes() if n.name == views[0].node)
    assert [v for inp in node.inputs if inp.name == "size" for v in inp.arg.value].count(2) == 2
    zeros = [f for f in literal if f.message.startswith("zeros has size")]
    assert len(zeros) == 1 and zeros[0].severity == audit.WARNING


def test_hand_made_findings_on_a_program(devices_pt2: Path) -> None:
    """Custom op namespaces, newer schema, fixed ranges: edited copies of real JSON."""
    from inspector.core.program import parse_program

    with open_archive(devices_pt2) as archive:
        doc = archive.program_json("model")
    doc["schema_version"]["major"] = 99
    doc["graph_module"]["graph"]["nodes"][1]["target"] = "torch.ops.mylib.fancy.default"
    sym = next(iter(doc["range_constraints"]))
    doc["range_constraints"][sym] = {"min_val": 3, "max_val": 3}
    found = audit_program(parse_program(doc, "model"))
    groups = {(f.rule, f.group): f for f in found}
    assert groups[(audit.PORTABILITY, "schema")].severity == audit.WARNING
    assert "mylib" in groups[(audit.PORTABILITY, "mylib")].message
    assert "fixed it to 3" in groups[(audit.SPECIALIZED_DIM, sym)].message


# --- clean programs -------------------------------------------------------------

def test_cond_program_audits_cleanly(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = cond_archive(root)
    found = _findings(path)
    assert not [f for f in found if f.severity != audit.INFO]
    assert main(["audit", str(path)]) == 0
    assert "nothing found" in capsys.readouterr().out


def test_two_program_archive(root: Path) -> None:
    path = two_program_archive(root)
    found = _findings(path)
    assert {f.program for f in found} >= {"first", "second"}
    assert not [f for f in found if f.program == "first" and f.severity != audit.INFO]
    assert len(_literals(found, "second")) == 1
    only_first = _findings(path, programs=["first"])
    assert {f.program for f in only_first if f.program} == {"first"}


# --- CLI ------------------------------------------------------------------------

def test_cli_json_round_trips(devices_pt2: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", str(devices_pt2), "--json", "--target", "cuda"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and data
    keys = {"rule", "severity", "program", "node", "line", "message", "source", "fix"}
    assert all(keys <= set(d) for d in data)
    back = [Finding.from_dict(d) for d in data]
    assert [f.as_dict() for f in back] == data
    assert back == _findings(devices_pt2, target=parse_device("cuda"))
    with open_archive(devices_pt2) as archive:
        lines = render_listing(archive.program("model")).lines
    for d in data:
        if d["node"] and d["line"] is not None:
            assert d["node"] in lines[d["line"] - 1]  # JSON lines are 1-based


def test_cli_exit_codes(devices_pt2: Path, tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    f = str(devices_pt2)
    assert main(["audit", f]) == 1  # warnings at the default --fail-on warning
    assert main(["audit", f, "--fail-on", "error"]) == 0
    assert main(["audit", f, "--fail-on", "error", "--target", "cuda:0"]) == 1
    assert main(["audit", f, "--rule", "risky-record", "lifted-constant"]) == 0
    assert main(["audit", f, "--rule", "risky-record", "--fail-on", "info"]) == 1
    capsys.readouterr()
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip")
    assert main(["audit", str(bad)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert main(["audit", f, "--rule", "nonsense"]) == 2
    assert "unknown audit rule" in capsys.readouterr().err
    assert main(["audit", f, "--target", "gpu"]) == 2
    assert "unknown type 'gpu'" in capsys.readouterr().err


def test_cli_report_groups_by_rule(devices_pt2: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["audit", str(devices_pt2), "--target", "cuda"])
    out = capsys.readouterr().out
    assert out.index("device-literal:") < out.index("weight-device:") < out.index("risky-record:")
    assert "[model] cpu:" in out
    assert "line " in out and "audit_models.py:" in out
    assert "fix: pt2-inspector retarget FILE --device cuda" in out


def test_parse_device() -> None:
    assert parse_device("cuda:1") == Device("cuda", 1)
    assert parse_device(" CPU ") == Device("cpu")
    assert parse_device("meta") == Device("meta")
    for bad in ("", "cuda:", "cuda1", "gpu", "cuda:-1", "cpu:3", "cuda:0:1"):
        with pytest.raises(DeviceNameError):
            parse_device(bad)


def test_counts_per_rule(devices_pt2: Path) -> None:
    table = audit.counts(_findings(devices_pt2, target=parse_device("cuda")))
    assert set(table) == set(audit.RULES)
    assert table[audit.DEVICE_LITERAL][audit.ERROR] >= 5
    assert table[audit.PORTABILITY] == {"error": 0, "warning": 0, "info": 0}
