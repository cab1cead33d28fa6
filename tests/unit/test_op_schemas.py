"""The op schema table (inspector/core/data/op_schemas.json.gz) against torch.

Schemas 7.3 and 8.2 give arguments no `kind`; torch's deserializer then
places each one from the op's schema, and so does the listing, from the table
packaging/make_op_schemas.py generated. Checked two ways: the table agrees
with this torch's registry, and archives of the fidelity corpus rewritten
without `kind` list exactly as this torch prints them after loading.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from archive_factory import ArchiveFactory

from fidelity_cases import Archive, compare, rewrite_nodes
from fidelity_models import custom_builders
from inspector.core.op_schemas import op_schema, table_torch_version

CASES = ("ops/literals_dtypes", "ops/multi_output", "decomp/norms_train", "ops/convnet",
         "ops/index_put", "cond/nested_cond", "ops/kwargs_inputs")


def test_table_agrees_with_this_torch() -> None:
    import torch

    checked = 0
    for schema in torch._C._jit_get_all_schemas():
        ns, _, op = schema.name.partition("::")
        if ns != "aten":
            continue
        ours = op_schema(f"torch.ops.aten.{op}.{schema.overload_name or 'default'}")
        if ours is None:
            continue  # an op newer than the table
        assert [a.name for a in ours] == [a.name for a in schema.arguments], schema
        assert [a.kwarg_only for a in ours] == [a.kwarg_only for a in schema.arguments]
        assert [a.has_default for a in ours] == [a.has_default_value() for a in schema.arguments]
        checked += 1
    assert checked > 2000, f"table from torch {table_torch_version()} covers too little"
    assert op_schema("torch.ops.fidelity.twice.default") is None
    assert op_schema("_operator.getitem") is None


def _strip_kinds(src: Path, dst: Path) -> int:
    """Copy an archive with every node argument's `kind` removed (as 2.5/2.6 wrote)."""
    stripped = 0

    def strip(node: dict) -> None:
        nonlocal stripped
        for inp in node.get("inputs", []):
            if inp.pop("kind", None) is not None:
                stripped += 1

    rewrite_nodes(src, dst, strip)
    return stripped


@pytest.fixture(scope="module")
def kindless(archive_factory: ArchiveFactory) -> list[Archive]:
    archives = []
    for name, group, build in custom_builders():
        if name not in CASES:
            continue
        path = archive_factory.save(name, build)
        stripped: list[int] = []
        bare = archive_factory.build(f"{name}#nokind",
                                     lambda out, path=path: stripped.append(_strip_kinds(path, out)))
        if stripped:  # made now, not found from earlier in the session
            assert stripped[0] > 0, "no argument kind to strip"
        archives.append(Archive(name + "#nokind", group, bare))
    return archives


def test_kindless_archives_list_as_torch_prints_them(kindless: list[Archive]) -> None:
    assert len(kindless) >= 5
    keywords = 0
    for archive in kindless:
        for comparison in compare(archive):
            assert comparison.ratio == 1.0, "\n".join([archive.name, *comparison.diff[:20]])
            keywords += sum(" = " in line.split(" = ", 1)[1] for line in comparison.theirs
                            if line.count(" = ") > 1)
    assert keywords > 0  # torch really printed keyword arguments the table had to place
