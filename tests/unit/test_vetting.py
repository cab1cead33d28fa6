"""core/vetting.py's allow-list against the torch that is installed: the builtins are
torch's serializer's own table, operators are confirmed by the dispatcher's registry,
and the name rules refuse what FX would paste as code."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.core import vetting
from inspector.core.vetting import fqn_problem, name_problem, parse_operator

TOY = Path(__file__).resolve().parents[2] / "resources" / "demo" / "toy-tiny.pt2"


def test_serializer_builtins_are_torchs_table() -> None:
    """SERIALIZER_BUILTINS is what serialize_operator writes for `_SYM_OPS` and
    operator.getitem in this torch: derived, not guessed (a new torch that adds one
    fails here, not at a user's refusal)."""
    import operator

    from torch._export.serde import serialize

    ser = serialize.GraphModuleSerializer.serialize_operator
    derived = {ser(None, op) for op in serialize._SYM_OPS} | {ser(None, operator.getitem)}
    assert derived == set(vetting.SERIALIZER_BUILTINS)
    assert len(derived) == 28


def test_ops_attributes_are_not_namespaces() -> None:
    import torch

    for attr in ("load_library", "import_module", "loaded_libraries"):
        assert hasattr(torch.ops, attr)
        assert parse_operator(f"torch.ops.{attr}.x.default") is None
    assert parse_operator("torch.ops.aten.add.Tensor").namespace == "aten"
    assert parse_operator("torch.ops.higher_order.cond").kind == "higher_order"
    assert parse_operator("torch.serialization.os.system") is None
    assert parse_operator("torch.ops.aten.add.Tensor.__call__") is None
    assert parse_operator("_operator.getitem", builtins=False) is None  # not an as_operator


def test_registry_confirms_operators(tmp_path: Path) -> None:
    """The child's check: an overload or higher-order op this torch lacks is refused
    by name; the toy's operators are all registered."""
    import torch

    from inspector.jobs.load import confirm_operators

    vetted = vetting.vet(TOY)
    confirm_operators(torch, vetted)  # the real toy: nothing missing
    for text in ("torch.ops.aten.add.NoSuchOverload", "torch.ops.aten.not_an_op.default",
                 "torch.ops.higher_order.not_a_hop", "torch.ops.aten.add.overloads"):
        op = parse_operator(text)
        assert op is not None
        vetted.operators = {text: op}
        with pytest.raises(vetting.UnsafeProgramError, match="does not register"):
            confirm_operators(torch, vetted)


@pytest.mark.parametrize("name", [
    "x\nimport os", "x\rimport os", "x\u2028y", "x\u0085y", "a b", "a.b", "class", "lambda",
    'x")', "x'", "", "é", "x\x00", "1abc", "a" * 2000])
def test_names_fx_would_paste_are_refused(name: str) -> None:
    assert name_problem(name) is not None


def test_plain_names_pass() -> None:
    for name in ("x", "_x1", "p_decoder_lm_head_weight", "input_ids", "__and__"):
        assert name_problem(name) is None
    assert name_problem("from", keyword_ok=True) is None  # aten::random_.from's argument
    assert fqn_problem("layers.0.weight") is None
    for bad in ("layers..w", "a.b c", "a.class", 'a.x")', "a.\n"):
        assert fqn_problem(bad) is not None
