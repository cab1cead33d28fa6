"""Retarget without torch: devices rewritten, every other byte kept, atomic writes."""

from __future__ import annotations

import json
import os
import struct
import zipfile
from pathlib import Path

import pytest
from audit_models import devices_pt2, serialized_devices, two_pt2  # noqa: F401 (fixtures)

from inspector.cli import main
from inspector.core import audit
from inspector.core.archive import ArchiveError, open_archive
from inspector.core.audit import audit_archive
from inspector.core.device_names import DeviceNameError, parse_device
from inspector.core.retarget import (
    RetargetCancelled,
    RetargetError,
    retarget,
    rewrite_devices,
)




def _data_offset(path: Path, info: zipfile.ZipInfo) -> int:
    with path.open("rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _raw(path: Path, info: zipfile.ZipInfo) -> bytes:
    with path.open("rb") as f:
        f.seek(_data_offset(path, info))
        return f.read(info.compress_size)


def _listdir(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_rewrites_every_device_and_keeps_every_other_byte(devices_pt2: Path,
                                                          tmp_path: Path) -> None:
    out = tmp_path / "meta.pt2"
    seen: list[float] = []
    result = retarget(devices_pt2, out, "meta", on_progress=seen.append)
    (change,) = result.programs
    assert change.literals >= 5 and change.from_devices == {"cpu": change.literals}
    assert change.tensor_meta > 0 and change.payloads == 4  # 2 params, 1 buffer, 1 constant
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)

    src, dst = zipfile.ZipFile(devices_pt2), zipfile.ZipFile(out)
    assert [i.filename for i in src.infolist()] == [i.filename for i in dst.infolist()]
    rewritten = 0
    for a in src.infolist():
        b = dst.getinfo(a.filename)
        assert _data_offset(out, b) % 64 == 0  # torch's alignment kept
        if a.filename.endswith(".json"):
            old, new = json.loads(src.read(a)), json.loads(dst.read(b))
            if serialized_devices(old):
                rewritten += 1
                assert {d["type"] for d in serialized_devices(new)} == {"meta"}
                assert len(serialized_devices(new)) == len(serialized_devices(old))
            continue
        assert b.compress_type == a.compress_type and b.CRC == a.CRC
        assert _raw(out, b) == _raw(devices_pt2, a)  # raw bytes, not re-encoded
    assert rewritten == 3  # program, weights config, constants config
    with open_archive(out) as archive:
        assert archive.top == open_archive(devices_pt2).top
        findings = audit_archive(archive, target=parse_device("meta"))
    literals = [f for f in findings if f.rule == audit.DEVICE_LITERAL]
    assert len(literals) == change.literals and {f.group for f in literals} == {"meta"}
    assert not [f for f in findings if f.severity == audit.ERROR]


def test_one_program_of_two(two_pt2: Path, tmp_path: Path) -> None:
    out = tmp_path / "second-cuda.pt2"
    result = retarget(two_pt2, out, "cuda:1", programs=["second"])
    assert [p.program for p in result.programs] == ["second"]
    assert result.programs[0].literals == 1
    assert any("first" in n for n in result.notes)
    with zipfile.ZipFile(two_pt2) as a, zipfile.ZipFile(out) as b:
        for info in a.infolist():
            if "first" in info.filename:
                assert a.read(info) == b.read(info.filename)
        top = a.namelist()[0].split("/")[0]
        doc = json.loads(b.read(f"{top}/models/second.json"))
    assert {(d["type"], d["index"]) for d in serialized_devices(doc)} == {("cuda", 1)}


def test_deflated_archive_is_copied_with_same_contents(devices_pt2: Path, tmp_path: Path) -> None:
    deflated = tmp_path / "deflated.pt2"
    with zipfile.ZipFile(devices_pt2) as a, zipfile.ZipFile(deflated, "w") as b:
        for info in a.infolist():
            b.writestr(info.filename, a.read(info), compress_type=zipfile.ZIP_DEFLATED)
    out = tmp_path / "out.pt2"
    retarget(deflated, out, "cuda")
    with zipfile.ZipFile(deflated) as a, zipfile.ZipFile(out) as b:
        for info in a.infolist():
            assert b.getinfo(info.filename).compress_type == zipfile.ZIP_DEFLATED
            if not info.filename.endswith(".json"):
                assert a.read(info) == b.read(info.filename)


def test_cancel_writes_nothing_and_keeps_an_existing_output(devices_pt2: Path,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "out.pt2"
    out.write_bytes(b"previous")
    calls = []

    def cancel_on_third() -> bool:
        calls.append(1)
        return len(calls) >= 3

    with pytest.raises(RetargetCancelled):
        retarget(devices_pt2, out, "cuda", should_cancel=cancel_on_third)
    assert out.read_bytes() == b"previous"
    assert _listdir(tmp_path) == {"out.pt2"}


def test_interrupt_leaves_no_partial_file(devices_pt2: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.pt2"

    def interrupt(fraction: float) -> None:
        if fraction > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        retarget(devices_pt2, out, "cuda", on_progress=interrupt)
    assert _listdir(tmp_path) == set()


def test_bad_requests_are_refused_before_writing(devices_pt2: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(DeviceNameError):
        retarget(devices_pt2, tmp_path / "x.pt2", "cuda1")
    with pytest.raises(RetargetError, match="never overwrites its input"):
        retarget(devices_pt2, devices_pt2, "cuda")
    link = tmp_path / "link.pt2"  # a hard link is the same file under another name
    try:
        os.link(devices_pt2, link)
    except OSError:
        pass
    if link.exists():
        with pytest.raises(RetargetError, match="never overwrites its input"):
            retarget(devices_pt2, link, "cuda")
        link.unlink()
    with pytest.raises(RetargetError, match="must end in .pt2"):
        retarget(devices_pt2, tmp_path / "x.zip", "cuda")
    with pytest.raises(RetargetError, match="does not exist"):
        retarget(devices_pt2, tmp_path / "missing" / "x.pt2", "cuda")
    with pytest.raises(ArchiveError, match="no program named 'nope'"):
        retarget(devices_pt2, tmp_path / "x.pt2", "cuda", programs=["nope"])
    not_zip = tmp_path / "bad.pt2"
    not_zip.write_bytes(b"hello")
    with pytest.raises(ArchiveError):
        retarget(not_zip, tmp_path / "x.pt2", "cuda")
    assert _listdir(tmp_path) == {"bad.pt2"}
    assert main(["retarget", str(devices_pt2), "--device", "gpu", "-o",
                 str(tmp_path / "x.pt2")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: device 'gpu'") and err.count("\n") == 1
    assert _listdir(tmp_path) == {"bad.pt2"}


def test_cli_reports_per_program(two_pt2: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cuda.pt2"
    assert main(["retarget", str(two_pt2), "--device", "cuda", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "second: 1 device literal rewritten (were 1 on cpu)" in text
    assert "first: 0 device literals rewritten" in text
    assert text.count("audit of the result: 0 device literals off cuda") == 2
    out2 = tmp_path / "meta.pt2"
    assert main(["retarget", str(out), "--device", "meta", "-o", str(out2), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["remaining_off_target"] == {"first": 0, "second": 0}
    assert {p["program"]: p["from_devices"] for p in doc["programs"]}["second"] == {"cuda": 1}


def test_rewrite_walks_deep_documents_without_recursion() -> None:
    doc: list = []
    inner = doc
    for _ in range(20_000):
        nxt: list = []
        inner.append(nxt)
        inner = nxt
    inner.append({"as_device": {"type": "cpu", "index": None}, "device": "not a device"})
    counts, olds = rewrite_devices(doc, {"type": "cuda", "index": 0})
    assert counts["as_device"] == 1 and olds == {"cpu": 1}
    assert inner[0] == {"as_device": {"type": "cuda", "index": 0}, "device": "not a device"}


def test_corrupt_weight_is_an_archive_error_and_leaves_nothing(devices_pt2: Path,
                                                               tmp_path: Path) -> None:
    bad = tmp_path / "corrupt.pt2"
    data = bytearray(devices_pt2.read_bytes())
    with zipfile.ZipFile(devices_pt2) as z:
        weight = next(i for i in z.infolist() if i.filename.endswith("weights/weight_0"))
    data[_data_offset(devices_pt2, weight)] ^= 0xFF  # the CRC no longer matches
    bad.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match="cannot be copied"):
        retarget(bad, tmp_path / "out.pt2", "cuda")
    assert _listdir(tmp_path) == {"corrupt.pt2"}


def test_zip_bomb_record_is_refused(devices_pt2: Path, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.pt2"
    with zipfile.ZipFile(devices_pt2) as a, zipfile.ZipFile(bomb, "w") as b:
        for info in a.infolist():
            b.writestr(info, a.read(info))
        top = a.namelist()[0].split("/")[0]
        b.writestr(f"{top}/extra/zeros.bin", bytes(64 * 1024 * 1024),
                   compress_type=zipfile.ZIP_DEFLATED)
    with pytest.raises(ArchiveError, match="zip bomb"):
        retarget(bomb, tmp_path / "out.pt2", "cuda")
    assert _listdir(tmp_path) == {"bomb.pt2"}
