"""Hostile AOTInductor packages: compiled-only `.pt2` files (no program) whose
metadata, sources and libraries are broken or malicious.

Same contract as test_contract.py: `info`, `audit`, `weights` and `report` as real
child processes read each one (exit 0, `audit` 0/1), `list` refuses it with one
`error:` line naming AOTInductor (compiled code only: no program), never run the library
(the marker stays absent), print no terminal controls, stay within time and
memory; the same file goes through the core API in-process.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from child import run_inspector
from exercise import exercise
from hostile_corpus import OK, Case, shared_library
from test_contract import COMMANDS, WALL_KILL_S, _argv, _check_child

from inspector.core.aoti import MAX_KERNELS, compiled_models, kernels
from inspector.core.archive import open_archive

MODEL = "data/aotinductor/model/"
_META = (b'{"AOTI_DEVICE_KEY": "cpu", "AOTI_PLATFORM": "linux", "AOTI_MACHINE": "x86_64", '
         b'"AOTI_CPU_ISA": "AVX2", "AOTI_COMPUTE_CAPABILITY": ""}')
_COMMENT = b"    // Topologically Sorted Source Nodes: [a], Original ATen: [aten.a]\n    k(x);\n"


def _package(path: Path, files: list[tuple[str, bytes]], *, bomb: tuple[str, int] | None = None) -> Path:
    """The layout torch's package_aoti writes: pt2 metadata + data/aotinductor/."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for rel, data in [*files, ("archive_format", b"pt2"), ("archive_version", b"0"),
                          ("byteorder", b"little"), (".data/version", b"1")]:
            zf.writestr(f"pkg/{rel}", data)
        if bomb:
            rel, size = bomb
            info = zipfile.ZipInfo(f"pkg/{rel}")
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, b"// " + b"x" * size)
    return path


Build = Callable[[Path, Path], Path]  # (marker, workdir) -> file
CASES: list[tuple[Case, Build]] = []


def case(name: str):
    """A package every command reads (exit 0, `audit` 0/1) except `list`, which refuses
    it with one line: compiled code only, no program to list."""
    def register(fn: Build) -> Build:
        CASES.append((Case(name, "aoti", OK, lambda *_: b"", match="aotinductor",
                           refused_by=("list",)), fn))
        return fn
    return register


@case("aoti-only-library-runs-nothing")
def _(marker: Path, work: Path) -> Path:
    return _package(work / "p.pt2", [(MODEL + "m.wrapper.so", shared_library(marker, work)),
                                     (MODEL + "m.wrapper_metadata.json", _META),
                                     (MODEL + "m.wrapper.cpp", _COMMENT)])


@case("aoti-metadata-not-json")
def _(marker: Path, work: Path) -> Path:
    return _package(work / "p.pt2", [(MODEL + "m.wrapper_metadata.json", b"{not json"),
                                     (MODEL + "m.wrapper.cpp", b"")])


@case("aoti-metadata-wrong-types")
def _(marker: Path, work: Path) -> Path:
    return _package(work / "p.pt2", [(MODEL + "a_metadata.json", b"[1, 2]"),
                                     (MODEL + "b_metadata.json",
                                      b'{"AOTI_DEVICE_KEY": 7, "AOTI_PLATFORM": null}')])


@case("aoti-metadata-terminal-controls")
def _(marker: Path, work: Path) -> Path:
    evil = '"\\u001b]0;pwned\\u0007\\u001b[2J"'.encode()
    meta = b'{"AOTI_DEVICE_KEY": ' + evil + b', "AOTI_CPU_ISA": ' + evil + b"}"
    name = "data/aotinductor/\x1b[31mred/"
    return _package(work / "p.pt2", [(MODEL + "m_metadata.json", meta),
                                     (name + "x.wrapper.cpp", _COMMENT.replace(b"[a]", evil)),
                                     (name + "x_metadata.json", meta)])


@case("aoti-metadata-bomb")
def _(marker: Path, work: Path) -> Path:
    return _package(work / "p.pt2", [(MODEL + "m.wrapper.cpp", _COMMENT)],
                    bomb=(MODEL + "m_metadata.json", 200 * 1024 * 1024))


@case("aoti-wrapper-bomb")
def _(marker: Path, work: Path) -> Path:
    return _package(work / "p.pt2", [(MODEL + "m_metadata.json", _META)],
                    bomb=(MODEL + "m.wrapper.cpp", 300 * 1024 * 1024))


@case("aoti-wrapper-many-comments")
def _(marker: Path, work: Path) -> Path:
    # 150,000 commented calls: the kernel list stops at its limit
    return _package(work / "p.pt2", [(MODEL + "m_metadata.json", _META),
                                     (MODEL + "m.wrapper.cpp", _COMMENT * 150_000)])


@case("aoti-wrapper-invalid-utf8")
def _(marker: Path, work: Path) -> Path:
    return _package(work / "p.pt2", [(MODEL + "m.wrapper.cpp", b"\xff\xfe" + _COMMENT + b"\x80"),
                                     (MODEL + "m.kernel.cpp", b'extern "C" void \xff(')])


@case("aoti-folder-without-model")
def _(marker: Path, work: Path) -> Path:
    return _package(work / "p.pt2", [("data/aotinductor/loose.so", shared_library(marker, work))])


@pytest.mark.parametrize("entry", CASES, ids=[c.name for c, _ in CASES])
def test_cli_contract(entry: tuple[Case, Build], tmp_path: Path) -> None:
    case_, build = entry
    marker = tmp_path / "MARKER"
    path = build(marker, tmp_path)
    for command in COMMANDS:
        res = run_inspector(_argv(command, path, tmp_path), timeout=WALL_KILL_S, cwd=tmp_path)
        _check_child(case_, res, marker)  # OK, and `list` the one clear refusal
        assert not marker.exists()


@pytest.mark.parametrize("entry", CASES, ids=[c.name for c, _ in CASES])
def test_core_contract(entry: tuple[Case, Build], tmp_path: Path) -> None:
    case_, build = entry
    marker = tmp_path / "MARKER"
    path = build(marker, tmp_path)
    archive = exercise(path)  # raises only InspectorError; anything else fails the test
    assert not marker.exists()
    assert all(r.risk for r in archive.records if r.path.endswith(".so"))
    with open_archive(path) as opened:
        for model in compiled_models(opened):
            assert len(kernels(opened, model)) <= MAX_KERNELS
            for value in (model.device, model.platform, model.machine, model.cpu_isa):
                assert isinstance(value, str) and len(value) <= 200


def test_limits_are_named(tmp_path: Path) -> None:
    """A bomb in a source or the metadata is refused by name, the rest still shown."""
    builds = dict((c.name, b) for c, b in CASES)
    for name, rel in (("aoti-wrapper-bomb", "m.wrapper.cpp"), ("aoti-metadata-bomb", "m_metadata.json")):
        path = builds[name](tmp_path / "MARKER", tmp_path)
        with open_archive(path) as archive:
            (model,) = compiled_models(archive)
            kernels(archive, model)
        assert any(rel in p and "limit" in p for p in model.problems), model.problems
    path = builds["aoti-wrapper-many-comments"](tmp_path / "MARKER", tmp_path)
    with open_archive(path) as archive:
        (model,) = compiled_models(archive)
        assert len(kernels(archive, model)) == MAX_KERNELS
