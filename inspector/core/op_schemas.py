"""Which arguments of an ATen op torch prints as keywords, without torch.

Schemas 7.3 and 8.2 (torch 2.5 and 2.6) give node arguments no `kind`, and
torch's deserializer (`deserialize_inputs`) then walks the op's schema: an
argument with no default that is not keyword-only is positional, any other
present one a keyword. The schemas come from a table generated from torch's
op registry (packaging/make_op_schemas.py -> data/op_schemas.json.gz, ~30 KB),
read once on first use: data, never torch at run time.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

_TABLE = Path(__file__).with_name("data") / "op_schemas.json.gz"
_PREFIX = "torch.ops."


class SchemaArg(NamedTuple):
    name: str
    has_default: bool
    kwarg_only: bool

    @property
    def positional(self) -> bool:
        """How torch decides when the file gives no kind."""
        return not self.has_default and not self.kwarg_only


def _read_table() -> Any:
    # gzip imported only here: only nodes whose arguments carry no kind
    # (schemas 7.3, 8.2) need the table, and `list` starts sooner (issue 17)
    import gzip

    return json.loads(gzip.decompress(_TABLE.read_bytes()))


@lru_cache(maxsize=1)
def _table() -> dict[str, list[str]]:
    try:
        doc = _read_table()
    except (OSError, ValueError):
        return {}  # a damaged install lists every argument positionally, as before
    ops = doc.get("ops") if isinstance(doc, dict) else None
    return ops if isinstance(ops, dict) else {}


@lru_cache(maxsize=4096)
def op_schema(target: str) -> tuple[SchemaArg, ...] | None:
    """The arguments of `torch.ops.aten.linear.default`, in schema order, or
    None for an op the table does not know (custom ops, Python functions)."""
    if not target.startswith(_PREFIX):
        return None
    raw = _table().get(target[len(_PREFIX):])
    if raw is None:
        return None
    out = []
    for text in raw:
        kwarg_only = text.startswith("*")
        name = text.lstrip("*")
        has_default = name.endswith("=")
        out.append(SchemaArg(name.rstrip("="), has_default, kwarg_only))
    return tuple(out)


@lru_cache(maxsize=1)
def _alias_table() -> dict[str, list[str | None]]:
    try:
        doc = _read_table()
    except (OSError, ValueError):
        return {}
    aliases = doc.get("aliases") if isinstance(doc, dict) else None
    return aliases if isinstance(aliases, dict) else {}


@lru_cache(maxsize=4096)
def output_aliases(target: str) -> tuple[str | None, ...] | None:
    """Per output of `torch.ops.aten.view.default`, the argument whose storage it
    may share (`('self',)`), as the schema's alias annotations say (`Tensor(a)`,
    `Tensor(a!)`); None for an op none of whose outputs alias (or that the table
    does not know). "may": `to`, `reshape`, `contiguous` alias only when they have
    nothing to change; the memory plan decides those from the tensors' metadata."""
    if not target.startswith(_PREFIX):
        return None
    raw = _alias_table().get(target[len(_PREFIX):])
    if not isinstance(raw, list):
        return None
    return tuple(a if isinstance(a, str) else None for a in raw)


def table_torch_version() -> str:
    """The torch release the table was generated from."""
    try:
        return str(_read_table().get("torch", "?"))
    except (OSError, ValueError, AttributeError):
        return "?"
