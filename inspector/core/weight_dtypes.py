"""Raw tensor bytes -> numpy values, for every dtype a `.pt2` can store, without torch.

numpy has no bfloat16 and no float8 types, and no complex32. We read each record
in a numpy *storage* type of the same width (uint16 for bfloat16, uint8 for the
float8 variants, float16 pairs for complex32) and convert chunk by chunk to a
type numpy computes with:
- bfloat16 is the top half of a float32: widening the uint16 by a 16-bit shift
  is exact.
- a float8 byte has 256 values: a table of their float32 values (built from the
  bit layout, checked against torch in tests) converts exactly.
Byte order comes from the archive's `byteorder` record, never from this machine.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from inspector.core.dtypes import DTYPE_NAMES

# Schema ScalarType codes (torch/_export/serde/schema.py) -> (storage type, kind).
# kind says how values are computed with: "float" (converted to float32 or kept
# float64), "int", "bool", "complex".
_STORAGE: dict[int, tuple[str, str]] = {
    1: ("u1", "int"), 2: ("i1", "int"), 3: ("i2", "int"), 4: ("i4", "int"), 5: ("i8", "int"),
    28: ("u2", "int"), 34: ("u4", "int"), 35: ("u8", "int"),
    6: ("f2", "float"), 7: ("f4", "float"), 8: ("f8", "float"),
    13: ("u2", "float"),  # bfloat16
    29: ("u1", "float"), 30: ("u1", "float"), 31: ("u1", "float"), 32: ("u1", "float"),
    33: ("u1", "float"),  # the float8 variants
    12: ("u1", "bool"),
    9: ("f2", "complex"),  # complex32: (real, imag) float16 pairs
    10: ("c8", "complex"), 11: ("c16", "complex"),
}
# Storage elements per tensor element (complex32 is read as float16 pairs).
_PER_ELEMENT = {9: 2}
BFLOAT16, COMPLEX32 = 13, 9
FLOAT8 = {29: "float8_e4m3fn", 30: "float8_e5m2", 31: "float8_e4m3fnuz",
          32: "float8_e5m2fnuz", 33: "float8_e8m0fnu"}


def supported(code: int) -> bool:
    return code in _STORAGE


def value_kind(code: int) -> str:
    """"float", "int", "bool" or "complex"."""
    return _STORAGE[code][1]


def storage_dtype(code: int, byteorder: str) -> np.dtype:
    """The numpy type the record's bytes are read as (one tensor element, or
    half of one for complex32), in the archive's byte order."""
    char, _ = _STORAGE[code]
    order = ">" if byteorder == "big" else "<"
    return np.dtype(order + char)


def storage_per_element(code: int) -> int:
    return _PER_ELEMENT.get(code, 1)


def to_values(raw: np.ndarray, code: int) -> np.ndarray:
    """A chunk in storage type -> a native-order array numpy computes with:
    float32 (half, bfloat16, float8), float64, an integer type, bool, or
    complex64/complex128. The result may share memory with `raw` (float32,
    float64 and integer records in native byte order)."""
    if code == BFLOAT16:
        wide = raw.astype(np.uint32)  # native order whatever the storage order
        wide <<= 16
        return wide.view(np.float32)
    if code in FLOAT8:
        return float8_table(code)[raw]
    if code == 12:
        return raw != 0
    if code == COMPLEX32:
        pairs = raw.astype(np.float32)
        return pairs.reshape(-1, 2).view(np.complex64).reshape(-1)
    if code == 6:
        return raw.astype(np.float32)
    if raw.dtype.byteorder not in ("=", "|") and raw.dtype.byteorder != _NATIVE:
        return raw.astype(raw.dtype.newbyteorder("="))
    return raw


_NATIVE = "<" if np.little_endian else ">"


@cache
def float8_table(code: int) -> np.ndarray:
    """float32 value of each of the 256 bytes of a float8 format (read-only)."""
    b = np.arange(256, dtype=np.int64)
    if code == 33:  # e8m0fnu: an unsigned exponent, no sign, no mantissa; 0xFF is NaN
        values = np.ldexp(1.0, b - 127)
        values[255] = np.nan
    else:
        exp_bits, bias = {29: (4, 7), 30: (5, 15), 31: (4, 8), 32: (5, 16)}[code]
        man_bits = 7 - exp_bits
        sign = np.where(b >> 7, -1.0, 1.0)
        e = (b >> man_bits) & ((1 << exp_bits) - 1)
        m = b & ((1 << man_bits) - 1)
        frac = m / (1 << man_bits)
        values = sign * np.where(e == 0, np.ldexp(frac, 1 - bias), np.ldexp(1.0 + frac, e - bias))
        if code == 29:  # e4m3fn: no infinities; S.1111.111 is NaN
            nan = (e == 15) & (m == 7)
            values[nan] = np.copysign(np.nan, sign[nan])  # torch keeps the NaN's sign
        elif code == 30:  # e5m2: IEEE-like
            top = e == 31
            values[top & (m == 0)] = sign[top & (m == 0)] * np.inf
            nan = top & (m != 0)
            values[nan] = np.copysign(np.nan, sign[nan])
        else:  # the fnuz variants: no infinities, no -0; 0x80 is the only NaN
            values[0x80] = np.nan
    table = values.astype(np.float32)
    table.flags.writeable = False
    return table


def dtype_name(code: int) -> str:
    return DTYPE_NAMES.get(code, f"dtype{code}")
