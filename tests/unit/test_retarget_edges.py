"""Retarget's refusals, reports and zip details that test_retarget.py and
test_retarget_more.py leave open (issue 28, mutation testing). Each archive is the
session's torch export with records changed or added by zipfile; each answer is
judged by what we wrote into it (read back with json / zipfile / struct) or by
what the OS says (os.strerror), never by retarget's own output alone."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import struct
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from audit_models import devices_pt2, serialized_devices, two_pt2  # noqa: F401 (fixtures)

from inspector.core.archive import ArchiveError
from inspector.core.retarget import RetargetCancelled, RetargetError, retarget, rewrite_devices

CANCELLED = "^retarget cancelled; nothing was written$"


def _top(path: Path) -> str:
    with zipfile.ZipFile(path) as z:
        return z.namelist()[0].split("/")[0]


def _variant(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None] | None = None,
             extra: dict[str, bytes] | None = None) -> Path:
    """`src` record by record (stored, as torch writes); `change(rel, data)` may give
    new data or None (the record is left out); `extra` records are added at the end."""
    top = _top(src)
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w") as b:
        for info in a.infolist():
            data = a.read(info)
            if change is not None:
                data = change(info.filename[len(top) + 1:], data)
                if data is None:
                    continue
            b.writestr(info, data)
        for rel, data in (extra or {}).items():
            b.writestr(zipfile.ZipInfo(f"{top}/{rel}", date_time=(2001, 2, 3, 4, 5, 6)), data)
    return dst


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


# --- refusals -------------------------------------------------------------------

def test_legacy_layout_is_refused_with_the_reason(devices_pt2: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(devices_pt2) as z:
        program = next(z.read(n) for n in z.namelist() if n.endswith("models/model.json"))
    legacy = tmp_path / "legacy.pt2"
    with zipfile.ZipFile(legacy, "w") as z:  # torch <= 2.5's layout (test_archive.py)
        z.writestr("legacy/serialized_exported_program.json", program)
        z.writestr("legacy/serialized_state_dict.pt", b"\x80\x02}q\x00.")
        z.writestr("legacy/version", "1")
    with pytest.raises(RetargetError) as exc:
        retarget(legacy, tmp_path / "out.pt2", "cuda")
    assert str(exc.value) == (
        "legacy.pt2 uses the old torch.export layout (serialized_state_dict.pt): its weights "
        "are a pickle whose devices cannot be rewritten without unpickling; load and re-save "
        "it with torch.export.save first")
    assert _names(tmp_path) == {"legacy.pt2"}


def _metadata(device: str, platform: str, capability: str = "") -> bytes:
    doc = {"AOTI_DEVICE_KEY": device, "AOTI_PLATFORM": platform}
    if capability:
        doc["AOTI_COMPUTE_CAPABILITY"] = capability
    return json.dumps(doc).encode()


def test_compiled_package_is_refused_naming_each_model(devices_pt2: Path, tmp_path: Path) -> None:
    # two compiled models, as aoti_compile_and_package lays them out (metadata + .so)
    extra = {"data/aotinductor/mb/mb_metadata.json": _metadata("cuda", "linux", "90"),
             "data/aotinductor/mb/mb.wrapper.so": b"\x7fELF",
             "data/aotinductor/ma/ma_metadata.json": _metadata("cpu", "linux"),
             "data/aotinductor/ma/ma.wrapper.so": b"\x7fELF"}
    package = _variant(devices_pt2, tmp_path / "package.pt2", extra=extra)
    built = "model ma built for cpu (linux); model mb built for cuda compute capability 90 (linux)"
    for device, dtype, shown in (("cuda:1", None, "cuda:1"), (None, "bf16", "bf16"),
                                 ("meta", "fp16", "meta")):
        with pytest.raises(RetargetError) as exc:
            retarget(package, tmp_path / "out.pt2", device, dtype=dtype)
        assert str(exc.value) == (
            f"cannot retarget package.pt2 (an AOTInductor package: its compiled code, {built}, "
            f"cannot be rewritten for {shown}; compile it again for {shown} with "
            "torch._inductor.aoti_compile_and_package; its program can be retargeted once "
            "saved alone with torch.export.save)")
    # a package with no program of its own: nothing to save alone
    bare = _variant(package, tmp_path / "bare.pt2",
                    change=lambda rel, data: None if rel.startswith("models/") else data)
    with pytest.raises(RetargetError) as exc:
        retarget(bare, tmp_path / "out.pt2", "cuda")
    assert str(exc.value).endswith("with torch._inductor.aoti_compile_and_package)")
    assert _names(tmp_path) == {"package.pt2", "bare.pt2"}


def test_output_suffix_says_why(devices_pt2: Path, tmp_path: Path) -> None:
    with pytest.raises(RetargetError) as exc:
        retarget(devices_pt2, tmp_path / "x.zip", "cuda")
    assert str(exc.value).endswith("must end in .pt2 (torch.export.load expects it)")


# --- notes ----------------------------------------------------------------------

def _pickled(rel: str, data: bytes) -> bytes:
    """Mark every weight and constant of the configs as a pickle (use_pickle)."""
    if not rel.endswith("_config.json"):
        return data
    doc = json.loads(data)
    for meta in doc["config"].values():
        meta["use_pickle"] = True
    return json.dumps(doc).encode()


def test_notes_count_pickled_records_and_loose_binaries(devices_pt2: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(devices_pt2) as z:
        configs = [json.loads(z.read(n)) for n in z.namelist() if n.endswith("_config.json")]
    pickles = sum(len(c["config"]) for c in configs)  # 3 weights + 1 constant
    # a shared library outside any model folder: a binary, but no compiled model
    src = _variant(devices_pt2, tmp_path / "pickled.pt2", change=_pickled,
                   extra={"data/aotinductor/loose.so": b"\x7fELF"})
    result = retarget(src, tmp_path / "out.pt2", "cuda")
    assert result.notes == [
        "sample inputs (data/sample_inputs/*.pt) are pickles and keep their devices: they "
        "are copied unchanged",
        f"{pickles} pickled weight/constant record(s) keep the device inside the pickle",
        "AOTInductor binaries are compiled for one device and are copied unchanged: "
        "recompile them for the target"]
    # only the constants pickled: the count is theirs alone, and no sample inputs
    constants = sum(len(c["config"]) for c in configs if "tensor_0" in json.dumps(c))

    def constants_only(rel: str, data: bytes) -> bytes | None:
        if rel.startswith("data/sample_inputs/"):
            return None
        return _pickled(rel, data) if rel.startswith("data/constants/") else data

    src = _variant(devices_pt2, tmp_path / "constants.pt2", change=constants_only)
    result = retarget(src, tmp_path / "out2.pt2", "cuda")
    assert result.notes == [f"{constants} pickled weight/constant record(s) keep the device "
                            "inside the pickle"]


# --- JSON written back ----------------------------------------------------------

def _deep(levels: int) -> list:
    doc: list = []
    for _ in range(levels - 1):
        doc = [doc]
    return doc


def test_config_deeper_than_orjson_writes_is_written_back(devices_pt2: Path,
                                                          tmp_path: Path) -> None:
    # orjson writes at most 254 levels; the reader takes up to 1024: the json fallback
    rel = "data/weights/model_weights_config.json"

    def deepen(r: str, data: bytes) -> bytes:
        if r != rel:
            return data
        doc = json.loads(data)
        doc["note"], doc["deep"] = "poids é ☃", _deep(300)
        return json.dumps(doc).encode()

    src = _variant(devices_pt2, tmp_path / "deep.pt2", change=deepen)
    out = tmp_path / "out.pt2"
    retarget(src, out, "cuda:0")
    top = _top(src)
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(out) as b:
        before, raw = json.loads(a.read(f"{top}/{rel}")), b.read(f"{top}/{rel}")
    after = json.loads(raw)
    assert after["deep"] == _deep(300) and after["note"] == "poids é ☃"
    assert {(d["type"], d["index"]) for d in serialized_devices(after)} == {("cuda", 0)}
    for meta in before["config"].values():
        meta["tensor_meta"]["device"] = {"type": "cuda", "index": 0}
    assert after == before
    assert "poids é ☃".encode() in raw  # UTF-8 as it was, not \u escapes
    assert b" " not in raw.replace("poids é ☃".encode(), b"")  # compact, as torch's


@pytest.mark.parametrize("which", ["weights", "constants"])
def test_config_too_deep_to_write_back_is_refused(devices_pt2: Path, tmp_path: Path,
                                                  which: str) -> None:
    rel = f"data/{which}/model_{which}_config.json"  # named as the archive stores it

    def deepen(r: str, data: bytes) -> bytes:
        if r != rel:
            return data
        # 1010 levels: under the reader's 1024, past Python's recursion limit (written
        # as text: json.dumps cannot write it either)
        return data.rstrip()[:-1] + b', "deep": ' + b"[" * 1010 + b"]" * 1010 + b"}"

    src = _variant(devices_pt2, tmp_path / "deeper.pt2", change=deepen)
    with pytest.raises(RetargetError, match=f"^record {rel} cannot be written back \\(.+\\)$"):
        retarget(src, tmp_path / "out.pt2", "cuda")
    assert _names(tmp_path) == {"deeper.pt2"}


# --- cancel, errors, timing -------------------------------------------------------

def test_cancel_at_every_poll_says_so_and_writes_nothing(devices_pt2: Path,
                                                         tmp_path: Path) -> None:
    out = tmp_path / "out.pt2"
    polls: list[int] = []
    retarget(devices_pt2, out, "cuda", should_cancel=lambda: polls.append(1) and False)
    out.unlink()
    assert len(polls) > 3  # before writing, per record and per chunk
    for stop_at in range(1, len(polls) + 1):
        calls: list[int] = []

        def cancel() -> bool:
            calls.append(1)
            return len(calls) >= stop_at

        with pytest.raises(RetargetCancelled, match=CANCELLED):
            retarget(devices_pt2, out, "cuda", should_cancel=cancel)
        assert _names(tmp_path) == set(), stop_at


def test_corrupt_record_message_names_the_archive(devices_pt2: Path, tmp_path: Path) -> None:
    bad = tmp_path / "corrupt.pt2"
    data = bytearray(devices_pt2.read_bytes())
    with zipfile.ZipFile(devices_pt2) as z:
        weight = next(i for i in z.infolist() if i.filename.endswith("weights/weight_0"))
    with devices_pt2.open("rb") as f:
        f.seek(weight.header_offset)
        name_len, extra_len = struct.unpack("<HH", f.read(30)[26:30])
    data[weight.header_offset + 30 + name_len + extra_len] ^= 0xFF
    bad.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match=r"^corrupt\.pt2 cannot be copied \(.*CRC.*\)$"):
        retarget(bad, tmp_path / "out.pt2", "cuda")


def test_write_error_says_what_the_os_said(devices_pt2: Path, tmp_path: Path) -> None:
    # a file-size limit makes the output's writes fail with EFBIG (SIGXFSZ ignored)
    out = tmp_path / "out.pt2"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
        with pytest.raises(RetargetError) as exc:
            retarget(devices_pt2, out, "cuda")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    assert str(exc.value) == f"cannot write {str(out)!r} ({os.strerror(errno.EFBIG)})"
    assert _names(tmp_path) == set()


def test_seconds_is_the_time_the_call_took(devices_pt2: Path, tmp_path: Path) -> None:
    before = time.perf_counter()
    result = retarget(devices_pt2, tmp_path / "out.pt2", "cuda")
    took = time.perf_counter() - before
    assert 0 < result.seconds <= took
    assert result.dtype == "" and result.as_dict()["dtype"] == ""  # no --dtype given
    assert result.as_dict()["seconds"] == round(result.seconds, 3)


# --- zip details ------------------------------------------------------------------

def _local_extra(path: Path, info: zipfile.ZipInfo) -> bytes:
    with path.open("rb") as f:
        f.seek(info.header_offset)
        name_len, extra_len = struct.unpack("<HH", f.read(30)[26:30])
        f.seek(name_len, os.SEEK_CUR)
        return f.read(extra_len)


def test_padding_is_torchs_extra_field_and_dirs_stay_empty(devices_pt2: Path,
                                                           tmp_path: Path) -> None:
    src = tmp_path / "dirs.pt2"
    top = _top(devices_pt2)
    with zipfile.ZipFile(devices_pt2) as a, zipfile.ZipFile(src, "w") as b:
        for info in a.infolist():
            b.writestr(info, a.read(info))
        folder = zipfile.ZipInfo(f"{top}/extra/folder/", date_time=(1999, 1, 2, 3, 4, 6))
        folder.external_attr = 0o40755 << 16 | 0x10
        b.writestr(folder, b"")
    out = tmp_path / "out.pt2"
    retarget(src, out, "cuda")
    # torch's own padding, read from the torch-written source: id "FB", then filler bytes
    with zipfile.ZipFile(devices_pt2) as z:
        torch_extra = _local_extra(devices_pt2, z.infolist()[0])
    torch_id = torch_extra[:2]
    fillers = set(torch_extra[4:])
    assert len(fillers) == 1
    with zipfile.ZipFile(out) as z:
        for info in z.infolist():
            extra = _local_extra(out, info)
            field_id, size = struct.unpack("<2sH", extra[:4])
            assert field_id == torch_id, info.filename
            assert set(extra[4:4 + size]) <= fillers, info.filename
        d = z.getinfo(f"{top}/extra/folder/")
        assert d.is_dir() and d.file_size == 0 and z.read(d) == b""


# --- what is rewritten where --------------------------------------------------------

def test_device_already_on_target_does_not_stop_the_walk() -> None:
    new = {"type": "cuda", "index": 0}
    # an unchanged device first, then more to rewrite in the same object
    doc = {"device": dict(new), "inner": {"device": {"type": "cpu", "index": None}},
           "as_device": {"type": "cpu", "index": None}}
    counts, olds = rewrite_devices(doc, new)
    assert dict(counts) == {"unchanged": 1, "device": 1, "as_device": 1}
    assert dict(olds) == {"cpu": 1}
    assert doc == {"device": new, "inner": {"device": new}, "as_device": new}


def test_config_devices_under_either_key_are_counted(devices_pt2: Path, tmp_path: Path) -> None:
    def add_as_device(rel: str, data: bytes) -> bytes:
        if not rel.endswith("_weights_config.json"):
            return data
        doc = json.loads(data)
        doc["extra"] = {"as_device": {"type": "cpu", "index": None}}
        return json.dumps(doc).encode()

    src = _variant(devices_pt2, tmp_path / "as_device.pt2", change=add_as_device)
    out = tmp_path / "out.pt2"
    (change,) = retarget(src, out, "cuda:0").programs
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(out) as b:
        configs = [n for n in a.namelist() if n.endswith("_config.json")]
        want = sum(len(serialized_devices(json.loads(a.read(n)))) for n in configs)
        written = [d for n in configs for d in serialized_devices(json.loads(b.read(n)))]
    assert change.payloads == want == 5
    assert len(written) == want and all(d == {"type": "cuda", "index": 0} for d in written)


def test_constants_config_without_a_weights_config(devices_pt2: Path, tmp_path: Path) -> None:
    src = _variant(devices_pt2, tmp_path / "constants.pt2",
                   change=lambda rel, data: None if rel.startswith("data/weights/") else data)
    out = tmp_path / "out.pt2"
    (change,) = retarget(src, out, "cuda:0").programs
    top = _top(src)
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(out) as b:
        rel = f"{top}/data/constants/model_constants_config.json"
        want = serialized_devices(json.loads(a.read(rel)))
        got = serialized_devices(json.loads(b.read(rel)))
    assert change.payloads == len(want) == 1
    assert got == [{"type": "cuda", "index": 0}]


def test_notes_list_every_program_left(two_pt2: Path, tmp_path: Path) -> None:
    # a third program: the first one's records under another name
    top = _top(two_pt2)
    with zipfile.ZipFile(two_pt2) as z:
        copies = {rel.replace("first", "third"): z.read(f"{top}/{rel}")
                  for rel in (n[len(top) + 1:] for n in z.namelist())
                  if rel.startswith(("models/first", "data/weights/first", "data/constants/first"))}
    src = _variant(two_pt2, tmp_path / "three.pt2", extra=copies)
    result = retarget(src, tmp_path / "out.pt2", "cuda", programs=["second"])
    assert [n for n in result.notes if n.startswith("programs left")] == [
        "programs left as they were: first, third"]


def test_program_the_reader_refuses_is_refused_by_name(devices_pt2: Path,
                                                       tmp_path: Path) -> None:
    src = _variant(devices_pt2, tmp_path / "broken.pt2",
                   change=lambda rel, data: b'{"graph_module": 3}' if rel == "models/model.json"
                   else data)
    with pytest.raises(ArchiveError, match="^program 'model' "):
        retarget(src, tmp_path / "out.pt2", "cuda")
    assert _names(tmp_path) == {"broken.pt2"}


def test_program_too_deep_to_write_back_is_refused_by_record(devices_pt2: Path,
                                                             tmp_path: Path) -> None:
    def deepen(rel: str, data: bytes) -> bytes:
        if rel != "models/model.json":
            return data
        return data.rstrip()[:-1] + b', "deep": ' + b"[" * 1010 + b"]" * 1010 + b"}"

    src = _variant(devices_pt2, tmp_path / "deep.pt2", change=deepen)
    with pytest.raises(RetargetError, match="^record models/model.json cannot be written back"):
        retarget(src, tmp_path / "out.pt2", "cuda")
    assert _names(tmp_path) == {"deep.pt2"}
