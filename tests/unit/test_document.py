"""The window's Qt-free view-model (core/document.py) against what torch says about the
same real archive: weight rows vs the ExportedProgram's state_dict and constants, the
users index vs the FX graph's node.users, module counts vs nn_module_stack."""

from __future__ import annotations

import pytest

from inspector.core.document import build_program_view, open_document


@pytest.fixture(scope="module")
def both(small_archive):
    import torch

    ep = torch.export.load(str(small_archive))  # the test's own archive: trusted
    doc, view = open_document(small_archive)
    yield ep, doc, view
    doc.archive.close()


def test_weight_rows_match_torch(both):
    ep, _doc, view = both
    tensors = {**ep.state_dict, **{k: v for k, v in ep.constants.items() if hasattr(v, "shape")}}
    rows = {r.fqn: r for r in view.weights}
    assert set(rows) == set(tensors)
    for fqn, t in tensors.items():
        row = rows[fqn]
        assert row.shape == "[" + ", ".join(str(s) for s in t.shape) + "]"
        assert row.dtype == str(t.dtype).removeprefix("torch.")
        assert row.nbytes == t.numel() * t.element_size()
        assert row.device == str(t.device)
    kinds = {s.target: s.kind.name.lower() for s in ep.graph_signature.input_specs if s.target}
    for fqn, row in rows.items():
        assert row.kind.lower() == kinds[fqn], (fqn, row.kind, kinds[fqn])


def test_users_index_matches_fx_users(both):
    ep, _doc, view = both
    listing = view.listing
    by_name = {n.name: n for n in view.program.all_nodes()}
    checked = 0
    for fx in ep.graph.nodes:
        # multi-output ops' getitem nodes are folded into their producer when serialized
        if fx.op != "call_function" or fx.name not in by_name or any(
                u.op == "call_function" and u.name not in by_name for u in fx.users):
            continue
        line = listing.line_of(by_name[fx.name])
        readers = sorted({listing.line_of(by_name[u.name]) for u in fx.users
                          if u.op == "call_function"})
        got = [ln for ln in view.users_of(fx.name, line) if listing.kinds[ln] != "return"]
        assert sorted(set(got)) == readers, fx.name
        checked += 1
    assert checked >= 4


def test_module_counts_match_nn_module_stack(both):
    ep, doc, _view = both
    view = build_program_view(doc.archive, doc.program_names[0], complete=True)
    inner: dict[str, int] = {}
    for fx in ep.graph.nodes:
        stack = fx.meta.get("nn_module_stack")
        if fx.op == "call_function" and stack:
            path = list(stack.values())[-1][0]
            inner[path] = inner.get(path, 0) + 1
    # torch's in-memory graph also has getitem nodes and a hook's placeholder module,
    # which the serialized program has not: compare the named submodules.
    named = {p: n for p, n in inner.items() if p and not p.startswith("_")}
    assert named and {p: view.modules[p].count for p in named} == named
    assert view.modules["lin"].cls.endswith("Linear")
