"""Retarget, the parts test_retarget.py leaves open (issue 28, mutation testing):
the dtype path judged by torch.export.load, the counts and reports judged by the
archive's JSON read with json and zipfile directly, zip attributes kept."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from audit_models import devices_pt2, serialized_devices, two_pt2  # noqa: F401 (fixtures)

from inspector.core.retarget import (
    ProgramChange,
    RetargetError,
    RetargetResult,
    retarget,
    rewrite_devices,
)

_CHUNK = 4 * 1024 * 1024  # the copy's chunk size: progress is reported per full chunk




def _json_devices(path: Path) -> dict[str, list[dict]]:
    with zipfile.ZipFile(path) as z:
        return {n: serialized_devices(json.loads(z.read(n))) for n in z.namelist() if n.endswith(".json")}


def test_nothing_to_do_is_refused(devices_pt2: Path, tmp_path: Path) -> None:
    with pytest.raises(RetargetError, match="^nothing to retarget"):
        retarget(devices_pt2, tmp_path / "x.pt2", None)
    assert list(tmp_path.iterdir()) == []


def test_dtype_only_converts_weights_as_torch_does(devices_pt2: Path, tmp_path: Path) -> None:
    import torch

    out = tmp_path / "bf16.pt2"
    result = retarget(devices_pt2, out, None, dtype="bf16")
    assert result.device == "" and result.dtype == "bf16"
    assert result.source == devices_pt2 and result.output == out
    assert ("control-flow subgraphs keep their dtype literals; pickled weights keep their "
            "dtype") in result.notes
    (change,) = result.programs
    assert change.literals == change.tensor_meta == change.payloads == change.unchanged == 0
    assert change.from_devices == {}
    assert change.dtype is not None and change.dtype["payloads"] == 4  # 2 params, buffer, constant
    assert set(change.dtype) == {"literals", "kept", "values", "payloads"}
    assert change.dtype["values"] > 0
    # no device moved: the device records are the source's, read with json
    assert _json_devices(out) == _json_devices(devices_pt2)
    before, after = torch.export.load(str(devices_pt2)), torch.export.load(str(out))
    for name, t in before.state_dict.items():
        assert after.state_dict[name].dtype == torch.bfloat16
        assert torch.equal(after.state_dict[name], t.to(torch.bfloat16))
    for name, t in before.constants.items():
        assert after.constants[name].dtype == torch.bfloat16
        assert torch.equal(after.constants[name], t.to(torch.bfloat16))
    d = result.as_dict()
    assert d["dtype"] == "bf16" and d["programs"][0]["dtype"] == change.dtype


def test_device_and_dtype_together(devices_pt2: Path, tmp_path: Path) -> None:
    import torch

    out = tmp_path / "meta16.pt2"
    result = retarget(devices_pt2, out, "meta", dtype="fp16")
    (change,) = result.programs
    assert result.device == "meta" and change.payloads == 4 and change.dtype["payloads"] == 4
    assert all(d["type"] == "meta" for ds in _json_devices(out).values() for d in ds)
    with zipfile.ZipFile(devices_pt2) as a, zipfile.ZipFile(out) as b:
        w = next(n for n in a.namelist() if n.endswith("weights/weight_0"))
        src = torch.frombuffer(bytearray(a.read(w)), dtype=torch.float32)
        assert b.read(w) == src.to(torch.float16).numpy().tobytes()


def test_same_device_counts_every_record_unchanged(devices_pt2: Path, tmp_path: Path) -> None:
    out = tmp_path / "cpu.pt2"
    result = retarget(devices_pt2, out, "cpu")
    (change,) = result.programs
    assert change.literals == change.tensor_meta == change.payloads == 0
    want = _json_devices(devices_pt2)
    assert all(d == {"type": "cpu", "index": None} for ds in want.values() for d in ds)
    assert change.unchanged == sum(len(ds) for ds in want.values())
    with zipfile.ZipFile(devices_pt2) as z:
        kept = [i for i in z.infolist() if not i.filename.endswith(".json")]
        rewritten = [i for i in z.infolist() if i.filename.endswith(".json")
                     and ("/models/" in i.filename or "_config.json" in i.filename)]
    assert result.records_copied == len(kept) + (len(z.infolist()) - len(kept) - len(rewritten))
    assert result.bytes_copied == sum(i.file_size for i in z.infolist() if i not in rewritten)


def test_counts_split_by_where_the_device_is(devices_pt2: Path, tmp_path: Path) -> None:
    out = tmp_path / "cuda.pt2"
    (change,) = retarget(devices_pt2, out, "cuda:0").programs
    with zipfile.ZipFile(devices_pt2) as z:
        names = z.namelist()
        prog = json.loads(z.read(next(n for n in names if "/models/" in n and n.endswith(".json"))))
        configs = [json.loads(z.read(n)) for n in names if n.endswith("_config.json")]
    as_dev = serialized_devices(prog, ("as_device",))
    meta = serialized_devices(prog, ("device",))
    assert change.literals == len(as_dev) and change.tensor_meta == len(meta)
    assert change.payloads == sum(len(serialized_devices(c)) for c in configs) == 4
    assert change.from_devices == {"cpu": len(as_dev)}
    assert {(d["type"], d["index"]) for ds in _json_devices(out).values() for d in ds} == {
        ("cuda", 0)}



def test_rewrite_devices_counts_and_leaves_non_devices() -> None:
    new = {"type": "cuda", "index": 1}
    doc = {"a": [{"device": {"type": "cpu", "index": None}},
                 {"as_device": {"type": "cuda", "index": 1}},
                 {"as_device": {"type": "cuda", "index": 0}},
                 {"device": {"type": "cpu", "extra": 1}},  # not a Device: other keys
                 {"device": {"type": 3}},                   # not a Device: type not a str
                 {"other": {"type": "cpu", "index": None}}]}
    counts, olds = rewrite_devices(doc, new)
    assert dict(counts) == {"device": 1, "unchanged": 1, "as_device": 1}
    assert dict(olds) == {"cuda:0": 1}
    assert doc["a"][0]["device"] == new and doc["a"][0]["device"] is not new
    assert doc["a"][3] == {"device": {"type": "cpu", "extra": 1}}
    assert doc["a"][4] == {"device": {"type": 3}}
    assert doc["a"][5] == {"other": {"type": "cpu", "index": None}}


def test_program_change_and_result_as_dict() -> None:
    c = ProgramChange("p", 1, 2, 3, 4, {"cpu": 1})
    assert c.as_dict() == {"program": "p", "literals": 1, "tensor_meta": 2, "payloads": 3,
                           "unchanged": 4, "from_devices": {"cpu": 1}}
    c.dtype = {"literals": 5}
    assert c.as_dict()["dtype"] == {"literals": 5}
    r = RetargetResult(Path("a.pt2"), Path("b.pt2"), "cuda", [c], 7, 99, 1.23456, ["n"], "fp16")
    assert r.as_dict() == {"source": "a.pt2", "output": "b.pt2", "device": "cuda",
                           "dtype": "fp16", "programs": [c.as_dict()], "records_copied": 7,
                           "bytes_copied": 99, "seconds": 1.235, "notes": ["n"]}


def test_notes_name_the_programs_left(two_pt2: Path, tmp_path: Path) -> None:
    result = retarget(two_pt2, tmp_path / "o.pt2", "cuda", programs=["second", "second"])
    assert [p.program for p in result.programs] == ["second"]
    with zipfile.ZipFile(two_pt2) as z:  # the archive's own sample inputs, read directly
        samples = any("/data/sample_inputs/" in n for n in z.namelist())
    sample_notes = [n for n in result.notes if n.startswith("sample inputs")]
    assert len(sample_notes) == int(samples)
    assert [n for n in result.notes if n not in sample_notes] == [
        "programs left as they were: first"]
    result = retarget(two_pt2, tmp_path / "p.pt2", "cuda")
    assert [n for n in result.notes if not n.startswith("sample inputs")] == []
    assert sorted(p.program for p in result.programs) == ["first", "second"]


def test_zip_attributes_dirs_odd_names_and_progress(devices_pt2: Path, tmp_path: Path) -> None:
    src = tmp_path / "odd.pt2"
    big = bytes(range(256)) * (9 * _CHUNK // 256 + 1000)  # two full chunks and a tail
    with zipfile.ZipFile(devices_pt2) as a, zipfile.ZipFile(src, "w") as b:
        top = a.namelist()[0].split("/")[0]
        for info in a.infolist():
            b.writestr(info, a.read(info))
        d = zipfile.ZipInfo(f"{top}/extra/", date_time=(1999, 1, 2, 3, 4, 6))
        d.external_attr = 0o40755 << 16 | 0x10
        b.writestr(d, b"")
        odd = zipfile.ZipInfo(f"{top}/extra/é-ü.bin", date_time=(1985, 6, 7, 8, 9, 10))
        odd.external_attr = 0o100640 << 16
        odd.comment = b"hello"
        b.writestr(odd, b"x" * 1000)
        b.writestr(zipfile.ZipInfo(f"{top}/extra/big.bin", date_time=(2020, 1, 1, 0, 0, 0)), big)
    out = tmp_path / "out.pt2"
    seen: list[float] = []
    result = retarget(src, out, "cuda", on_progress=seen.append)
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(out) as b:
        ins, outs = a.infolist(), b.infolist()
        assert [i.filename for i in ins] == [i.filename for i in outs]
        for i, o in zip(ins, outs):
            assert (o.date_time, o.external_attr, o.comment, o.compress_type) == (
                i.date_time, i.external_attr, i.comment, i.compress_type), i.filename
            assert o.create_system == i.create_system
            with out.open("rb") as f:
                f.seek(o.header_offset)
                h = f.read(30)
            nlen, elen = int.from_bytes(h[26:28], "little"), int.from_bytes(h[28:30], "little")
            assert (o.header_offset + 30 + nlen + elen) % 64 == 0, i.filename
        assert b.getinfo(f"{top}/extra/").is_dir()
        assert b.read(f"{top}/extra/é-ü.bin") == b"x" * 1000
        assert b.read(f"{top}/extra/big.bin") == big
        replaced = {n for n in a.namelist() if n.endswith(".json")
                    and ("/models/" in n or "_config.json" in n)}
        copied = [i for i in ins if i.filename not in replaced and not i.is_dir()]
    assert result.records_copied == len(copied)
    assert result.bytes_copied == sum(i.file_size for i in copied)
    # hand-worked: a report after each full chunk and after each copied record
    total = sum(i.file_size for i in ins if i.filename not in replaced)
    want, done = [0.0], 0
    for i in copied:
        left = i.file_size
        while left >= _CHUNK:
            done += _CHUNK
            left -= _CHUNK
            want.append(min(0.99, done / total))
        done += left
        want.append(min(0.99, done / total))
    want.append(1.0)
    assert seen == pytest.approx(want)


def test_dates_before_1980_are_clamped(devices_pt2: Path, tmp_path: Path) -> None:
    src = tmp_path / "old.pt2"
    with zipfile.ZipFile(devices_pt2) as a, zipfile.ZipFile(src, "w") as b:
        top = a.namelist()[0].split("/")[0]
        for info in a.infolist():
            b.writestr(info, a.read(info))
        b.writestr(zipfile.ZipInfo(f"{top}/extra/old.bin", date_time=(1980, 1, 1, 0, 0, 0)),
                   b"old")
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = z.getinfo(f"{top}/extra/old.bin")
    # DOS date 0: year 1980 - ... written as year field 0 is 1980; set the year to
    # 1979 the only way a zip can say it, an MS-DOS date with year bits from 0 wrapped:
    # patch both headers' date to 0x0000 then check the ZipInfo reads 1980-00-00
    for off in (info.header_offset + 12,):
        data[off:off + 2] = b"\x00\x00"
    src.write_bytes(bytes(data))
    out = tmp_path / "out.pt2"
    retarget(src, out, "cuda")
    with zipfile.ZipFile(out) as z:
        assert z.getinfo(f"{top}/extra/old.bin").date_time[0] >= 1980
        assert z.read(f"{top}/extra/old.bin") == b"old"
