"""AOTInductor packages (issue 14, item 2): real packages, compiled here on CPU.

One compile (module-scoped: gcc takes ~30 s to minutes on a busy machine),
packaged twice the ways torch does: compiled code only (`package_aoti`, what
`aoti_compile_and_package` writes) and compiled code with its program
(`package_pt2(exported_programs=..., aoti_files=...)`). What the inspector
says about the build is compared with what torch's own package loader reports
(`load_package(...).get_metadata()`, which dlopens the library: tests may,
the inspector never does).
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from inspector.core.aoti import compiled_models, kernel_lines, kernels, parse_kernels
from inspector.core.archive import AOTI_BINARY, open_archive
from inspector.core.audit import PORTABILITY, RISKY_RECORD, audit_archive
from inspector.core.device_names import parse_device
from inspector.core.listing import render_listing


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def packages(aoti_packages: dict[str, Path]) -> dict[str, Path]:
    # compiled once per session in tests/conftest.py, shared with the window's tests
    return {"only": aoti_packages["only"], "both": aoti_packages["both"]}


def _torch_metadata(path: Path) -> dict[str, str]:
    from torch._inductor.package import load_package

    return dict(load_package(str(path), "model").get_metadata())


def test_info_says_what_it_was_built_for(packages: dict[str, Path]) -> None:
    theirs = _torch_metadata(packages["only"])
    proc = cli("info", str(packages["only"]), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["programs"] == []
    (model,) = info["compiled_models"]
    assert model["name"] == "model"
    assert (model["device"], model["platform"], model["machine"], model["cpu_isa"],
            model["compute_capability"]) == (
        theirs["AOTI_DEVICE_KEY"], theirs["AOTI_PLATFORM"], theirs["AOTI_MACHINE"],
        theirs["AOTI_CPU_ISA"], theirs["AOTI_COMPUTE_CAPABILITY"])
    assert model["device"] == "cpu" and model["machine"] == platform.machine()
    assert model["program"] is None
    with zipfile.ZipFile(packages["only"]) as zf:
        names = sorted(n.split("/", 1)[1] for n in zf.namelist() if "/data/aotinductor/" in n)
    assert sorted(f["path"] for f in model["files"]) == names
    native = [f for f in model["files"] if f["native_code"]]
    assert [f["path"].endswith(".wrapper.so") for f in native] == [True]
    assert native[0]["risk"] and "never loaded" in native[0]["what"]
    assert all(not f["native_code"] for f in model["files"] if f["path"].endswith(".cpp"))

    text = cli("info", str(packages["only"])).stdout
    assert f"compiled model model (AOTInductor): built for cpu ({theirs['AOTI_PLATFORM']}" in text
    assert "program: not in the package" in text
    assert any(line.startswith("  ! data/aotinductor/model/") and line.rstrip().endswith(
        "native code (never loaded by pt2-inspector)") for line in text.splitlines())


def test_kernels_link_to_the_listing(packages: dict[str, Path]) -> None:
    with open_archive(packages["both"]) as archive:
        (model,) = compiled_models(archive)
        found = kernels(archive, model)
        program = archive.program("model")
        wrapper = archive.read_text(model.wrappers[0], 64 * 1024 * 1024)
    listing = render_listing(program)
    node_names = {n.name for n in program.all_nodes()}
    commented = [k for k in found if k.source_nodes]
    assert commented, [k.name for k in found]
    # every comment of the wrapper becomes one kernel, naming real program nodes
    assert len(commented) == wrapper.count("// Topologically Sorted Source Nodes:")
    for k in commented:
        assert set(k.source_nodes) <= node_names, k
        assert all(op.startswith("aten.") for op in k.aten_ops)
        lines = kernel_lines(k, listing)
        assert set(lines) == set(k.source_nodes)
        for node, line in lines.items():
            assert listing.lines[line].strip().startswith(f"{node}:")
        assert wrapper.splitlines()[k.line - 1].strip().find(k.name) >= 0
    # the fused CPU kernels are defined in the kernel source, named once each
    names = [k.name for k in found]
    assert len(names) == len(set(names))
    assert any(n.startswith("cpp_fused") for n in names)


def test_parse_kernels_of_a_gpu_wrapper() -> None:
    """The call after each comment, as a CUDA build writes it."""
    text = "\n".join([
        "    // Topologically Sorted Source Nodes: [relu, mul], Original ATen: [aten.relu, aten.mul]",
        "    static constexpr int64_t int_array_0[] = {2L, 3L};",
        "    call_triton_poi_fused_mul_relu_0(buf1, 6, stream, kernels, this->cubin_dir_);",
        "    // Topologically Sorted Source Nodes: [linear], Original ATen: [aten.addmm]",
        "    AOTI_TORCH_ERROR_CODE_CHECK(aoti_torch_cuda_addmm_out(buf0, arg2_1, w, 1L, 1L));",
        "    // Topologically Sorted Source Nodes: [], Original ATen: []",
    ])
    got = parse_kernels(text, "w.cpp")
    assert [(k.name, k.line, k.source_nodes, k.aten_ops) for k in got] == [
        ("call_triton_poi_fused_mul_relu_0", 3, ("relu", "mul"), ("aten.relu", "aten.mul")),
        ("aoti_torch_cuda_addmm_out", 5, ("linear",), ("aten.addmm",)),
        ("?", 6, (), ()),
    ]


def test_audit_fits_a_compiled_package(packages: dict[str, Path]) -> None:
    for key in ("only", "both"):
        with open_archive(packages[key]) as archive:
            plain = audit_archive(archive)
            on_cuda = audit_archive(archive, target=parse_device("cuda"))
            on_cpu = audit_archive(archive, target=parse_device("cpu"))
        (compiled,) = [f for f in plain if f.rule == PORTABILITY and f.group == "aotinductor"]
        assert compiled.severity == "warning"
        assert "built for cpu" in compiled.message and "GPU" not in compiled.message
        assert platform.machine() in compiled.message
        (risky,) = [f for f in plain if f.rule == RISKY_RECORD and f.group == AOTI_BINARY]
        assert "torch.export.save" not in (risky.fix or "")
        assert "aoti_load_package" in risky.message
        assert [f.severity for f in on_cuda if f.group == "aotinductor"] == ["error"]
        assert [f.severity for f in on_cpu if f.group == "aotinductor"] == ["info"]


def test_retarget_refuses_with_the_reason(packages: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out.pt2"
    for key in ("only", "both"):
        proc = cli("retarget", str(packages[key]), "--device", "cuda", "-o", str(out))
        assert proc.returncode == 2
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("error: cannot retarget") and "AOTInductor package" in line
        assert "compile it again for cuda" in line
        assert not out.exists()


def test_list(packages: dict[str, Path]) -> None:
    proc = cli("list", str(packages["only"]))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "AOTInductor" in proc.stderr
    import torch

    from fidelity_cases import normalize

    proc = cli("list", str(packages["both"]), "--program", "model")
    assert proc.returncode == 0, proc.stderr
    theirs = torch.export.load(str(packages["both"])).graph_module.print_readable(
        print_output=False)
    assert normalize(proc.stdout) == normalize(theirs)
