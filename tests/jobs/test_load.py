"""jobs/load.py: the one vetted way to torch-load an archive.

Hostile variants are made from the real tiny archive by rewriting one record."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from jobs_helpers import rewrite_archive

from inspector.core.errors import ArchiveError
from inspector.jobs import load
from inspector.jobs.load import UnsafeProgramError, UntrustedArchiveError


class _Marker:
    """Unpickling this creates a file: proof that something was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def _edit_json(target: str, change):
    def edit(rel: str, data: bytes) -> bytes:
        if rel != target:
            return data
        doc = json.loads(data)
        change(doc)
        return json.dumps(doc).encode()
    return edit


def test_vet_accepts_the_real_archive(tiny_archive):
    vetted = load.vet(tiny_archive)
    assert vetted.program_names == ["decoder", "encoder"]
    assert vetted.needs_transformers  # the encoder returns BaseModelOutputWithPooling
    assert vetted.trusted == []
    assert vetted.info is not None and vetted.info["spec"]["seq_max"] == 64


def test_missing_program_is_named(tiny_archive, tmp_path):
    only_enc = rewrite_archive(tiny_archive, tmp_path / "enc.pt2",
                               lambda rel, d: None if "decoder" in rel else d)
    with pytest.raises(ArchiveError, match="no program 'decoder'.*programs: encoder"):
        load.vet(only_enc, programs=["encoder", "decoder"])


def test_pickled_weight_needs_trust_and_is_named(tiny_archive, tmp_path):
    def make_pickled(doc):
        meta = doc["config"]["decoder.transformer.ln_f.bias"]
        meta["use_pickle"] = True

    bad = rewrite_archive(tiny_archive, tmp_path / "p.pt2",
                          _edit_json("data/weights/decoder_weights_config.json", make_pickled))
    with pytest.raises(UntrustedArchiveError, match="would run code") as info:
        load.vet(bad)
    assert any(r.startswith("data/weights/weight_") for r in info.value.records)
    assert "--trust" in str(info.value)
    assert load.vet(bad, trust=True).trusted  # consent given: named, then allowed


@pytest.mark.parametrize("record", ["data/aotinductor/model/model.so",
                                    "data/constants/custom_obj_0"])
def test_code_records_are_refused_without_trust(tiny_archive, tmp_path, record):
    bad = rewrite_archive(tiny_archive, tmp_path / "c.pt2", add={record: b"\x7fELF"})
    with pytest.raises(UntrustedArchiveError) as info:
        load.vet(bad)
    assert record in info.value.records and record in str(info.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["graph_module"]["graph"]["nodes"][0].__setitem__(
            "target", "torch.ops.load_library"), "node target 'torch.ops.load_library'"),
        (lambda d: d["graph_module"]["graph"]["nodes"][0].__setitem__(
            "target", "builtins.exec"), "node target 'builtins.exec'"),
        (lambda d: d["guards_code"].append("__import__('os').system('id')"),
         "outside the guard grammar"),
        (lambda d: d["range_constraints"].__setitem__("__import__('os')", {}),
         "neither a symbol name nor a derived dim"),
        # printed arithmetic, but a call of a name no derived dim uses
        (lambda d: d["range_constraints"].__setitem__("__import__(2*s70)", {}),
         "unknown function '__import__'"),
        (lambda d: d["range_constraints"].__setitem__("2*os + 1", {}),
         "unknown name 'os'"),
        # torch int()s what follows an unbacked prefix: only a plain symbol may start so
        (lambda d: d["range_constraints"].__setitem__("u0 + 1", {}),
         "starts like an unbacked symbol"),
        (lambda d: _first_expr(d).__setitem__("expr_str", "__import__('os').system('id')"),
         "outside the srepr grammar"),
        (lambda d: _first_expr(d).__setitem__("expr_str", "Function(Symbol('s1'))"),
         "unknown function 'Function'"),
        (lambda d: _first_expr(d).__setitem__("expr_str", "Symbol('__class__')"),
         "unexpected string"),
    ],
)
def test_unsafe_strings_in_the_program_are_refused_even_with_trust(tiny_archive, tmp_path,
                                                                   change, message):
    bad = rewrite_archive(tiny_archive, tmp_path / "u.pt2",
                          _edit_json("models/decoder.json", change))
    with pytest.raises(UnsafeProgramError, match=message.replace("(", r"\(")):
        load.vet(bad, trust=True)


def _first_expr(doc):
    for tv in doc["graph_module"]["graph"]["tensor_values"].values():
        for size in tv["sizes"]:
            if "as_expr" in size:
                return size["as_expr"]
    raise AssertionError("no symbolic size in the program")


def _expr_strs(value, found):
    if isinstance(value, dict):
        if isinstance(value.get("expr_str"), str):
            found.add(value["expr_str"])
        for v in value.values():
            _expr_strs(v, found)
    elif isinstance(value, list):
        for v in value:
            _expr_strs(v, found)
    return found


def test_guards_and_exprs_of_a_real_export_pass_the_grammar(tiny_archive):
    """Every guard and symbolic expression torch wrote into the tiny export (not
    hand-typed ones) passes the vetting grammar, and there are real ones to check."""
    from inspector.core.archive import open_archive

    guards, exprs = [], set()
    with open_archive(tiny_archive) as ar:
        for name in ar.program_names:
            doc = ar.program_json(name)
            guards += [(name, g) for g in doc.get("guards_code", [])]
            _expr_strs(doc, exprs)
    # the decoder ties the two inputs' batch sizes; sizes hold products and Min()
    assert any(".size()[0] == " in g for _, g in guards), guards
    assert any(e.startswith("Min(") for e in exprs) and any(e.startswith("Mul(") for e in exprs)
    for name, guard in guards:
        load.check_guard(guard, name)  # raises UnsafeProgramError on a refusal
    for expr in sorted(exprs):
        load.check_expr(expr, "tiny")
    # and the same checks do refuse what is outside the grammar
    with pytest.raises(UnsafeProgramError):
        load.check_guard(guards[0][1] + " or __import__('os')", "t")
    with pytest.raises(UnsafeProgramError):
        load.check_expr(f"Add({sorted(exprs)[-1]}, __import__('os'))", "t")


def test_load_never_unpickles_sample_inputs(tiny_archive, tmp_path):
    marker = tmp_path / "unpickled"
    payload = pickle.dumps(_Marker(str(marker)))
    # Sanity: this payload does run code when unpickled.
    pickle.loads(payload)
    assert marker.exists()
    marker.unlink()

    evil = rewrite_archive(
        tiny_archive, tmp_path / "evil.pt2",
        lambda rel, d: payload if rel.startswith("data/sample_inputs/") else d)
    vetted, programs = load.load(evil)
    assert not marker.exists()
    assert set(programs) == {"decoder", "encoder"}
    assert programs["decoder"].example_inputs is None

    import torch

    dec = programs["decoder"].module()
    hidden = torch.zeros(2, 50, 64)
    logits = dec(torch.ones(2, 3, dtype=torch.long), hidden)
    assert logits.shape == (2, 3, 1024)
    # raw weights came through intact (same bytes as the eager weights path)
    weights = load.load_state_dicts(vetted)["decoder"]
    assert torch.equal(programs["decoder"].state_dict["decoder.lm_head.weight"],
                       weights["decoder.lm_head.weight"])
