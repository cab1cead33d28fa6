"""Write inspector/core/data/op_schemas.json.gz from torch's op registry.

    .venv/bin/python packaging/make_op_schemas.py

Archives of schemas 7.3 and 8.2 (torch 2.5 and 2.6) give node arguments no
`kind`; torch's deserializer then decides keyword or positional from the op's
schema: an argument with a default, or a keyword-only one, becomes a keyword
(`linear.default(x, w, bias = b)`). The listing needs the same decision
without torch, so this table keeps, per op overload, its arguments in schema
order with those two facts: `name`, `name=` (has a default), `*name`
(keyword-only). Regenerate it when a torch release adds ops.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import torch

NAMESPACES = ("aten", "prims", "quantized_decomposed", "_quantized", "quantized")
OUT = Path(__file__).resolve().parents[1] / "inspector" / "core" / "data" / "op_schemas.json.gz"


def main() -> int:
    try:  # registers the quantized_decomposed ops pt2e-quantized programs call
        import torch.ao.quantization.fx._decomposed  # noqa: F401
    except ImportError:
        pass
    table: dict[str, list[str]] = {}
    for schema in torch._C._jit_get_all_schemas():
        ns, _, op = schema.name.partition("::")
        if ns not in NAMESPACES:
            continue
        key = f"{ns}.{op}.{schema.overload_name or 'default'}"
        args = []
        for arg in schema.arguments:
            text = arg.name
            if arg.default_value is not None or arg.has_default_value():
                text += "="
            if arg.kwarg_only:
                text = "*" + text
            args.append(text)
        table[key] = args
    doc = {"torch": torch.__version__, "ops": dict(sorted(table.items()))}
    data = json.dumps(doc, separators=(",", ":")).encode()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(gzip.compress(data, 9, mtime=0))
    print(f"wrote {OUT} ({len(table)} ops, {OUT.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
