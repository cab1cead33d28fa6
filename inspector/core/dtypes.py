"""The serialized schema's enums as numbers -> names (torch/_export/serde/schema.py:
ScalarType, Layout, MemoryFormat). Tables only: no torch."""

from __future__ import annotations

DTYPE_ABBRS = {
    0: "unknown", 1: "u8", 2: "i8", 3: "i16", 4: "i32", 5: "i64", 6: "f16", 7: "f32",
    8: "f64", 9: "c32", 10: "c64", 11: "c128", 12: "b8", 13: "bf16", 28: "u16",
    29: "f8e4m3fn", 30: "f8e5m2", 31: "f8e4m3fnuz", 32: "f8e5m2fnuz", 33: "f8e8m0fnu",
    34: "u32", 35: "u64",
}
DTYPE_NAMES = {
    0: "unknown", 1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float16",
    7: "float32", 8: "float64", 9: "complex32", 10: "complex64", 11: "complex128",
    12: "bool", 13: "bfloat16", 28: "uint16", 29: "float8_e4m3fn", 30: "float8_e5m2",
    31: "float8_e4m3fnuz", 32: "float8_e5m2fnuz", 33: "float8_e8m0fnu", 34: "uint32",
    35: "uint64",
}
DTYPE_ITEMSIZE = {
    1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 2, 7: 4, 8: 8, 9: 4, 10: 8, 11: 16, 12: 1, 13: 2,
    28: 2, 29: 1, 30: 1, 31: 1, 32: 1, 33: 1, 34: 4, 35: 8,
}
LAYOUT_NAMES = {0: "unknown", 1: "sparse_coo", 2: "sparse_csr", 3: "sparse_csc",
                4: "sparse_bsr", 5: "sparse_bsc", 6: "_mkldnn", 7: "strided"}
MEMORY_FORMAT_NAMES = {0: "unknown", 1: "contiguous_format", 2: "channels_last",
                       3: "channels_last_3d", 4: "preserve_format"}
# How FX prints a dtype argument (`torch.float32`).
DTYPE_REPR = {code: f"torch.{name}" for code, name in DTYPE_NAMES.items() if code}
