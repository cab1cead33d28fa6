"""Byte-level zip surgery for the hostile corpus.

Python's zipfile writes honest archives only. The tricks we need (a lying size,
a bad CRC, the encryption flag, an unknown compression method, a bomb whose
header understates it) are made by writing an honest archive and then patching
the fields of one entry in both of its headers: the local file header (what a
streaming reader trusts) and the central directory (what zipfile trusts).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterable

# Offsets of fields inside each header (APPNOTE.TXT 4.3.7 and 4.3.12).
_LOCAL = {"flags": (6, "<H"), "method": (8, "<H"), "crc": (14, "<I"),
          "csize": (18, "<I"), "usize": (22, "<I")}
_CENTRAL = {"flags": (8, "<H"), "method": (10, "<H"), "crc": (16, "<I"),
            "csize": (20, "<I"), "usize": (24, "<I")}
_EOCD_SIG = b"PK\x05\x06"


def write_zip(entries: Iterable[tuple[str, bytes]], *, compress: int = zipfile.ZIP_STORED,
              allow_duplicates: bool = False) -> bytes:
    """An honest zip of (name, data) entries, in order. torch writes stored entries."""
    buf = io.BytesIO()
    import warnings

    with warnings.catch_warnings():
        # zipfile warns on duplicate names; writing them is the point of one case.
        warnings.simplefilter("ignore" if allow_duplicates else "error")
        with zipfile.ZipFile(buf, "w", compression=compress) as zf:
            for name, data in entries:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = compress
                zf.writestr(info, data)
    return buf.getvalue()


def _central_offsets(data: bytes) -> list[tuple[int, str, int]]:
    """(central record offset, name, local header offset) for every entry."""
    eocd = data.rfind(_EOCD_SIG)
    if eocd < 0:
        raise ValueError("no end-of-central-directory record")
    count, _size, start = struct.unpack_from("<HII", data, eocd + 10)
    out = []
    pos = start
    for _ in range(count):
        if data[pos:pos + 4] != b"PK\x01\x02":
            raise ValueError("central directory is not where the EOCD says")
        nlen, xlen, clen = struct.unpack_from("<HHH", data, pos + 28)
        local = struct.unpack_from("<I", data, pos + 42)[0]
        name = data[pos + 46:pos + 46 + nlen].decode("utf-8", "replace")
        out.append((pos, name, local))
        pos += 46 + nlen + xlen + clen
    return out


def patch_entry(data: bytes, name: str, *, local: bool = True, central: bool = True,
                **fields: int) -> bytes:
    """Set header fields (flags, method, crc, csize, usize) of the entry `name`."""
    buf = bytearray(data)
    hits = [(c, loc) for c, n, loc in _central_offsets(data) if n == name]
    if not hits:
        raise KeyError(name)
    for cpos, lpos in hits:
        for key, value in fields.items():
            if central:
                off, fmt = _CENTRAL[key]
                struct.pack_into(fmt, buf, cpos + off, value)
            if local:
                off, fmt = _LOCAL[key]
                struct.pack_into(fmt, buf, lpos + off, value)
    return bytes(buf)


def set_eocd_count(data: bytes, count: int) -> bytes:
    """Make the end-of-central-directory record claim `count` entries."""
    buf = bytearray(data)
    eocd = data.rfind(_EOCD_SIG)
    struct.pack_into("<HH", buf, eocd + 8, count & 0xFFFF, count & 0xFFFF)
    return bytes(buf)


def deflate_repeated(chunk: bytes, times: int) -> bytes:
    """Raw deflate of `chunk * times` without building it: one compressed block,
    flushed to a byte boundary with a reset dictionary, can be repeated as is.
    A 400 MB bomb costs about one chunk's compression time."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    return block * times + b"\x03\x00"  # an empty final fixed-Huffman block


def crc_repeated(chunk: bytes, times: int, prefix: bytes = b"", suffix: bytes = b"") -> int:
    crc = zlib.crc32(prefix)
    for _ in range(times):
        crc = zlib.crc32(chunk, crc)
    return zlib.crc32(suffix, crc)


def raw_entry_zip(entries: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip of pre-compressed entries: (name, payload, method, crc, declared usize).
    Lets a bomb be written without ever holding its decompressed bytes."""
    out = bytearray()
    central = bytearray()
    for name, payload, method, crc, usize in entries:
        raw = name.encode()
        offset = len(out)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0x21,
                           crc, len(payload), usize, len(raw), 0) + raw + payload
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0,
                               0x21, crc, len(payload), usize, len(raw), 0, 0, 0, 0, 0,
                               offset) + raw
    start = len(out)
    out += central
    count = len(entries)
    if count > 0xFFFF:  # zip64 end records carry the real count
        z64 = len(out)
        out += struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count,
                           len(central), start)
        out += struct.pack("<4sIQI", b"PK\x06\x07", 0, z64, 1)
        count = 0xFFFF
    out += struct.pack("<4sHHHHIIH", _EOCD_SIG, 0, 0, count, count, len(central), start, 0)
    return bytes(out)


def crafted_zip(entries: list[dict], *, prefix: bytes = b"") -> bytes:
    """A zip written field by field, for the tricks on which zip readers can
    disagree. Each entry is a dict: `name` (str, or bytes written as is), `data`,
    and optionally `flags` (general purpose bits: 0x8 data descriptor, 0x800
    UTF-8), `external_attr`, `made_by` (version made by; 0x031E = Unix),
    `zip64` (sizes in a zip64 extra field, 0xFFFFFFFF in the header fields).
    Entries are stored (method 0), written in the order given."""
    out = bytearray(prefix)
    central = bytearray()
    for e in entries:
        name = e["name"] if isinstance(e["name"], bytes) else e["name"].encode()
        data, flags = e.get("data", b""), e.get("flags", 0)
        crc = zlib.crc32(data)
        size32 = 0xFFFF_FFFF if e.get("zip64") else len(data)
        lextra = cextra = b""
        if e.get("zip64"):
            lextra = struct.pack("<HHQQ", 1, 16, len(data), len(data))
            cextra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), len(out))
        offset = 0xFFFF_FFFF if e.get("zip64") else len(out)
        local_fields = (0, 0, 0) if flags & 0x8 else (crc, size32, size32)
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 45 if e.get("zip64") else 20,
                           flags, 0, 0, 0x21, *local_fields, len(name), len(lextra))
        out += name + lextra + data
        if flags & 0x8:
            if e.get("zip64"):
                out += struct.pack("<4sIQQ", b"PK\x07\x08", crc, len(data), len(data))
            else:
                out += struct.pack("<4sIII", b"PK\x07\x08", crc, len(data), len(data))
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", e.get("made_by", 20),
                               45 if e.get("zip64") else 20, flags, 0, 0, 0x21, crc, size32,
                               size32, len(name), len(cextra), 0, 0, 0,
                               e.get("external_attr", 0), offset) + name + cextra
    start = len(out) - len(prefix)
    out += central
    out += struct.pack("<4sHHHHIIH", _EOCD_SIG, 0, 0, len(entries), len(entries),
                       len(central), start, 0)
    return bytes(out)


def two_directories(vetted: bytes, hidden: bytes) -> bytes:
    """One file, two archives: `hidden` first, then `vetted`, whose end record
    points at `hidden`'s central directory. zipfile sees bytes before the zip and
    shifts every offset by their length, so it reads `vetted`; a reader that takes
    the offsets as written (torch's, miniz) reads `hidden`. Both archives must hold
    the same names, so that their central directories have the same size."""
    h_eocd, v_eocd = hidden.rfind(_EOCD_SIG), vetted.rfind(_EOCD_SIG)
    h_count, h_size, h_start = struct.unpack_from("<HII", hidden, h_eocd + 10)
    v_count, v_size, v_start = struct.unpack_from("<HII", vetted, v_eocd + 10)
    if h_size != v_size:
        raise ValueError("the two central directories must have the same size")
    body = hidden[:h_eocd]  # hidden's entries and central directory
    shift = len(body) + v_start - h_start  # zipfile adds this to every offset
    fixed = bytearray(vetted)
    for cpos, _name, local in _central_offsets(vetted):
        struct.pack_into("<I", fixed, cpos + 42, local + len(body) - shift)
    struct.pack_into("<I", fixed, v_eocd + 16, h_start)  # where the directory "is"
    return body + bytes(fixed)
