"""The listing against torch's own text, on archives torch wrote and can load.

Issue 2, item 4: at least 99% of statement lines identical to
`torch.export.load(F).graph_module.print_readable()` (ignoring `;  x = None`
tails and whitespace) on any archive torch can load. The corpus
(fidelity_cases.py / fidelity_models.py) is every ExportDB example that
exports, tiny HuggingFace models, nested torch.cond, while_loop/map/scan,
multi-program archives, run_decompositions() output, and modules that hit
the printer's corners. Everything is exported once per session.

`pytest -s tests/unit/test_listing_fidelity.py` prints the per-case table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fidelity_cases import Comparison, Skip, build_corpus, compare, table

GROUPS = ["exportdb", "hf", "cond", "multi", "decomp", "ops"]
THRESHOLD = 0.99


@pytest.fixture(scope="session")
def fidelity(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Comparison], list[Skip]]:
    # HF output types (ModelOutput subclasses) must be registered with pytree
    # before torch.export.load can rebuild those programs.
    import transformers  # noqa: F401

    out_dir: Path = tmp_path_factory.mktemp("fidelity")
    archives, skipped = build_corpus(out_dir)
    comparisons: list[Comparison] = []
    for archive in archives:
        try:
            comparisons.extend(compare(archive))
        except Exception as exc:  # noqa: BLE001 - a file torch itself cannot load is skipped
            skipped.append(Skip(archive.name, "torch load", f"{type(exc).__name__}: {exc}"[:160]))
    print("\n" + table(comparisons, skipped))
    return comparisons, skipped


def _explain(bad: list[Comparison]) -> str:
    parts = []
    for c in bad:
        parts.append(f"{c.case}:{c.program} {c.matched}/{c.total}")
        parts.extend("    " + line[:240] for line in c.diff[:20])
    return "\n".join(parts)


@pytest.mark.parametrize("group", GROUPS)
def test_each_archive_matches_torch(fidelity: tuple[list[Comparison], list[Skip]],
                                    group: str) -> None:
    comparisons, _ = fidelity
    mine = [c for c in comparisons if c.group == group]
    assert mine, f"no {group} case survived export/save/load"
    bad = [c for c in mine if c.ratio < THRESHOLD]
    assert not bad, "below 99% identical lines:\n" + _explain(bad)


def test_aggregate_matches_torch(fidelity: tuple[list[Comparison], list[Skip]]) -> None:
    comparisons, _ = fidelity
    matched = sum(c.matched for c in comparisons)
    total = sum(c.total for c in comparisons)
    assert total > 1500, "the corpus shrank: too few lines compared"
    assert matched / total >= THRESHOLD
    file_ok = sum(c.file_lines[0] for c in comparisons)
    file_total = sum(c.file_lines[1] for c in comparisons)
    assert file_total > 300
    assert file_ok / file_total >= THRESHOLD


def test_corpus_is_broad(fidelity: tuple[list[Comparison], list[Skip]]) -> None:
    """Guard against the corpus quietly shrinking when torch changes: the
    known ExportDB failures are few, and every hand-written case exports."""
    comparisons, skipped = fidelity
    names = {c.case for c in comparisons}
    assert sum(n.startswith("exportdb/") for n in names) >= 30
    assert {"hf/gpt2", "hf/bert", "hf/llama", "hf/vit"} <= names
    assert any(c.program != "model" for c in comparisons), "no multi-program archive"
    unexpected = [s for s in skipped if not s.name.startswith("exportdb")]
    assert len(unexpected) <= 2, f"cases torch could not round-trip: {unexpected}"


def test_line_maps_agree_with_text(fidelity: tuple[list[Comparison], list[Skip]],
                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """line_of / line_nodes / definitions point at the lines that show the node."""
    from fidelity_models import custom_builders

    import torch

    from inspector.core.archive import open_archive
    from inspector.core.listing import STATEMENT, render_listing

    build = dict((n, b) for n, _, b in custom_builders())["cond/nested_cond"]
    path = tmp_path_factory.mktemp("maps") / "nested.pt2"
    torch.export.save(build(), str(path))
    with open_archive(path) as arc:
        program = arc.program("model")
        listing = render_listing(program)
    seen = 0
    for node in program.all_nodes():
        line = listing.line_of(node)
        assert line is not None, node.name
        assert listing.kinds[line] == STATEMENT
        assert listing.line_nodes[line] is node
        assert listing.lines[line].strip().startswith(node.name)
        for name in node.output_names():
            defined = listing.definitions[(node.graph.name, name)]
            assert listing.lines[defined].strip().startswith(name)
        seen += 1
    assert seen > 20
