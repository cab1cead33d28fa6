"""Safe reader for `.pt2` archives: zip + JSON only, under limits.

Opening an archive must never run anything from it. torch.export.load unpickles
sample inputs and some weights, loads TorchBind objects, dlopens AOTInductor
`.so` files and sympifies strings from the JSON. We only ever read the zip's
central directory and, on demand, the JSON records, through bounded streams. The
other records are described (path, size, kind, risk) but never decoded.

Every failure is an ArchiveError with a message a person can act on.
"""

from __future__ import annotations

import gc
import posixpath
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from inspector.core.errors import ArchiveError

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
# everything downstream; program.py enforces MAX_GRAPH_NESTING on top.
MAX_JSON_DEPTH = 1024
# Highest archive_version this inspector understands (torch 2.13 writes 0).
SUPPORTED_ARCHIVE_VERSION = 0
# Record names longer than this are not produced by torch and only hide tricks.
MAX_NAME_LENGTH = 1024

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


@dataclass(frozen=True)
class Record:
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


@dataclass
class Archive:
    """An opened `.pt2` archive. Use as a context manager or call close()."""

    path: Path
    top: str  # the top folder inside the zip ("" when entries are at the root)
    layout: str  # "pt2" or "legacy"
    archive_version: int | None
    byteorder: str | None
    records: list[Record]
    program_names: list[str]
    _zip: zipfile.ZipFile = field(repr=False)
    _programs: dict[str, Program] = field(default_factory=dict, repr=False)
    _program_values: dict[str, int] = field(default_factory=dict, repr=False)  # MAX_JSON_VALUES

    # -- lifetime --
    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading --
    def record(self, rel: str) -> Record | None:
        for rec in self.records:
            if rec.path == rel:
                return rec
        return None

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
        try:
            self._zip.getinfo(self.top + rel)
        except KeyError:
            return False
        return True

    def read_bytes(self, rel: str, limit: int) -> bytes:
        """Read one record through a bounded stream: at most `limit` bytes are
        decompressed, whatever the zip header claims."""
        name = self.top + rel
        try:
            info = self._zip.getinfo(name)
        except KeyError:
            raise ArchiveError(f"record {rel} is missing from the archive") from None
        if info.flag_bits & 0x1:
            raise ArchiveError(f"record {rel} is encrypted (encrypted archives are not supported)")
        if info.file_size > limit:
            raise ArchiveError(
                f"record {rel} declares {info.file_size:,} bytes, over the limit of "
                f"{limit:,} bytes for such a record"
            )
        try:
            with self._zip.open(info) as stream:
                # zipfile stops at the declared size, but decompresses up to
                # the amount asked per call: ask no more than the header
                # admits, or a lying 14 KB entry inflates 512 MB first.
                data = stream.read(min(limit, info.file_size) + 1)
        except NotImplementedError as exc:
            raise ArchiveError(f"record {rel} uses a compression method this reader "
                               f"does not support ({exc})") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError,
                RuntimeError, ValueError) as exc:
            raise ArchiveError(f"record {rel} cannot be read ({_reason(exc)})") from None
        except Exception as exc:  # zlib.error and friends from a corrupt stream
            raise ArchiveError(f"record {rel} is corrupt ({_reason(exc)})") from None
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
        data = self.read_bytes(rel, limit)
        values = json_value_count(data)
        if values + held > MAX_JSON_VALUES:
            also = f" (plus {held:,} in programs already open)" if held else ""
            raise ArchiveError(
                f"record {rel} holds about {values:,} JSON values{also}, over the limit of "
                f"{MAX_JSON_VALUES:,} values in memory at once")
        try:
            return orjson.loads(data), values
        except orjson.JSONDecodeError as exc:
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
        held = sum(self._program_values.get(n, 0) for n in self._programs if n != name)
        doc, values = self._read_json(self.program_path(name), held=held)
        self._program_values[name] = values
        if not isinstance(doc, dict):
            raise ArchiveError(f"program {name!r} is not a JSON object")
        return doc

    def program(self, name: str) -> Program:
        """The parsed program (cached: the listing, search and audit share it)."""
        if name not in self._programs:
            from inspector.core.program import parse_program

            # Parsing allocates millions of containers and frees none, so the
            # cyclic GC would rescan them over and over (about half the time
            # on a 100k-node program) for nothing to collect.
            was_enabled = gc.isenabled()
            gc.disable()
            try:
                self._programs[name] = parse_program(self.program_json(name), name, consume=True)
            finally:
                if was_enabled:
                    gc.enable()
        return self._programs[name]

    def programs(self) -> Iterator[Program]:
        for name in self.program_names:
            yield self.program(name)

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
        _check_entry_count(path)
        zf = zipfile.ZipFile(path)
    except ArchiveError:
        raise
    except zipfile.BadZipFile as exc:
        raise ArchiveError(f"{path.name} is not a zip file, so not a .pt2 archive ({_reason(exc)})") from None
    except (OSError, EOFError, ValueError, NotImplementedError, zipfile.LargeZipFile) as exc:
        raise ArchiveError(f"{path.name} cannot be read ({_reason(exc)})") from None
    try:
        return _describe(path, zf)
    except BaseException:
        zf.close()
        raise


def _check_entry_count(path: Path) -> None:
    """Refuse archives with too many entries *before* zipfile builds an object
    per entry (the end-of-central-directory record states the count)."""
    with path.open("rb") as fp:
        try:
            end = zipfile._EndRecData(fp)  # stable since Python 2; no public equivalent
        except (OSError, ValueError, EOFError):
            end = None
    if not end:
        raise ArchiveError(f"{path.name} is not a zip file, so not a .pt2 archive "
                           "(no end-of-archive record: not a zip, or truncated)")
    count = end[zipfile._ECD_ENTRIES_TOTAL]
    if count > MAX_ENTRIES:
        raise ArchiveError(f"{path.name} lists {count:,} entries, over the limit of "
                           f"{MAX_ENTRIES:,} entries per archive")


def _describe(path: Path, zf: zipfile.ZipFile) -> Archive:
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise ArchiveError(f"{path.name} has {len(infos):,} entries, over the limit of {MAX_ENTRIES:,}")
    names = [i.filename for i in infos]
    for name in names:
        _check_name(path, name)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ArchiveError(f"{path.name} holds two entries named {name!r}: "
                               "refusing an ambiguous archive")
        seen.add(name)
    files = [i for i in infos if not i.is_dir()]
    if not files:
        raise ArchiveError(f"{path.name} is an empty zip: not a .pt2 archive")

    top, layout = _find_top(path, [i.filename for i in files])
    archive = Archive(path=path, top=top, layout=layout, archive_version=None,
                      byteorder=None, records=[], program_names=[], _zip=zf)
    rels = [i.filename[len(top):] for i in files if i.filename.startswith(top)]
    if layout == "pt2":
        fmt = archive.read_text("archive_format").strip()
        if fmt != "pt2":
            raise ArchiveError(f"{path.name}: archive_format is {fmt[:40]!r}, expected 'pt2'")
        archive.archive_version = _read_version(archive, rels)
        if "byteorder" in rels:
            archive.byteorder = archive.read_text("byteorder").strip()[:16]
        archive.program_names = sorted(
            r[len("models/"):-len(".json")] for r in rels
            if r.startswith("models/") and r.endswith(".json") and r.count("/") == 1
            and len(r) > len("models/.json")
        )
        if not archive.program_names:
            raise ArchiveError(f"{path.name} holds no programs (no models/<name>.json record)")
    else:
        archive.program_names = ["model"]

    pickled = _pickled_payloads(archive, rels)
    sizes = {i.filename[len(top):]: i for i in files if i.filename.startswith(top)}
    archive.records = [_classify(rel, sizes[rel], pickled) for rel in rels]
    return archive


def _check_name(path: Path, name: str) -> None:
    if len(name) > MAX_NAME_LENGTH:
        raise ArchiveError(f"{path.name} has an entry name of {len(name)} characters "
                           f"(limit {MAX_NAME_LENGTH})")
    norm = name.replace("\\", "/")
    if (norm.startswith("/") or (len(norm) > 1 and norm[1] == ":")
            or ".." in norm.split("/") or "\x00" in norm):
        raise ArchiveError(f"{path.name} has an entry that escapes the archive ({name[:120]!r}): "
                           "refusing it")


def _find_top(path: Path, names: list[str]) -> tuple[str, str]:
    """The single top folder torch writes (the file's stem, or 'archive')."""
    for name in names:
        for marker, layout in (("archive_format", "pt2"), (_LEGACY_PROGRAM, "legacy")):
            if name == marker or name.endswith("/" + marker):
                top = name[: len(name) - len(marker)]
                if top.count("/") <= 1:
                    return top, layout
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


def _pickled_payloads(archive: Archive, rels: list[str]) -> dict[str, str]:
    """Records that torch unpickles, from the weights/constants configs:
    {record path: why}. A config we cannot read makes its payloads 'risky'
    rather than failing the whole archive: we cannot vouch for them."""
    pickled: dict[str, str] = {}
    present = set(rels)
    for name in archive.program_names if archive.layout == "pt2" else []:
        for which in ("weights", "constants"):
            rel = f"data/{which}/{name}_{which}_config.json"
            if rel not in present:
                continue
            try:
                config = archive.payload_config(name, which)
            except ArchiveError:
                continue
            for fqn, meta in config.items():
                if isinstance(meta, dict) and meta.get("use_pickle") and isinstance(meta.get("path_name"), str):
                    pickled[f"data/{which}/{meta['path_name']}"] = (
                        f"{which[:-1]} {fqn!s:.80} is stored as a pickle (torch.load, weights_only=False)"
                    )
    return pickled


def _classify(rel: str, info: zipfile.ZipInfo, pickled: dict[str, str]) -> Record:
    def rec(kind: str, risk: bool = False, why: str = "") -> Record:
        return Record(rel, info.file_size, info.compress_size, kind, risk, why)

    base = posixpath.basename(rel)
    if rel in _ARCHIVE_META_NAMES:
        return rec(ARCHIVE_META)
    if rel.startswith("models/") and rel.endswith(".json") or rel == _LEGACY_PROGRAM:
        return rec(PROGRAM)
    if rel in _LEGACY_PICKLES:
        return rec(LEGACY_PICKLE, True, f"legacy {_LEGACY_PICKLES[rel]}: unpickled by torch.load")
    if rel.startswith("data/sample_inputs/"):
        return rec(SAMPLE_INPUTS, True, "sample inputs: unpickled by torch.export.load")
    if rel.startswith("data/aotinductor/"):
        if base.endswith(_LIBRARY_SUFFIXES) or ".so." in base:
            return rec(AOTI_BINARY, True, "compiled library: dlopened by the AOTInductor loader")
        return rec(AOTI_FILE)
    if rel.startswith("extra/"):
        return rec(EXTRA)
    if rel.startswith("data/weights/"):
        if rel.endswith("_weights_config.json"):
            return rec(WEIGHTS_CONFIG)
        if rel in pickled:
            return rec(PICKLED_WEIGHT, True, pickled[rel])
        if base.endswith(".pt"):
            return rec(LEGACY_PICKLE, True, "legacy weights file: unpickled by torch.load")
        return rec(WEIGHT)
    if rel.startswith("data/constants/"):
        if rel.endswith("_constants_config.json"):
            return rec(CONSTANTS_CONFIG)
        if base.startswith("custom_obj_"):
            return rec(TORCHBIND_OBJECT, True, "TorchBind object: unpickled by torch._C._pickle_load_obj")
        if base.startswith("opaque_obj_"):
            return rec(OPAQUE_OBJECT, True, "opaque object: unpickled by pickle.loads")
        if rel in pickled:
            return rec(PICKLED_CONSTANT, True, pickled[rel])
        if base.endswith(".pt"):
            return rec(LEGACY_PICKLE, True, "legacy constants file: unpickled by torch.load")
        return rec(CONSTANT)
    if base.endswith((".pt", ".pth", ".pkl", ".pickle")):
        return rec(UNKNOWN, True, "looks like a pickle")
    if base.endswith(_LIBRARY_SUFFIXES):
        return rec(UNKNOWN, True, "compiled library")
    return rec(UNKNOWN)


def json_value_count(data: bytes) -> int:
    """Upper bound on the values a JSON text parses into: every value but the
    first of a container follows a `,`, and every container opens with `{`/`[`.
    bytes.count runs at memory speed (~50 ms for 180 MB)."""
    return data.count(b",") + data.count(b"{") + data.count(b"[") + 1


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."
