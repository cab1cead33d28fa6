"""Safe reader for `.pt2` archives: zip + JSON only, under limits.

Opening an archive must never run anything from it. torch.export.load unpickles
sample inputs and some weights, loads TorchBind objects, dlopens AOTInductor
`.so` files and sympifies strings from the JSON. We only ever read the zip's
central directory and, on demand, the JSON records, through bounded streams. The
other records are described (path, size, kind, risk) but never decoded.

Every failure is an ArchiveError with a message a person can act on.
"""

from __future__ import annotations

import json
import os
import posixpath
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from msgspec import Struct, field  # C-defined records: cheaper to define than dataclasses

from inspector.core.errors import ArchiveError
from inspector.core.program_cache import ProgramCache

if TYPE_CHECKING:
    from inspector.core.program import Program

# --- Limits -------------------------------------------------------------------
# A real archive holds one record per weight tensor plus a dozen others: a 70B
# LLM has under 2,000. 100,000 leaves a wide margin while keeping the central
# directory (about 0.5 KB of Python objects per entry) under 50 MB.
MAX_ENTRIES = 100_000
# Bytes read from any one JSON record, counted on the decompressed stream (the
# declared size can lie). The full-size GPT-2 decoder's program is 2.8 MB and a
# 100,000-node program with real metadata about 180 MB; parsing costs ~3x the
# text in memory, so 512 MiB keeps a worst case near 1.5 GB.
MAX_JSON_BYTES = 512 * 1024 * 1024
# A program's JSON read by the lean parse (program/lean.py), which holds the text
# only while scanning it and bounds what it keeps by its own limits
# (MAX_SCAN_BYTES, MAX_MODEL_VALUES): a genuine 400,000-node program is ~800 MB.
MAX_PROGRAM_BYTES = 1024 * 1024 * 1024
_READ_CHUNK = 16 * 1024 * 1024  # read_buffer's step: the most held beside the buffer
_T = TypeVar("_T")
_B = TypeVar("_B", bytes, bytearray)
# JSON values held in memory at once, counted before parsing as the `{`, `[`
# and `,` bytes of the records (an upper bound: some sit inside strings). Bytes
# alone do not bound memory: `{"a":1},` is 8 bytes of text and ~240 bytes of
# Python dict, so 64 MB of it parsed into 2.1 GB (tests/security). Measured:
# ~120 bytes per value for the densest hostile text, ~170 per value all-in
# (document + Program) for real programs, whose nodes take ~90 values each
# (toy GPT-2 decoder). The window's scale target, a 100,000-node program with
# real metadata (bench_window builds one: 200 MB, 8.4M values by this count),
# peaks at 1.3 GB in `info`/`list`; 9M admits it with a little margin and keeps
# the densest hostile text (~120 bytes per value) near 1.1 GB. The budget
# covers every program an Archive holds parsed at once (`info` holds them all),
# not each one alone.
MAX_JSON_VALUES = 9_000_000
# Small text records (archive_format, archive_version, byteorder, versions).
MAX_SMALL_RECORD_BYTES = 4096
# JSON nesting depth. Real programs nest about 12 levels (plus ~8 per nested
# control-flow graph). orjson refuses documents deeper than 1024 levels while
# parsing (before building them), which is what bounds the recursion of
# everything downstream; program/parser.py enforces MAX_GRAPH_NESTING on top.
MAX_JSON_DEPTH = 1024
# Highest archive_version this inspector understands (torch 2.13 writes 0).
SUPPORTED_ARCHIVE_VERSION = 0
# Entry names longer than this (in UTF-8 bytes) are not produced by torch and only
# hide tricks: torch's zip reader lists names through a 512-byte buffer, so it cuts
# longer ones to 511 bytes and would list (and load by) another name than ours.
MAX_NAME_LENGTH = 511

# Record kinds (stable strings: they appear in `info --json`).
PROGRAM = "program"
WEIGHTS_CONFIG = "weights_config"
CONSTANTS_CONFIG = "constants_config"
WEIGHT = "weight"
PICKLED_WEIGHT = "pickled_weight"
CONSTANT = "constant"
PICKLED_CONSTANT = "pickled_constant"
TORCHBIND_OBJECT = "torchbind_object"
OPAQUE_OBJECT = "opaque_object"
SAMPLE_INPUTS = "sample_inputs"
AOTI_BINARY = "aotinductor_binary"
AOTI_FILE = "aotinductor_file"
EXTRA = "extra"
ARCHIVE_META = "archive_meta"
LEGACY_PICKLE = "legacy_pickle"
UNKNOWN = "unknown"

_ARCHIVE_META_NAMES = {
    "archive_format", "archive_version", "byteorder", ".data/version",
    ".data/serialization_id", "version",
}
# The layout torch.export.save wrote before the pt2 archive format (torch <= 2.5).
_LEGACY_PROGRAM = "serialized_exported_program.json"
_LEGACY_PICKLES = {
    "serialized_state_dict.pt": "state dict",
    "serialized_constants.pt": "constants",
    "serialized_example_inputs.pt": "example inputs",
}
_LIBRARY_SUFFIXES = (".so", ".dll", ".dylib", ".pyd")
_AOTI_DIR = "data/aotinductor/"
# GPU code objects the AOTInductor runtime loads onto the device
_GPU_BINARY_SUFFIXES = (".cubin", ".fatbin", ".hsaco", ".spv", ".ptx")
# Constant records torch deserialises by name prefix, whatever the config says
# (torch.export.pt2_archive._package: CUSTOM_OBJ_FILENAME_PREFIX, OPAQUE_OBJ_...).
TORCHBIND_PREFIX = "custom_obj_"
OPAQUE_PREFIX = "opaque_obj_"


class Record(Struct, frozen=True):
    """One zip entry, described without decoding it."""

    path: str  # relative to the archive's top folder
    size: int  # declared uncompressed size
    compressed_size: int
    kind: str
    risk: bool  # torch.export.load would execute code from it
    why: str = ""  # for risky records: what torch would do with it

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "kind": self.kind,
                "risk": self.risk, "why": self.why}


class Archive(Struct, dict=True, weakref=True):
    """An opened `.pt2` archive. Use as a context manager or call close()."""

    path: Path
    top: str  # the top folder inside the zip ("" when entries are at the root)
    layout: str  # "pt2" or "legacy"
    archive_version: int | None
    byteorder: str | None
    records: list[Record]
    program_names: list[str]
    _zip: zipfile.ZipFile  # this and the fields below: left out of repr (__repr__)
    # fold_name(full entry name) -> entry: torch's zip reader (miniz) finds names
    # case-insensitively, so we look them up the same way (and refuse archives in
    # which two names fold alike: _check_names).
    _by_folded: dict[str, zipfile.ZipInfo] = field(default_factory=dict)
    _records_by_folded: dict[str, Record] = field(default_factory=dict)
    def __post_init__(self) -> None:
        # The parsed programs (core/program_cache.py: the lean or the full parse,
        # one per program, shared by threads): an attribute, not a field.
        self.cache: ProgramCache = ProgramCache(self)

    def __repr__(self) -> str:
        return (f"Archive(path={self.path!r}, top={self.top!r}, layout={self.layout!r}, "
                f"archive_version={self.archive_version!r}, byteorder={self.byteorder!r}, "
                f"records={self.records!r}, program_names={self.program_names!r})")

    # -- lifetime --
    def close(self) -> None:
        """Close the file and drop the parsed programs (a reader still holding the
        archive then keeps no 100k-node model alive)."""
        self._zip.close()
        self.cache.clear()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading --
    def record(self, rel: str) -> Record | None:
        key = fold_name(rel)
        if len(self._records_by_folded) != len(self.records):
            self._records_by_folded = {fold_name(r.path): r for r in self.records}
        return self._records_by_folded.get(key)

    def _entry(self, rel: str) -> zipfile.ZipInfo | None:
        return self._by_folded.get(fold_name(self.top + rel))

    def checksum(self, rel: str) -> tuple[int, int] | None:
        """(CRC-32, uncompressed size) of a record as the zip directory states
        them, without reading the record (None when it is absent): the diff
        judges equal weight bytes by these."""
        try:
            info = self._zip.getinfo(self.top + rel)
        except KeyError:
            return None
        return info.CRC, info.file_size

    def has(self, rel: str) -> bool:
        return self._entry(rel) is not None

    def entry_name(self, rel: str) -> str:
        """The zip entry's name as stored (its case may differ from `rel`'s)."""
        info = self._entry(rel)
        return info.filename if info is not None else self.top + rel

    def entry(self, rel: str) -> zipfile.ZipInfo:
        """The zip entry of a record, for readers that stream or memory-map it
        (weights.py); everything else reads through read_bytes."""
        info = self._entry(rel)
        if info is None:
            raise ArchiveError(f"record {rel} is missing from the archive")
        return info

    def open_entry(self, info: zipfile.ZipInfo):
        """A decompressing stream over one entry (zipfile checks its CRC at the end)."""
        return self._zip.open(info)

    def read_bytes(self, rel: str, limit: int) -> bytes:
        """Read one record through a bounded stream: at most `limit` bytes are
        decompressed, whatever the zip header claims."""
        info = self._open_entry(rel, limit)
        # zipfile stops at the declared size, but decompresses up to the amount
        # asked per call: ask no more than the header admits, or a lying 14 KB
        # entry inflates 512 MB first.
        data = self._guarded(rel, lambda stream: stream.read(min(limit, info.file_size) + 1), info)
        return self._within(rel, data, limit)

    def read_buffer(self, rel: str, limit: int) -> bytes | bytearray:
        """read_bytes for the one big record (a program's JSON, up to 1 GiB): read
        in chunks into one buffer of the declared size, so the peak is the text
        once, not the chunks and their join as well (2 GB for a 1 GiB record).
        A stored entry (torch writes them so) is read in one call past its local
        header and its CRC checked after: one copy, not two (0.2 -> 0.15 s for
        200 MB)."""
        data, check = self.read_buffer_checked_later(rel, limit, alongside=False)
        check()
        return data

    def read_buffer_checked_later(self, rel: str, limit: int, alongside: bool = True
                                  ) -> tuple[bytes | bytearray, LateCheck]:
        """(read_buffer's bytes, a check that raises ArchiveError if they are not
        what the archive stored). With `alongside`, a stored entry's CRC is computed
        on another thread (zlib lets go of the GIL) while the caller parses the
        bytes: 200 MB is 0.06-0.1 s of CRC off the wall time of opening. Else the
        check's start() begins it, or the check computes it."""
        info = self._open_entry(rel, limit)
        fileno = self._stored_fileno(info)
        if fileno is not None:
            data = self._guarded(rel, lambda _stream: _read_stored(fileno(), info), info)
            check = LateCheck(rel, info, data)
            if alongside:
                check.start()
            return data, check
        buffer = bytearray(min(limit, info.file_size) + 1)

        def fill(stream: Any) -> int:
            view, got = memoryview(buffer), 0
            with view:
                while got < len(buffer):
                    n = stream.readinto(view[got:got + _READ_CHUNK])
                    if not n:
                        break
                    got += n
            return got

        got = self._guarded(rel, fill, info)  # zipfile checks the CRC at the end
        del buffer[got:]
        return self._within(rel, buffer, limit), LateCheck(rel)

    def _stored_fileno(self, info: zipfile.ZipInfo) -> Callable[[], int] | None:
        """The archive file's descriptor, for a stored entry read with os.pread
        (not on Windows); None for an entry zipfile must inflate."""
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            return None
        fileno = getattr(self._zip.fp, "fileno", None)
        return fileno if fileno is not None and hasattr(os, "pread") else None

    def _open_entry(self, rel: str, limit: int) -> zipfile.ZipInfo:
        info = self._entry(rel)
        if info is None:
            raise ArchiveError(f"record {rel} is missing from the archive")
        if info.flag_bits & 0x1:
            raise ArchiveError(f"record {rel} is encrypted (encrypted archives are not supported)")
        if info.file_size > limit:
            raise ArchiveError(
                f"record {rel} declares {info.file_size:,} bytes, over the limit of "
                f"{limit:,} bytes for such a record"
            )
        return info

    def _guarded(self, rel: str, read: Callable[[Any], _T], info: zipfile.ZipInfo) -> _T:
        """`read(stream)` of the record, zip and zlib failures as ArchiveErrors."""
        with _reading(rel), self._zip.open(info) as stream:
            return read(stream)

    @staticmethod
    def _within(rel: str, data: _B, limit: int) -> _B:
        if len(data) > limit:
            raise ArchiveError(
                f"record {rel} decompresses past the limit of {limit:,} bytes "
                "(its header understates its size: possibly a zip bomb)"
            )
        return data

    def read_text(self, rel: str, limit: int = MAX_SMALL_RECORD_BYTES) -> str:
        data = self.read_bytes(rel, limit)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArchiveError(f"record {rel} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None

    def read_json(self, rel: str, limit: int = MAX_JSON_BYTES) -> Any:
        return self._read_json(rel, limit)[0]

    def _read_json(self, rel: str, limit: int = MAX_JSON_BYTES, held: int = 0) -> tuple[Any, int]:
        """(document, its value count); `held`: values of programs already parsed."""
        from inspector.core.program.lean import str_width

        data = self.read_bytes(rel, limit)
        # Strings holding a character past U+00FF decode to 2 or 4 bytes a
        # character (lean.str_width): such text may be as big as what ASCII text
        # at the limit decodes to, no bigger (1 MB of `a` and an emoji: a 4 MB str).
        width = str_width(data)
        if len(data) * width > limit:
            past = "U+FFFF" if width == 4 else "U+00FF"
            raise ArchiveError(
                f"record {rel} holds {len(data):,} bytes of JSON whose strings hold characters "
                f"past {past}: decoded, they may take {width}x as many, over the limit of "
                f"{limit:,} bytes for such a record")
        values = json_value_count(data)
        if values + held > MAX_JSON_VALUES:
            also = f" (plus {held:,} in programs already open)" if held else ""
            raise ArchiveError(
                f"record {rel} holds about {values:,} JSON values{also}, over the limit of "
                f"{MAX_JSON_VALUES:,} values in memory at once")
        try:
            return orjson.loads(data), values
        except orjson.JSONDecodeError as exc:
            legacy = _loads_bare_constants(data)
            if legacy is not None:
                return legacy, values
            msg = str(exc)
            # orjson 3.9 said "recursion limit", 3.10+ says "depth limit exceeded"
            if "recursion" in msg.lower() or "depth limit" in msg.lower():
                raise ArchiveError(
                    f"record {rel} nests JSON deeper than the limit of {MAX_JSON_DEPTH} levels"
                ) from None
            raise ArchiveError(f"record {rel} is not valid JSON ({msg})") from None

    def program_path(self, name: str) -> str:
        if name not in self.program_names:
            known = ", ".join(self.program_names) or "none"
            raise ArchiveError(f"no program named {name!r} in this archive (programs: {known})")
        return _LEGACY_PROGRAM if self.layout == "legacy" else f"models/{name}.json"

    def program_json(self, name: str) -> dict[str, Any]:
        """The program's JSON document, decoded whole (run, check, profile, retarget)."""
        return self.program_doc(name, self.whole_program_path(name))

    def program_doc(self, name: str, path: str) -> dict[str, Any]:
        """Program `name`'s JSON at `path`, decoded whole, its values counted with
        those of the programs parsed (MAX_JSON_VALUES holds for all at once)."""
        doc, values = self._read_json(path, held=self.cache.held(name))
        self.cache.count(name, values)
        if not isinstance(doc, dict):
            raise ArchiveError(f"program {name!r} is not a JSON object")
        return doc

    def whole_program_path(self, name: str) -> str:
        """program_path(name), for a reader that decodes the program's JSON whole
        (run, check, profile, retarget): up to MAX_JSON_BYTES, where the listing's
        lean parse reads up to MAX_PROGRAM_BYTES. A genuine program between the
        two is told so, not refused as a record past a limit."""
        path = self.program_path(name)
        info = self._entry(path)
        if info is not None and MAX_JSON_BYTES < info.file_size <= MAX_PROGRAM_BYTES:
            raise ArchiveError(
                f"program {name!r} is {info.file_size / (1 << 20):,.0f} MiB of JSON: running, "
                f"checking, profiling or retargeting a program reads it whole, up to "
                f"{MAX_JSON_BYTES >> 20} MiB (torch.export.load would build many GB from it); "
                f"info, list, audit and the window read programs up to "
                f"{MAX_PROGRAM_BYTES >> 20} MiB")
        return path

    def program_text(self, name: str) -> bytes | bytearray:
        """A program's JSON text, unparsed (up to MAX_PROGRAM_BYTES)."""
        return self.read_buffer(self.program_path(name), MAX_PROGRAM_BYTES)

    def program(self, name: str) -> Program:
        """The parsed program (cached: the listing, search and audit share it;
        core/program_cache.py). Thread-safe: a second caller waits for the first's parse."""
        return self.cache.get(name)

    def program_buffer(self, name: str) -> tuple[bytes | bytearray, LateCheck]:
        """Program `name`'s text for a parse (up to MAX_PROGRAM_BYTES), its CRC
        checked alongside the parse (the LateCheck)."""
        return self.read_buffer_checked_later(self.program_path(name), MAX_PROGRAM_BYTES,
                                              alongside=False)

    def program_ends(self, name: str, head: int, key: bytes) -> bytes | None:
        """read_ends of program `name`'s record."""
        return self.read_ends(self.program_path(name), head, key)

    def read_ends(self, rel: str, head: int, key: bytes) -> bytes | None:
        """A big stored record's first `head` bytes and its last ones back to (and
        with) the last `key` in them, joined, its middle not read: what a reader of
        both its ends needs (program/head.py), for a part of the reading. None where
        the record is not stored, or not bigger than twice `head`, or its second
        half holds no `key`, or it cannot be read (its whole read says why)."""
        info = self._open_entry(rel, MAX_PROGRAM_BYTES)
        fileno = self._stored_fileno(info)
        if fileno is None or info.file_size <= 2 * head:
            return None
        try:
            return self._guarded(rel, lambda _s: _read_stored_ends(fileno(), info, head, key), info)
        except ArchiveError:
            return None

    def program_head(self, name: str, nodes: int | None = None) -> Program | None:
        """Program `name` cut to its first nodes, from the head of its text alone
        (program/head.py: tens of milliseconds where the parse takes a second),
        for the first lines of its listing before the program is parsed; None
        where its text does not give one, or it is parsed already (`nodes`:
        program/head.HEAD_NODES by default). Of a big stored text only its two
        ends are read (read_ends); another is read whole and kept for
        program(name). Its CRC is checked by that parse: the head may come from
        a damaged file, which the parse then refuses."""
        return self.cache.head(name, nodes)

    def forget_program(self, name: str) -> None:
        """Drop the cached parse of `name` (a CLI listing one program after another)."""
        self.cache.forget(name)

    def programs(self) -> Iterator[Program]:
        return iter(self.cache)

    def payload_config(self, name: str, which: str) -> dict[str, Any]:
        """`weights` or `constants` config of a program: {fqn: PayloadMeta dict}.
        Empty when the archive has none (legacy layout, or no constants)."""
        rel = f"data/{which}/{name}_{which}_config.json"
        if not self.has(rel):
            return {}
        doc = self.read_json(rel)
        config = doc.get("config") if isinstance(doc, dict) else None
        if not isinstance(config, dict):
            raise ArchiveError(f"record {rel} has no 'config' object")
        return config

    def extra_names(self) -> list[str]:
        return [r.path[len("extra/"):] for r in self.records if r.kind == EXTRA]

    def read_extra(self, name: str, limit: int = 16 * 1024 * 1024) -> str:
        return self.read_text(f"extra/{name}", limit)

    @property
    def total_size(self) -> int:
        return sum(r.size for r in self.records)


def _read_stored(fd: int, info: zipfile.ZipInfo) -> bytes:
    """A stored entry's bytes, read where its local header says they start
    (zipfile.open has checked that header); its CRC is for _Crc to check."""
    return _pread(fd, info.file_size, _stored_start(fd, info))


def _stored_start(fd: int, info: zipfile.ZipInfo) -> int:
    header = os.pread(fd, zipfile.sizeFileHeader, info.header_offset)
    if len(header) != zipfile.sizeFileHeader:
        raise EOFError("truncated local header")
    return (info.header_offset + zipfile.sizeFileHeader
            + int.from_bytes(header[26:28], "little") + int.from_bytes(header[28:30], "little"))


def _pread(fd: int, size: int, at: int) -> bytes:
    data = os.pread(fd, size, at)
    if len(data) != size:
        raise EOFError(f"{size - len(data):,} bytes missing at the end")
    return data


def _read_stored_ends(fd: int, info: zipfile.ZipInfo, head: int, key: bytes,
                      step: int = 32 * 1024 * 1024) -> bytes | None:
    """Archive.read_ends of a stored entry: its first `head` bytes joined to its
    last ones back to its last `key` (read backwards a step at a time, in its
    second half only)."""
    start, size = _stored_start(fd, info), info.file_size
    first = _pread(fd, head, start)
    chunks: list[bytes] = []
    end = size
    while end > size // 2:
        at = max(size // 2, end - step)
        chunk = _pread(fd, end - at, start + at)
        across = chunk[1 - len(key):] + chunks[0][:len(key) - 1] if chunks else b""
        if key in across or chunk.rfind(key) >= 0:  # (across: a key split by the step)
            return b"".join([first, chunk, *chunks])
        chunks.insert(0, chunk)
        end = at
    return None


@contextmanager
def _reading(rel: str) -> Iterator[None]:
    """Zip and zlib failures while reading record `rel`, as ArchiveErrors."""
    try:
        yield
    except NotImplementedError as exc:
        raise ArchiveError(f"record {rel} uses a compression method this reader "
                           f"does not support ({exc})") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError,
            RuntimeError, ValueError) as exc:
        raise ArchiveError(f"record {rel} cannot be read ({_reason(exc)})") from None
    except Exception as exc:  # zlib.error and friends from a corrupt stream
        raise ArchiveError(f"record {rel} is corrupt ({_reason(exc)})") from None


class LateCheck:
    """Archive.read_buffer_checked_later's check of a stored entry's bytes:
    `start()` computes their CRC on its own thread; calling the check raises
    ArchiveError if they are not what the archive stored (computing the CRC
    then, if it was not started). Without `info`: a check already made (zipfile
    checked a compressed entry's CRC as it read)."""

    __slots__ = ("_rel", "_info", "_data", "_crc")

    def __init__(self, rel: str, info: zipfile.ZipInfo | None = None,
                 data: bytes | None = None) -> None:
        self._rel, self._info, self._data = rel, info, data
        self._crc: _Crc | None = None

    def start(self) -> None:
        if self._crc is None and self._data is not None:
            self._crc, self._data = _Crc(self._data, alongside=True), None

    def __call__(self) -> None:
        if self._info is None:
            return
        if self._crc is None:
            self._crc, self._data = _Crc(self._data or b"", alongside=False), None
        with _reading(self._rel):
            self._crc.check(self._info)


class _Crc:
    """The CRC-32 of `data`, computed now or on its own thread, checked as
    zipfile checks it."""

    __slots__ = ("_value", "_thread")

    def __init__(self, data: bytes, alongside: bool) -> None:
        self._value: int | None = None
        self._thread: threading.Thread | None = None
        if alongside and len(data) >= _CRC_ALONGSIDE_BYTES:
            self._thread = threading.Thread(target=self._compute, args=(data,),
                                            name="pt2i-crc", daemon=True)
            self._thread.start()
        else:
            self._compute(data)

    def _compute(self, data: bytes) -> None:
        self._value = zlib.crc32(data)

    def check(self, info: zipfile.ZipInfo) -> None:
        if self._thread is not None:
            self._thread.join()
        if self._value != info.CRC:
            raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")


# A thread's start is worth it only for a CRC of some milliseconds.
_CRC_ALONGSIDE_BYTES = 8 * 1024 * 1024


def open_archive(path: str | Path) -> Archive:
    """Open and describe an archive. Reads the central directory and the small
    metadata and config records; programs are parsed on demand."""
    path = Path(path)
    if path.is_dir():
        raise ArchiveError(f"{path} is a folder, not a .pt2 file")
    if not path.exists():
        raise ArchiveError(f"{path} does not exist")
    try:
        size = path.stat().st_size
        if size == 0:
            raise ArchiveError(f"{path.name} is empty (0 bytes): not a .pt2 archive")
        end = _check_entry_count(path)
        zf = zipfile.ZipFile(path)
    except ArchiveError:
        raise
    except zipfile.BadZipFile as exc:
        raise ArchiveError(f"{path.name} is not a zip file, so not a .pt2 archive ({_reason(exc)})") from None
    except (OSError, EOFError, ValueError, NotImplementedError, zipfile.LargeZipFile) as exc:
        raise ArchiveError(f"{path.name} cannot be read ({_reason(exc)})") from None
    try:
        _check_start(path, zf, end)
        return _describe(path, zf)
    except BaseException:
        zf.close()
        raise


def _check_entry_count(path: Path) -> list[Any]:
    """Refuse archives with too many entries *before* zipfile builds an object
    per entry (the end-of-central-directory record states the count)."""
    with path.open("rb") as fp:
        try:
            end = zipfile._EndRecData(fp)  # stable since Python 2; no public equivalent
        except (OSError, ValueError, EOFError):
            end = None
    if not end:
        if _starts_like_pt2(path):
            raise ArchiveError(
                f"{path.name} is an incomplete archive (its zip directory is missing: the file "
                f"stops after {path.stat().st_size:,} bytes, as when torch's save is "
                "interrupted or a copy is cut short; save or copy it again)")
        raise ArchiveError(f"{path.name} is not a zip file, so not a .pt2 archive "
                           "(no end-of-archive record: not a zip, or truncated)")
    count = end[zipfile._ECD_ENTRIES_TOTAL]
    if count > MAX_ENTRIES:
        raise ArchiveError(f"{path.name} lists {count:,} entries, over the limit of "
                           f"{MAX_ENTRIES:,} entries per archive")
    return end


def _check_start(path: Path, zf: zipfile.ZipFile, end: list[Any]) -> None:
    """Refuse bytes before the zip. zipfile then shifts every offset by their
    length (it tolerates self-extractors); torch's reader (miniz) reads the
    offsets as written. A file can so hold two central directories of the same
    size, one that we would vet and one that torch would load."""
    shift = getattr(zf, "start_dir", end[zipfile._ECD_OFFSET]) - end[zipfile._ECD_OFFSET]
    # A negative shift is a file cut short before its directory (records missing,
    # not moved): the records that remain are read alike, and reading a missing
    # one fails with its own message.
    if shift > 0:
        raise ArchiveError(
            f"{path.name} has {shift:,} bytes before its zip data (the offsets its "
            "directory states are not where its records are): zip readers disagree on "
            "which records it holds, so refusing it")


def fold_name(name: str) -> str:
    """A name as torch's zip reader (miniz) compares it: ASCII letters folded,
    every other character kept (miniz lowers bytes with an ASCII tolower)."""
    if name.isascii():
        return name.lower()  # the same as ASCII folding, and fast
    return name.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


# External attributes that mark a directory: MS-DOS FILE_ATTRIBUTE_DIRECTORY in
# the low byte, S_IFDIR in the Unix mode of the high 16 bits. miniz honours the
# DOS bit and then extracts no data at all (the caller gets whatever was in its
# buffer), while zipfile reads the bytes: the two disagree on the record.
_DOS_DIRECTORY = 0x10
_UNIX_TYPE_MASK, _UNIX_DIRECTORY = 0o170000, 0o040000
_UTF8_FLAG = 0x800


def _starts_like_pt2(path: Path) -> bool:
    """Whether a file without a zip directory begins with a record torch's
    writer puts first (`<top>/data/...`, `<top>/models/...`): a save that
    stopped midway, not some other file."""
    with path.open("rb") as fp:
        head = fp.read(30 + MAX_NAME_LENGTH)
    if len(head) < 30 or head[:4] != b"PK\x03\x04":
        return False
    size = int.from_bytes(head[26:28], "little")
    name = head[30:30 + size].decode("utf-8", "replace")
    return any(part in name for part in ("/data/", "/models/", "/.data/", "archive_format",
                                         _LEGACY_PROGRAM))


def _incomplete(path: Path, rels: list[str]) -> str:
    """Why a pt2 archive without programs looks half-written, or "" when it
    does not: torch writes each program's weights, their config, constants,
    then models/<name>.json; an archive with payloads but no program JSON is
    one whose save stopped in between (torch's writer still closes the zip)."""
    payloads = [r for r in rels if r.startswith(("data/weights/", "data/constants/"))]
    if not payloads:
        return ""
    names = sorted({r.split("/")[-1].rsplit("_", 2)[0] for r in payloads
                    if r.endswith(("_weights_config.json", "_constants_config.json"))})
    missing = [f"models/{n}.json" for n in names] or ["models/<name>.json"]
    for n in names or []:
        for which in ("weights", "constants"):
            rel = f"data/{which}/{n}_{which}_config.json"
            if rel not in rels:
                missing.append(rel)
    if not names and not any(r.endswith("_weights_config.json") for r in rels):
        missing.append("the weights config")
    return (f"{path.name} is an incomplete archive ({', '.join(missing)} missing: it holds "
            "weights but no programs, as when torch's save stopped before writing them; "
            "save it again)")


def _describe(path: Path, zf: zipfile.ZipFile) -> Archive:
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise ArchiveError(f"{path.name} has {len(infos):,} entries, over the limit of {MAX_ENTRIES:,}")
    for info in infos:
        _check_name(path, info.filename)
        _check_entry(path, info)
    by_folded = _check_names(path, infos)
    files = [i for i in infos if not i.is_dir()]
    if not files:
        raise ArchiveError(f"{path.name} is an empty zip: not a .pt2 archive")

    top = _check_top(path, infos)
    rels = [i.filename[len(top):] for i in files]
    layout = _find_layout(path, rels)
    archive = Archive(path=path, top=top, layout=layout, archive_version=None,
                      byteorder=None, records=[], program_names=[], _zip=zf,
                      _by_folded=by_folded)
    folded_rels = [fold_name(r) for r in rels]
    folded = set(folded_rels)
    if layout == "pt2":
        fmt = archive.read_text("archive_format").strip()
        if fmt != "pt2":
            raise ArchiveError(f"{path.name}: archive_format is {fmt[:40]!r}, expected 'pt2'")
        archive.archive_version = _read_version(archive, folded)
        if "byteorder" in folded:
            archive.byteorder = archive.read_text("byteorder").strip()[:16]
        archive.program_names = sorted(
            r[len("models/"):-len(".json")] for r, low in zip(rels, folded_rels)
            if low.startswith("models/") and low.endswith(".json")
            and r.count("/") == 1 and len(r) > len("models/.json")
        )
        # An AOTInductor package (aoti_compile_and_package) may hold only
        # compiled models under data/aotinductor/: described, never loaded.
        if not archive.program_names and not any(r.startswith(_AOTI_DIR) for r in rels):
            raise ArchiveError(_incomplete(path, rels)
                               or f"{path.name} holds no programs (no models/<name>.json record)")
    else:
        archive.program_names = ["model"]

    pickled = _pickled_payloads(archive, folded)
    archive.records = [_classify(rel, low, i, pickled)
                       for rel, low, i in zip(rels, folded_rels, files)]
    return archive


def _check_name(path: Path, name: str) -> None:
    size = len(name.encode("utf-8", "surrogatepass"))
    if size > MAX_NAME_LENGTH:
        raise ArchiveError(f"{path.name} has an entry name of {size:,} bytes, over the limit "
                           f"of {MAX_NAME_LENGTH} bytes (torch's zip reader cuts longer names)")
    norm = name.replace("\\", "/")
    if (norm.startswith("/") or (len(norm) > 1 and norm[1] == ":")
            or ".." in norm.split("/") or "\x00" in norm):
        raise ArchiveError(f"{path.name} has an entry that escapes the archive ({name[:120]!r}): "
                           "refusing it")


def _check_entry(path: Path, info: zipfile.ZipInfo) -> None:
    """Entry flags on which zipfile and torch's reader (miniz) read differently."""
    name = info.filename
    if not name.isascii() and not info.flag_bits & _UTF8_FLAG:
        # zipfile decodes such a name as cp437, miniz compares its raw (UTF-8) bytes.
        raise ArchiveError(
            f"{path.name} has an entry whose non-ASCII name is not marked UTF-8 "
            f"({name[:120]!r}): zip readers disagree on what it is called, so refusing it")
    is_dir_attr = bool(info.external_attr & _DOS_DIRECTORY) or (
        (info.external_attr >> 16) & _UNIX_TYPE_MASK == _UNIX_DIRECTORY)
    if info.is_dir() != is_dir_attr and not (info.is_dir() and info.file_size == 0):
        raise ArchiveError(
            f"{path.name} has an entry marked as a folder that holds data, or a folder "
            f"name marked as a file ({name[:120]!r}): zip readers disagree on its "
            "contents, so refusing it")
    if info.is_dir() and (info.file_size or info.compress_size):
        raise ArchiveError(
            f"{path.name} has a folder entry that holds {info.file_size:,} bytes "
            f"({name[:120]!r}): zip readers disagree on its contents, so refusing it")


def _check_names(path: Path, infos: list[zipfile.ZipInfo]) -> dict[str, zipfile.ZipInfo]:
    """Refuse names torch's reader could confuse: duplicates, and names that
    differ only by case (miniz finds names case-insensitively: which of the two
    it returns is not the one we vetted). Returns the folded-name table."""
    seen: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        key = fold_name(info.filename)
        other = seen.get(key)
        if other is not None:
            if other.filename == info.filename:
                raise ArchiveError(f"{path.name} holds two entries named {info.filename!r}: "
                                   "refusing an ambiguous archive")
            raise ArchiveError(
                f"{path.name} holds entries whose names differ only by case "
                f"({other.filename[:120]!r} and {info.filename[:120]!r}): torch's reader "
                "finds names case-insensitively, so refusing an ambiguous archive")
        seen[key] = info
    return seen


def _check_top(path: Path, infos: list[zipfile.ZipInfo]) -> str:
    """The archive's one top folder: torch's reader takes it from the zip's
    *first* entry and reads every record from it. An entry outside it is refused:
    what runs must be what we vetted. ("" when the first entry has no folder:
    torch refuses such a zip, so nothing in it can be run.)"""
    first = infos[0].filename
    top = first[: first.index("/") + 1] if "/" in first else ""
    for info in infos:
        if not info.filename.startswith(top):
            raise ArchiveError(
                f"{path.name} has an entry outside its top folder {top!r} "
                f"({info.filename[:120]!r}): torch reads only the folder of the zip's first "
                "entry, so refusing an archive with parts in two places")
    return top


def _find_layout(path: Path, rels: list[str]) -> str:
    folded = {fold_name(r) for r in rels}
    if "archive_format" in folded:
        return "pt2"
    if _LEGACY_PROGRAM in folded:
        return "legacy"
    if any(r.endswith("/archive_format") or r.endswith("/" + _LEGACY_PROGRAM) for r in folded):
        raise ArchiveError(f"{path.name} keeps its archive_format below its top folder: "
                           "not a .pt2 archive torch can read")
    raise ArchiveError(f"{path.name} is a zip file but not a .pt2 archive "
                       "(no archive_format record and no serialized_exported_program.json)")


def _read_version(archive: Archive, rels: list[str]) -> int:
    if "archive_version" in rels:
        text = archive.read_text("archive_version").strip()
    else:
        text = "0"  # torch treats a missing archive_version as version 0
    if not text.isdigit() or len(text) > 6:
        raise ArchiveError(f"archive_version is {text[:40]!r}, not a version number")
    version = int(text)
    if version > SUPPORTED_ARCHIVE_VERSION:
        raise ArchiveError(f"archive_version {version} is newer than this inspector supports "
                           f"(up to {SUPPORTED_ARCHIVE_VERSION}): update pt2-inspector")
    return version


def _pickled_payloads(archive: Archive, folded: set[str]) -> dict[str, str]:
    """Records that torch unpickles, from the weights/constants configs:
    {folded record path: why}. A config we cannot read makes its payloads 'risky'
    rather than failing the whole archive: we cannot vouch for them."""
    pickled: dict[str, str] = {}
    for name in archive.program_names if archive.layout == "pt2" else []:
        for which in ("weights", "constants"):
            rel = f"data/{which}/{name}_{which}_config.json"
            if fold_name(rel) not in folded:
                continue
            try:
                config = archive.payload_config(name, which)
            except ArchiveError:
                continue
            for fqn, meta in config.items():
                if isinstance(meta, dict) and meta.get("use_pickle") and isinstance(meta.get("path_name"), str):
                    pickled[fold_name(f"data/{which}/{meta['path_name']}")] = (
                        f"{which[:-1]} {fqn!s:.80} is stored as a pickle (torch.load, weights_only=False)"
                    )
    return pickled


def _classify(rel: str, low: str, info: zipfile.ZipInfo, pickled: dict[str, str]) -> Record:
    """What torch would do with the record. Compared case-insensitively: torch's
    reader finds `opaque_obj_0` stored as `OPAQUE_OBJ_0`."""
    def rec(kind: str, risk: bool = False, why: str = "") -> Record:
        return Record(rel, info.file_size, info.compress_size, kind, risk, why)

    base = posixpath.basename(low)  # low: fold_name(rel)
    if low in _ARCHIVE_META_NAMES:
        return rec(ARCHIVE_META)
    if low.startswith("models/") and low.endswith(".json") or low == _LEGACY_PROGRAM:
        return rec(PROGRAM)
    if low in _LEGACY_PICKLES:
        return rec(LEGACY_PICKLE, True, f"legacy {_LEGACY_PICKLES[low]}: unpickled by torch.load")
    if low.startswith("data/sample_inputs/"):
        return rec(SAMPLE_INPUTS, True, "sample inputs: unpickled by torch.export.load")
    if rel.startswith(_AOTI_DIR):
        if base.endswith(_LIBRARY_SUFFIXES) or ".so." in base:
            return rec(AOTI_BINARY, True, "native code: torch dlopens and runs it when it loads "
                       "the package (aoti_load_package); pt2-inspector never loads it")
        if base.endswith(_GPU_BINARY_SUFFIXES):
            return rec(AOTI_BINARY, True, "GPU kernel code: the AOTInductor runtime loads it "
                       "onto the device and runs it; pt2-inspector never loads it")
        return rec(AOTI_FILE)
    if low.startswith("extra/"):
        return rec(EXTRA)
    if low.startswith("data/weights/"):
        if low.endswith("_weights_config.json"):
            return rec(WEIGHTS_CONFIG)
        if low in pickled:
            return rec(PICKLED_WEIGHT, True, pickled[low])
        if base.endswith(".pt"):
            return rec(LEGACY_PICKLE, True, "legacy weights file: unpickled by torch.load")
        return rec(WEIGHT)
    if low.startswith("data/constants/"):
        if low.endswith("_constants_config.json"):
            return rec(CONSTANTS_CONFIG)
        if base.startswith(TORCHBIND_PREFIX):
            return rec(TORCHBIND_OBJECT, True, "TorchBind object: unpickled by torch._C._pickle_load_obj")
        if base.startswith(OPAQUE_PREFIX):
            return rec(OPAQUE_OBJECT, True, "opaque object: unpickled by pickle.loads")
        if low in pickled:
            return rec(PICKLED_CONSTANT, True, pickled[low])
        if base.endswith(".pt"):
            return rec(LEGACY_PICKLE, True, "legacy constants file: unpickled by torch.load")
        return rec(CONSTANT)
    if base.endswith((".pt", ".pth", ".pkl", ".pickle")):
        return rec(UNKNOWN, True, "looks like a pickle")
    if base.endswith(_LIBRARY_SUFFIXES):
        return rec(UNKNOWN, True, "compiled library")
    return rec(UNKNOWN)


def _constant_text(token: str) -> str:
    return token  # "Infinity", "-Infinity", "NaN": as newer torch writes them (strings)


def _bounded_int(text: str) -> int:
    """Integers as orjson takes them (64 bits), not giant Python ints."""
    value = int(text)
    if not -(2 ** 63) <= value < 2 ** 64:
        raise ValueError(f"integer {text[:20]}... does not fit in 64 bits")
    return value


def _loads_bare_constants(data: bytes) -> Any | None:
    """torch <= 2.6 wrote bare `Infinity` / `-Infinity` / `NaN` tokens (Python's
    json.dumps does), which orjson rejects as JSON. Parse such a record with
    the standard library, turning each token into the string newer torch
    writes, or return None. Still bounded: the value count was checked before,
    the C scanner raises RecursionError past the interpreter's recursion limit
    (under MAX_JSON_DEPTH), and integers past 64 bits are refused as orjson does."""
    if b"Infinity" not in data and b"NaN" not in data:
        return None
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_constant_text,
                          parse_int=_bounded_int)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None


def json_value_count(data: bytes) -> int:
    """Upper bound on the values a JSON text parses into: every value but the
    first of a container follows a `,`, and every container opens with `{`/`[`.
    bytes.count runs at memory speed (~50 ms for 180 MB)."""
    return data.count(b",") + data.count(b"{") + data.count(b"[") + 1


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."
