"""Write inspector/core/data/op_schemas.json.gz from torch's op registry.

    .venv/bin/python packaging/make_op_schemas.py

Archives of schemas 7.3 and 8.2 (torch 2.5 and 2.6) give node arguments no
`kind`; torch's deserializer then decides keyword or positional from the op's
schema: an argument with a default, or a keyword-only one, becomes a keyword
(`linear.default(x, w, bias = b)`). The listing needs the same decision
without torch, so this table keeps, per op overload, its arguments in schema
order with those two facts: `name`, `name=` (has a default), `*name`
(keyword-only). Regenerate it when a torch release adds ops.

`aliases` says, per op overload whose outputs may share an input's storage (views,
in-place and out= ops, and the ones that alias only when nothing changes: `to`,
`reshape`, `contiguous`), which argument each output aliases (None: a new tensor),
as the schema's alias annotations (`Tensor(a)`, `Tensor(a!)`) say: the memory plan
(core/memory_plan.py) counts a storage once.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import torch

NAMESPACES = ("aten", "prims", "quantized_decomposed", "_quantized", "quantized")
_ALIAS_SET = re.compile(r"Tensor\(([a-z]+)")
OUT = Path(__file__).resolve().parents[1] / "inspector" / "core" / "data" / "op_schemas.json.gz"


def main() -> int:
    try:  # registers the quantized_decomposed ops pt2e-quantized programs call
        import torch.ao.quantization.fx._decomposed  # noqa: F401
    except ImportError:
        pass
    table: dict[str, list[str]] = {}
    aliases: dict[str, list[str | None]] = {}
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
        returned = _returned_aliases(schema)
        if any(returned):
            aliases[key] = returned
    doc = {"torch": torch.__version__, "ops": dict(sorted(table.items())),
           "aliases": dict(sorted(aliases.items()))}
    data = json.dumps(doc, separators=(",", ":")).encode()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(gzip.compress(data, 9, mtime=0))
    print(f"wrote {OUT} ({len(table)} ops, {OUT.stat().st_size:,} bytes)")
    return 0


def _returned_aliases(schema: torch._C.FunctionSchema) -> list[str | None]:
    """Per return, the argument whose alias set it shares (`Tensor(a)` returned from
    `Tensor(a) self`; a list `Tensor(a)[]` too), or None."""
    owner: dict[str, str] = {}
    for arg in schema.arguments:
        if arg.alias_info is not None:
            for letter in arg.alias_info.before_set:
                owner.setdefault(str(letter), arg.name)
    text = str(schema)
    tail = text[text.rindex(") -> ") + 5:]
    if tail.startswith("(") and tail.endswith(")"):
        tail = tail[1:-1]
    parts = [p.strip() for p in tail.split(",")] if tail else []
    if len(parts) != len(schema.returns):
        return [None] * len(schema.returns)
    out: list[str | None] = []
    for part in parts:
        m = _ALIAS_SET.match(part)
        out.append(owner.get(m.group(1)) if m else None)
    return out


if __name__ == "__main__":
    sys.exit(main())
