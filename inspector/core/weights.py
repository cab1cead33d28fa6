"""The weights of a program, read from their raw records into numpy, without torch.

`list_weights` describes every parameter, buffer and tensor constant from the
weights/constants configs (small JSON records) without reading any tensor
bytes. `WeightReader.blocks` then yields a weight's values as numpy arrays of
bounded size: stored (uncompressed) records, which is what torch writes, are
memory-mapped and never copied whole; compressed ones are decompressed chunk
by chunk. Statistics and histograms over those blocks live in weight_stats.py.

A record holds a whole storage; the config gives each tensor's dtype, sizes,
strides and storage offset into it (torch rebuilds it with `as_strided`, so
views sharing a storage share a record). A config that does not fit its record
raises WeightError for that weight before anything is read: we never read past
a record. Pickled records are never opened.
"""

from __future__ import annotations

import bisect
import math
import mmap
import struct
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from inspector.core import weight_dtypes as wd
from inspector.core.archive import Archive, ArchiveError
from inspector.core.dtypes import DTYPE_ITEMSIZE
from inspector.core.errors import InspectorError
from inspector.core.inflation import zipinfo_problem
from inspector.core.program import sym_size

if TYPE_CHECKING:
    from inspector.core.program import Program

PARAMETER, BUFFER, CONSTANT = "parameter", "buffer", "constant"
# Storage elements per block: 64K float32 values are 256 KB, so a block and its
# temporaries stay in the L2 cache while numpy makes its few passes over it
# (weight_stats.py), and numpy's per-call overhead stays small. Measured on the
# toy decoder (bench_weights.py, busy 2-core machine), stats/bare ratio by
# block: 16K 2.6x, 32K 2.2x, 64K 1.3x, 128K 1.65x, 256K 2.1x.
BLOCK_ELEMENTS = 1 << 16
# Sizes, strides and offsets past this are not real tensors (2**62 bytes of
# int64 elements); refusing them keeps every extent computation in range.
_MAX_DIM = 1 << 60
# Local file header: signature, versions, flags, method, time, date, crc,
# sizes (2), name length, extra length.
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"


class WeightError(InspectorError):
    """One weight cannot be read (its config lies, its record is missing or
    corrupt); the other weights still can."""


@dataclass(frozen=True, slots=True)
class WeightInfo:
    """One parameter, buffer or constant as the configs describe it."""

    program: str
    name: str  # the key of ExportedProgram.state_dict (or .constants)
    kind: str  # parameter, buffer or constant
    record: str | None  # record path inside the archive's top folder
    dtype: int | None  # schema ScalarType code
    sizes: tuple[int | str, ...]  # str: a symbolic size
    strides: tuple[int | str, ...]
    storage_offset: int | str
    note: str | None = None  # why its values cannot be read (pickled, not a tensor...)

    @property
    def dtype_name(self) -> str | None:
        return None if self.dtype is None else wd.dtype_name(self.dtype)

    @property
    def numel(self) -> int | None:
        if not all(isinstance(s, int) for s in self.sizes):
            return None
        return math.prod(self.sizes)  # type: ignore[arg-type]

    @property
    def nbytes(self) -> int | None:
        n = self.numel
        if n is None or self.dtype is None or self.dtype not in DTYPE_ITEMSIZE:
            return None
        return n * DTYPE_ITEMSIZE[self.dtype]

    @property
    def readable(self) -> bool:
        return self.note is None


# --- listing (configs only) ------------------------------------------------------

def list_weights(archive: Archive, program_name: str, program: Program | None = None) -> list[WeightInfo]:
    """Every weight and tensor constant of a program, in the configs' order
    (torch's state_dict order, then constants). Reads the two configs only.
    With the parsed program, its signature decides parameter/buffer (a
    non-persistent buffer lives in the constants config)."""
    archive.program_path(program_name)  # a clear error for an unknown program
    if archive.layout != "pt2":
        return []
    roles: dict[str, str] = {}
    if program is not None:
        for spec in program.input_specs:
            if spec.target is None:
                continue
            role = {"parameter": PARAMETER, "buffer": BUFFER}.get(spec.kind, CONSTANT)
            roles[spec.target] = role
    out: list[WeightInfo] = []
    for which in ("weights", "constants"):
        config = archive.payload_config(program_name, which)
        for name, meta in config.items():
            out.append(_describe(program_name, which, str(name), meta, roles))
    return out


def _describe(program: str, which: str, name: str, meta: Any, roles: dict[str, str]) -> WeightInfo:
    def bad(note: str) -> WeightInfo:
        return WeightInfo(program, name, kind, None, None, (), (), 0, note)

    if which == "weights":
        is_param = isinstance(meta, dict) and meta.get("is_param") is True
        kind = roles.get(name, PARAMETER if is_param else BUFFER)
    else:
        kind = roles.get(name, CONSTANT)
    if not isinstance(meta, dict):
        return bad("error: its config entry is not an object")
    path_name = meta.get("path_name")
    if not isinstance(path_name, str) or not path_name or "/" in path_name or "\\" in path_name \
            or path_name in (".", ".."):
        return bad(f"error: its config names no plain record ({str(path_name)[:80]!r})")
    record = f"data/{which}/{path_name}"
    if which == "constants" and path_name.startswith(("custom_obj_", "opaque_obj_")):
        info = WeightInfo(program, name, CONSTANT, record, None, (), (), 0,
                          "not read (a pickled object, not a tensor)")
        return info
    tm = meta.get("tensor_meta")
    if meta.get("use_pickle") is True:
        dtype, sizes, strides, offset = _meta_fields(tm) if isinstance(tm, dict) else (None, (), (), 0)
        return WeightInfo(program, name, kind, record, dtype, sizes, strides, offset,
                          "not read (pickled)")
    if not isinstance(tm, dict):
        return bad("error: its config has no tensor_meta")
    dtype, sizes, strides, offset = _meta_fields(tm)
    note = None
    if dtype is None:
        note = "error: its config has no valid dtype"
    elif not wd.supported(dtype):
        note = f"not read (dtype {wd.dtype_name(dtype)} is not supported)"
    elif tm.get("layout", 7) != 7:
        note = "not read (not a strided tensor)"
    elif len(sizes) != len(strides):
        note = f"error: its config gives {len(sizes)} sizes but {len(strides)} strides"
    elif not all(isinstance(v, int) for v in (*sizes, *strides, offset)):
        note = "not read (symbolic sizes, strides or offset)"
    elif any(v < 0 for v in (*sizes, *strides, offset)):  # type: ignore[operator]
        note = "error: its config gives a negative size, stride or offset"
    elif math.prod(sizes) > _MAX_DIM or any(v > _MAX_DIM for v in (*strides, offset)):  # type: ignore[operator, arg-type]
        note = "error: its config gives more elements than any real tensor holds"
    if note is not None and note.startswith("error"):
        return WeightInfo(program, name, kind, record, dtype, (), (), 0, note)
    return WeightInfo(program, name, kind, record, dtype, sizes, strides, offset, note)


def _meta_fields(tm: dict[str, Any]) -> tuple[int | None, tuple, tuple, int | str]:
    dtype = tm.get("dtype")
    if not isinstance(dtype, int) or isinstance(dtype, bool):
        dtype = None
    sizes = tuple(_sym_int(v) for v in _as_list(tm.get("sizes")))
    strides = tuple(_sym_int(v) for v in _as_list(tm.get("strides")))
    return dtype, sizes, strides, _sym_int(tm.get("storage_offset", 0))


def _as_list(v: Any) -> list:
    return v[:64] + ["?"] * (len(v) > 64) if isinstance(v, list) else ["?"]


def _sym_int(v: Any) -> int | str:
    """A serialized SymInt -> its int; a symbolic or malformed value -> its text (bounded)."""
    size = sym_size(v)
    return size[:200] if isinstance(size, str) else size


# --- reading -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Layout:
    """Where a weight's values sit in its record, in storage elements."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in storage elements, all >= 0
    offset: int
    record_elements: int
    contiguous: bool  # one run [offset, offset + numel) (up to an axis order)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


class WeightReader:
    """Reads weights of one open archive. Use as a context manager; close() unmaps.
    Several threads may read through one reader (the map is made under a lock;
    numpy releases the GIL in its loops), but close it only when all are done."""

    def __init__(self, archive: Archive) -> None:
        self.archive = archive
        self._lock = threading.Lock()
        self._file: Any = None
        self._map: mmap.mmap | None = None
        self._temps: list[Any] = []
        self._starts: list[int] | None = None
        if archive.byteorder not in (None, "little", "big"):
            raise ArchiveError(f"byteorder record says {archive.byteorder!r}, "
                               "expected 'little' or 'big'")
        self.byteorder = archive.byteorder or "little"

    def close(self) -> None:
        for m in (self._map, *(t[1] for t in self._temps)):
            if m is not None:
                try:
                    m.close()
                except BufferError:  # a caller still holds an array over it: the GC unmaps it
                    pass
        for fp in (self._file, *(t[0] for t in self._temps)):
            if fp is not None:
                fp.close()
        self._map, self._file, self._temps = None, None, []

    def __enter__(self) -> WeightReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public --
    def blocks(self, weight: WeightInfo, max_elements: int = BLOCK_ELEMENTS) -> Iterator[np.ndarray]:
        """The weight's values as 1-D native numpy arrays (float32/float64,
        integers, bool, complex), each at most about `max_elements` long, in
        an order of our choosing (statistics and histograms do not depend on
        it). Raises WeightError, before yielding anything, when the weight
        cannot be read."""
        if weight.note is not None or weight.record is None or weight.dtype is None:
            raise WeightError(f"weight {weight.name}: {weight.note or 'no record'}")
        code = weight.dtype
        info = self._entry(weight)
        layout = self._layout(weight, info)
        return self._iter(weight, info, layout, code, max_elements)

    def record_bytes(self, weight: WeightInfo) -> int:
        """Size of the weight's record (0: torch.export.load fills the tensor with zeros)."""
        return self._entry(weight).file_size

    def check(self, weight: WeightInfo) -> None:
        """Validate a weight's config against its record (WeightError) without reading values."""
        if weight.note is not None or weight.record is None or weight.dtype is None:
            raise WeightError(f"weight {weight.name}: {weight.note or 'no record'}")
        self._layout(weight, self._entry(weight))

    # -- the record --
    def _entry(self, weight: WeightInfo) -> zipfile.ZipInfo:
        try:
            info = self.archive.entry(weight.record)  # type: ignore[arg-type]
        except ArchiveError:
            raise WeightError(f"weight {weight.name}: its record {weight.record} is missing "
                              "from the archive") from None
        if info.flag_bits & 0x1:
            raise WeightError(f"weight {weight.name}: its record {weight.record} is encrypted")
        # by the sizes the directory declares, before inflating anything (core/inflation.py)
        problem = zipinfo_problem(info, weight.record)
        if problem is not None:
            raise WeightError(f"weight {weight.name}: {problem}")
        return info

    def _layout(self, weight: WeightInfo, info: zipfile.ZipInfo) -> _Layout:
        code = weight.dtype
        assert code is not None
        elem = wd.storage_dtype(code, self.byteorder).itemsize
        per = wd.storage_per_element(code)
        where = f"weight {weight.name}"
        sizes, strides, offset = weight.sizes, weight.strides, weight.storage_offset
        for label, values in (("size", sizes), ("stride", strides), ("storage offset", (offset,))):
            for v in values:
                if not isinstance(v, int) or v < 0 or v > _MAX_DIM:
                    raise WeightError(f"{where}: its config gives a {label} of {v} "
                                      "(not a non-negative integer)")
        nbytes = info.file_size
        if nbytes % (elem * per):
            raise WeightError(
                f"{where}: its record {weight.record} holds {nbytes:,} bytes, not a multiple of "
                f"the {elem * per}-byte element size of {wd.dtype_name(code)}")
        record_elements = nbytes // (elem * per)
        shape = tuple(int(s) for s in sizes)  # type: ignore[arg-type]
        numel = math.prod(shape)
        if numel and nbytes:
            last = offset + sum((s - 1) * st for s, st in zip(shape, strides))  # type: ignore[operator]
            if last >= record_elements:
                raise WeightError(
                    f"{where}: its config (sizes {list(shape)}, strides {list(strides)}, offset "
                    f"{offset}) reaches element {last:,} but its record {weight.record} holds "
                    f"only {record_elements:,} {wd.dtype_name(code)} elements")
        # Order-free statistics let us read dims in stride order: a transposed
        # weight is then one contiguous run, like its original.
        dims = sorted(((s, st) for s, st in zip(shape, strides) if s != 1),  # type: ignore[arg-type]
                      key=lambda d: -d[1])
        merged: list[list[int]] = []
        for s, st in dims:
            if merged and merged[-1][1] == st * s:
                merged[-1] = [merged[-1][0] * s, st]
            else:
                merged.append([s, st])
        contiguous = numel == 0 or (len(merged) == 1 and merged[0][1] == 1) or not merged
        m_shape = tuple(d[0] for d in merged)
        m_strides = tuple(d[1] for d in merged)
        if per == 2:  # complex32: two float16 per element, innermost
            m_shape, m_strides = (*m_shape, 2), tuple(st * 2 for st in m_strides) + (1,)
            offset *= 2
            record_elements *= 2
        return _Layout(m_shape, m_strides, int(offset), record_elements, contiguous)  # type: ignore[arg-type]

    def _storage(self, weight: WeightInfo, info: zipfile.ZipInfo, dtype: np.dtype,
                 count: int) -> np.ndarray:
        """The whole record as a read-only array: a map of the archive file for a
        stored record, of a temporary file holding it decompressed otherwise."""
        if info.compress_type == zipfile.ZIP_STORED:
            mm = self._archive_map()
            start = self._data_start(weight, info, mm)
            return np.frombuffer(mm, dtype=dtype, count=count, offset=start)
        tmp = tempfile.TemporaryFile(prefix="pt2i-weight-")
        try:
            written = 0
            for chunk in self._stream_bytes(weight, info, 0, info.file_size):
                tmp.write(chunk)
                written += len(chunk)
            tmp.flush()
            mm = mmap.mmap(tmp.fileno(), written, access=mmap.ACCESS_READ) if written else None
        except BaseException:
            tmp.close()
            raise
        with self._lock:
            self._temps.append((tmp, mm))
        if mm is None:
            return np.zeros(0, dtype=dtype)
        return np.frombuffer(mm, dtype=dtype, count=count)

    def _archive_map(self) -> mmap.mmap:
        with self._lock:
            if self._map is None:
                self._file = open(self.archive.path, "rb")  # noqa: SIM115 (closed in close())
                self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            return self._map

    def _data_start(self, weight: WeightInfo, info: zipfile.ZipInfo, mm: mmap.mmap) -> int:
        """Offset of a stored entry's bytes in the file, from its local header
        (checked as zipfile.open checks it: signature and name)."""
        where = f"weight {weight.name}: its record {weight.record}"
        h = info.header_offset
        if h < 0 or h + _LOCAL_HEADER.size > len(mm):
            raise WeightError(f"{where} has a local header outside the file")
        fields = _LOCAL_HEADER.unpack_from(mm, h)
        if fields[0] != _LOCAL_SIGNATURE:
            raise WeightError(f"{where} has a bad local header (no zip signature)")
        name_len, extra_len = fields[-2], fields[-1]
        name = mm[h + _LOCAL_HEADER.size: h + _LOCAL_HEADER.size + name_len]
        expected = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437",
                                             errors="replace")
        if name != expected:
            raise WeightError(f"{where}: its local header names another entry")
        start = h + _LOCAL_HEADER.size + name_len + extra_len
        if info.compress_size != info.file_size or start + info.file_size > len(mm):
            raise WeightError(f"{where} runs past the end of the file (truncated archive)")
        if start + info.file_size > self._next_entry(h, len(mm)):
            raise WeightError(f"{where} claims more bytes than it holds (it overlaps the next "
                              "entry: the zip directory lies)")
        return start

    def _next_entry(self, header_offset: int, file_size: int) -> int:
        """Where the entry after the one at `header_offset` begins (a stored
        record's bytes must end before it: the map has no CRC check to catch it)."""
        with self._lock:
            if self._starts is None:
                starts = []
                for rec in self.archive.records:
                    try:
                        starts.append(self.archive.entry(rec.path).header_offset)
                    except ArchiveError:
                        continue
                self._starts = sorted(starts)
        i = bisect.bisect_right(self._starts, header_offset)
        return self._starts[i] if i < len(self._starts) else file_size

    def _stream_bytes(self, weight: WeightInfo, info: zipfile.ZipInfo, skip: int,
                      length: int, step: int = 1 << 20) -> Iterator[bytes]:
        """`length` decompressed bytes after the first `skip`, in pieces of at
        most `step` bytes; a stream shorter than its header claims is an error."""
        where = f"weight {weight.name}: its record {weight.record}"
        try:
            with self.archive.open_entry(info) as stream:
                while skip:
                    got = stream.read(min(skip, step))
                    if not got:
                        raise WeightError(f"{where} ends early (corrupt or truncated)")
                    skip -= len(got)
                while length:
                    got = stream.read(min(length, step))
                    if not got:
                        raise WeightError(f"{where} ends early (corrupt or truncated)")
                    length -= len(got)
                    yield got
        except WeightError:
            raise
        except NotImplementedError as exc:
            raise WeightError(f"{where} uses an unsupported compression method ({exc})") from None
        except Exception as exc:  # zlib.error, BadZipFile (CRC), OSError...
            raise WeightError(f"{where} cannot be read ({str(exc)[:200] or type(exc).__name__})") from None

    # -- values --
    def _iter(self, weight: WeightInfo, info: zipfile.ZipInfo, layout: _Layout, code: int,
              max_elements: int) -> Iterator[np.ndarray]:
        numel = layout.numel
        if numel == 0:
            return
        sdt = wd.storage_dtype(code, self.byteorder)
        per = wd.storage_per_element(code)
        step = max(per, max_elements - max_elements % per)
        if info.file_size == 0:
            # torch.export.load builds zeros for an empty record (a fake weight)
            for start in range(0, numel * per, step):
                yield wd.to_values(np.zeros(min(step, numel * per - start), sdt), code)
            return
        total = numel * per
        if layout.contiguous and info.compress_type != zipfile.ZIP_STORED:
            pending = b""
            esize = sdt.itemsize
            for chunk in self._stream_bytes(weight, info, layout.offset * esize, total * esize,
                                             step * esize):
                if pending:
                    chunk, pending = pending + chunk, b""
                usable = len(chunk) - len(chunk) % (esize * per)
                if usable < len(chunk):
                    pending = chunk[usable:]
                if usable:
                    yield wd.to_values(np.frombuffer(chunk, sdt, count=usable // esize), code)
            return
        storage = self._storage(weight, info, sdt, layout.record_elements)
        if layout.contiguous:
            run = storage[layout.offset: layout.offset + total]
            for start in range(0, total, step):
                yield wd.to_values(run[start: start + step], code)
            return
        view = np.lib.stride_tricks.as_strided(
            storage[layout.offset:], shape=layout.shape,
            strides=tuple(st * sdt.itemsize for st in layout.strides), writeable=False)
        for block in _sub_blocks(view, step):
            yield wd.to_values(np.ascontiguousarray(block).reshape(-1), code)


def _sub_blocks(view: np.ndarray, limit: int) -> Iterator[np.ndarray]:
    """Split a strided view into sub-views of at most ~limit elements along its
    leading axes (each is copied contiguous by the caller: one block at a time)."""
    if view.size <= limit or view.ndim == 0:
        yield view
        return
    inner = math.prod(view.shape[1:])
    if view.ndim == 1 or inner == 0:
        for i in range(0, view.shape[0], limit):
            yield view[i: i + limit]
        return
    if inner <= limit:
        rows = limit // inner
        for i in range(0, view.shape[0], rows):
            yield view[i: i + rows]
        return
    for i in range(view.shape[0]):
        yield from _sub_blocks(view[i], limit)

