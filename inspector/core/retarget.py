"""Rewrite the device literals of a `.pt2` archive, without torch.

Users export on a CPU box for a GPU box. torch's `move_to_device_pass` cannot do
that: it moves the weights too, so targeting `cuda` where there is no CUDA raises.
The archive itself only *records* devices, in JSON: node arguments (`as_device`),
tensor metadata (`device` in `tensor_values`), and the weights/constants configs
(`tensor_meta.device`, which torch.export.load obeys when it builds each tensor).
So we rewrite those JSON records and copy every other record as it is: raw weight
bytes are streamed through, never decoded, and nothing is unpickled.

The output keeps the archive's record order, names and top folder. It is written
to an unnamed file (Linux O_TMPFILE; elsewhere a partial file beside the target)
and given the target's name at the very end (inspector/core/atomic.py), so an
error, a cancel, Ctrl+C, SIGTERM or even SIGKILL leaves no partial file and any
existing target intact.
Stored records (what torch writes) keep torch's 64-byte data alignment.
"""

from __future__ import annotations

import json
import os
import struct
import time
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from inspector.core.archive import Archive, ArchiveError, open_archive
from inspector.core.atomic import AtomicWriter, check_output_path
from inspector.core.inflation import zipinfo_problem
from inspector.core.device_names import parse_device
from inspector.core.errors import InspectorError
from inspector.core.program import ArgKind, Device, decode_device, parse_program

# JSON keys whose value is a serialized Device ({"type": ..., "index": ...}) in
# torch's schema: Argument.as_device and TensorMeta.device.
DEVICE_KEYS = frozenset({ArgKind.DEVICE, "device"})
_CHUNK = 4 * 1024 * 1024
# torch's zip writer aligns each record's data to 64 bytes (mmap-friendly); keep it.
_ALIGN = 64
_PAD_HEADER_ID = 0x4246  # "FB": the extra-field id torch uses for its padding


class RetargetError(InspectorError):
    """The archive cannot be retargeted as asked (bad output path, legacy layout...)."""


class RetargetCancelled(InspectorError):
    """should_cancel() said stop; nothing was written."""


@dataclass
class ProgramChange:
    program: str
    literals: int = 0  # device arguments of nodes rewritten
    tensor_meta: int = 0  # devices in the program's tensor metadata rewritten
    payloads: int = 0  # devices in the weights/constants configs rewritten
    unchanged: int = 0  # device records already on the target
    from_devices: dict[str, int] = field(default_factory=dict)  # old literal -> count
    # --dtype: literals / kept casts / tensor_values / weight entries changed
    dtype: dict[str, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"program": self.program, "literals": self.literals,
               "tensor_meta": self.tensor_meta, "payloads": self.payloads,
               "unchanged": self.unchanged, "from_devices": dict(self.from_devices)}
        if self.dtype is not None:
            out["dtype"] = dict(self.dtype)
        return out


@dataclass
class RetargetResult:
    source: Path
    output: Path
    device: str
    programs: list[ProgramChange]
    records_copied: int  # records copied unchanged
    bytes_copied: int  # their uncompressed bytes
    seconds: float
    notes: list[str] = field(default_factory=list)
    dtype: str = ""  # bf16 / fp16 when --dtype rewrote the dtypes

    def as_dict(self) -> dict[str, Any]:
        return {"source": str(self.source), "output": str(self.output), "device": self.device,
                "dtype": self.dtype,
                "programs": [p.as_dict() for p in self.programs],
                "records_copied": self.records_copied, "bytes_copied": self.bytes_copied,
                "seconds": round(self.seconds, 3), "notes": list(self.notes)}


def retarget(source: str | os.PathLike[str], output: str | os.PathLike[str],
             device: str | None, *, dtype: str | None = None,
             programs: Sequence[str] | None = None,
             on_progress: Callable[[float], None] | None = None,
             should_cancel: Callable[[], bool] | None = None) -> RetargetResult:
    """Write `output`: `source` with every recorded device of the chosen programs
    (all by default) set to `device` (None: devices kept) and, with `dtype` (bf16 or
    fp16), their frozen dtype literals, value dtypes and floating weights converted
    (core/retarget_dtype.py). Progress goes to `on_progress(fraction)`;
    `should_cancel()` is polled between chunks and stops with RetargetCancelled."""
    from inspector.core.retarget_dtype import precision_code

    started = time.perf_counter()
    if device is None and dtype is None:
        raise RetargetError("nothing to retarget (give a device, a dtype or both)")
    target = parse_device(device) if device is not None else None
    to = precision_code(dtype) if dtype is not None else None
    src = Path(source)
    out = _check_output(src, Path(output))
    progress = on_progress or (lambda _f: None)
    cancelled = should_cancel or (lambda: False)
    with open_archive(src) as archive:
        if archive.layout != "pt2":
            raise RetargetError(
                f"{src.name} uses the old torch.export layout (serialized_state_dict.pt): its "
                "weights are a pickle whose devices cannot be rewritten without unpickling; "
                "load and re-save it with torch.export.save first")
        _refuse_compiled(archive, src, target or dtype)
        names = _check_programs(archive, programs)
        progress(0.0)
        replacements, changes = _rewrite_json(archive, names, target, to)
        notes = _notes(archive, names)
        if to is not None:
            notes.append("control-flow subgraphs keep their dtype literals; pickled "
                         "weights keep their dtype")
    if cancelled():
        raise RetargetCancelled("retarget cancelled; nothing was written")
    copied, nbytes = _write_zip(src, out, archive.top, replacements, progress, cancelled)
    progress(1.0)
    result = RetargetResult(src, out, str(target) if target is not None else "", changes,
                            copied, nbytes, time.perf_counter() - started, notes)
    result.dtype = dtype or ""
    return result


# --- checks -------------------------------------------------------------------

def _check_output(src: Path, out: Path) -> Path:
    # the rule of every command that writes (core/atomic.py)
    return check_output_path(out, inputs=[src], suffix=".pt2",
                             suffix_why="torch.export.load expects it", error=RetargetError)


def _refuse_compiled(archive: Archive, src: Path, target: Device | str) -> None:
    """An AOTInductor package runs its compiled code, not its JSON: rewriting
    the recorded devices would leave the .so built for the old device, and a
    package whose program and compiled model disagree."""
    from inspector.core.aoti import compiled_models

    models = compiled_models(archive)
    if not models:
        return
    built = "; ".join(f"model {m.name} built for {m.target}" for m in models)
    program = ("; its program can be retargeted once saved alone with torch.export.save"
               if archive.program_names else "")
    raise RetargetError(
        f"cannot retarget {src.name} (an AOTInductor package: its compiled code, {built}, "
        f"cannot be rewritten for {target}; compile it again for {target} with "
        f"torch._inductor.aoti_compile_and_package{program})")


def _check_programs(archive: Archive, programs: Sequence[str] | None) -> list[str]:
    if not programs:
        return list(archive.program_names)
    for name in programs:
        archive.program_path(name)  # raises ArchiveError naming the programs there
    return list(dict.fromkeys(programs))


def _notes(archive: Archive, names: list[str]) -> list[str]:
    from inspector.core import archive as ar

    notes = []
    kinds = Counter(r.kind for r in archive.records)
    if any(r.kind == ar.SAMPLE_INPUTS for r in archive.records):
        notes.append("sample inputs (data/sample_inputs/*.pt) are pickles and keep their "
                     "devices: they are copied unchanged")
    if kinds[ar.PICKLED_WEIGHT] or kinds[ar.PICKLED_CONSTANT]:
        notes.append(f"{kinds[ar.PICKLED_WEIGHT] + kinds[ar.PICKLED_CONSTANT]} pickled "
                     "weight/constant record(s) keep the device inside the pickle")
    if kinds[ar.AOTI_BINARY]:
        notes.append("AOTInductor binaries are compiled for one device and are copied "
                     "unchanged: recompile them for the target")
    if len(names) < len(archive.program_names):
        others = sorted(set(archive.program_names) - set(names))
        notes.append(f"programs left as they were: {', '.join(others)}")
    return notes


# --- JSON rewriting -----------------------------------------------------------

def _rewrite_json(archive: Archive, names: list[str], target: Device | None,
                  to: int | None = None) -> tuple[dict[str, bytes], list[ProgramChange]]:
    from inspector.core.retarget_dtype import (
        DtypeChange,
        convert,
        rewrite_payload_config,
        rewrite_program_dtypes,
    )

    new_value = {"type": target.type, "index": target.index} if target is not None else None
    replacements: dict[str, bytes] = {}
    changes = []
    for name in names:
        change = ProgramChange(name)
        rel = archive.program_path(name)
        doc = archive.program_json(name)
        program = parse_program(doc, name)  # refuse what the reader refuses (limits, structure)
        if new_value is not None:
            counts, olds = rewrite_devices(doc, new_value)
            change.literals = counts[ArgKind.DEVICE]
            change.tensor_meta = counts["device"]
            change.unchanged = counts["unchanged"]
            change.from_devices = dict(olds)
        dchange = DtypeChange()
        if to is not None:
            rewrite_program_dtypes(doc, program, to, dchange)
        replacements[archive.entry_name(rel)] = _dump(doc, rel)
        for which in ("weights", "constants"):
            crel = f"data/{which}/{name}_{which}_config.json"
            if archive.record(crel) is None:
                continue
            cdoc = archive.read_json(crel)
            if new_value is not None:
                ccounts, _ = rewrite_devices(cdoc, new_value)
                change.payloads += ccounts["device"] + ccounts[ArgKind.DEVICE]
                change.unchanged += ccounts["unchanged"]
            if to is not None:
                before = set(dchange.blobs)
                rewrite_payload_config(cdoc, to, dchange)
                for key in dchange.blobs - before:
                    path, source = key.split("\0")
                    brel = f"data/{which}/{path}"
                    entry = archive.entry_name(brel)
                    if entry not in replacements and archive.record(brel) is not None:
                        data = archive.read_bytes(brel, archive.entry(brel).file_size)
                        replacements[entry] = convert(data, int(source), to)
            replacements[archive.entry_name(crel)] = _dump(cdoc, crel)
        if to is not None:
            change.dtype = {"literals": dchange.literals, "kept": dchange.kept,
                            "values": dchange.values, "payloads": dchange.payloads}
        changes.append(change)
    return replacements, changes


def _dump(doc: Any, rel: str) -> bytes:
    try:
        return orjson.dumps(doc)
    except TypeError:
        pass  # orjson writes at most 254 levels; the reader accepts up to 1024
    try:
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode("utf-8")
    except (RecursionError, ValueError) as exc:
        raise RetargetError(f"record {rel} cannot be written back ({exc})") from None


def _is_device(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("type"), str)
            and value.keys() <= {"type", "index"})


def rewrite_devices(doc: Any, new_value: dict[str, Any]) -> tuple[Counter[str], Counter[str]]:
    """Set every serialized Device under a device-carrying key to `new_value`, in
    place. Iterative (a deep document cannot exhaust the Python stack). Returns
    (counts by key plus 'unchanged', counts of the old node-argument devices)."""
    counts: Counter[str] = Counter()
    olds: Counter[str] = Counter()
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in DEVICE_KEYS and _is_device(value):
                    if value == new_value:
                        counts["unchanged"] += 1
                        continue
                    if key == ArgKind.DEVICE:
                        olds[str(decode_device(value))] += 1
                    item[key] = dict(new_value)
                    counts[key] += 1
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return counts, olds


# --- zip writing --------------------------------------------------------------

def _write_zip(src: Path, out: Path, top: str, replacements: dict[str, bytes],
               progress: Callable[[float], None], cancelled: Callable[[], bool]
               ) -> tuple[int, int]:
    # An unnamed file (O_TMPFILE) on Linux: even a SIGKILL leaves nothing behind.
    writer = AtomicWriter(out)
    copied = nbytes = 0
    try:
        with writer as raw, zipfile.ZipFile(src) as zin:
            infos = zin.infolist()
            for info in infos:
                _check_ratio(info)
            total = sum(i.file_size for i in infos if i.filename not in replacements) or 1
            done = 0
            with zipfile.ZipFile(raw, "w", allowZip64=True) as zout:
                for info in infos:
                    if cancelled():
                        raise RetargetCancelled("retarget cancelled; nothing was written")
                    if info.filename in replacements or info.is_dir():
                        data = replacements.get(info.filename, b"")
                        zinfo = _new_info(info, len(data), raw.tell())
                        zout.writestr(zinfo, data)
                        continue
                    zinfo = _new_info(info, info.file_size, raw.tell())
                    with zin.open(info) as s, zout.open(zinfo, "w") as dst:
                        while True:
                            if cancelled():
                                raise RetargetCancelled("retarget cancelled; nothing was written")
                            chunk = s.read(_CHUNK)
                            if not chunk:
                                break
                            dst.write(chunk)
                            done += len(chunk)
                            if len(chunk) == _CHUNK:
                                progress(min(0.99, done / total))
                    if zinfo.CRC != info.CRC:  # zipfile checked the source CRC too
                        raise ArchiveError(f"record {info.filename} changed while copying")
                    copied += 1
                    nbytes += info.file_size
                    progress(min(0.99, done / total))
            writer.commit()
    except BaseException as exc:
        if isinstance(exc, InspectorError) or not isinstance(exc, Exception):
            raise  # our own errors, cancels, Ctrl+C
        if isinstance(exc, (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile, RuntimeError,
                            NotImplementedError, zlib.error)):
            # corrupt data (bad CRC), encrypted or unsupported-compression records
            raise ArchiveError(f"{src.name} cannot be copied ({exc})") from None
        if isinstance(exc, OSError):
            raise RetargetError(f"cannot write {str(out)!r} ({exc.strerror or exc})") from None
        raise
    return copied, nbytes


def _check_ratio(info: zipfile.ZipInfo) -> None:
    """Refuse a record that expands absurdly: copying a zip bomb would fill the disk
    (the one rule of core/inflation.py)."""
    problem = zipinfo_problem(info)
    if problem is not None:
        raise ArchiveError(problem)


def _new_info(info: zipfile.ZipInfo, size: int, offset: int) -> zipfile.ZipInfo:
    """Same name, date, method and attributes; our own extra field, which pads
    the local header so the data starts on a 64-byte boundary like torch's."""
    zinfo = zipfile.ZipInfo(info.filename, date_time=_valid_date(info.date_time))
    zinfo.compress_type = info.compress_type
    zinfo.external_attr = info.external_attr
    zinfo.create_system = info.create_system
    zinfo.comment = info.comment
    zinfo.file_size = size  # lets zipfile choose zip64 up front
    name_len = len(info.filename.encode("utf-8" if not info.filename.isascii() else "ascii"))
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT
    start = offset + 30 + name_len + (20 if zip64 else 0) + 4
    pad = (-start) % _ALIGN
    zinfo.extra = struct.pack("<HH", _PAD_HEADER_ID, pad) + b"Z" * pad
    return zinfo


def _valid_date(dt: tuple[int, ...]) -> tuple[int, int, int, int, int, int]:
    # torch writes 1980-00-00, which ZipInfo accepts; clamp anything before 1980.
    return dt if dt[0] >= 1980 else (1980, 1, 1, 0, 0, 0)  # type: ignore[return-value]

