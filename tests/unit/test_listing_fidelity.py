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

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from fidelity_cases import (STRICT_EXPORTDB, Archive, Comparison, Skip, compare, session_corpus,
                            table, torch_texts)

pytestmark = pytest.mark.slow  # every corpus listing against torch's print_readable

GROUPS = ["exportdb", "hf", "cond", "multi", "decomp", "ops", "legacy", "builtins"]
THRESHOLD = 0.99
# The cases torch itself cannot round-trip here (torch 2.13), by name and stage.
# A new one is a failure to look at, not a quiet skip; one that starts working
# again is fine.
KNOWN_SKIPS = {
    # ExportDB's own example: its dynamic_shapes claim dim 0 is dynamic, but
    # round() specializes it ("Constraints violated (dim0_x)").
    "exportdb/dynamic_shape_round": "export",
}


@dataclass
class Corpus:
    archives: list[Archive]
    comparisons: list[Comparison]
    skipped: list[Skip]  # torch could not export, save or load it
    crashed: list[Skip]  # torch loaded it, and our reader or listing raised


@pytest.fixture(scope="session")
def fidelity(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    # HF output types (ModelOutput subclasses) must be registered with pytree
    # before torch.export.load can rebuild those programs.
    import transformers  # noqa: F401

    # FIDELITY_ONLY=cond,hf/ narrows the corpus while working on the printer
    # (test_corpus_is_broad then fails on purpose).
    only = [x for x in os.environ.get("FIDELITY_ONLY", "").split(",") if x]
    archives, skipped = session_corpus(tmp_path_factory, only or None)
    comparisons: list[Comparison] = []
    loaded: list[Archive] = []
    crashed: list[Skip] = []
    for archive in archives:
        # Only torch's side may be skipped: a file torch cannot load is not ours
        # to compare. Every archive it loads is compared, and a crash of our
        # reader or listing is a failure (test_every_loaded_archive_is_compared).
        try:
            texts = torch_texts(archive)
        except Exception as exc:  # noqa: BLE001
            skipped.append(Skip(archive.name, "torch load", f"{type(exc).__name__}: {exc}"[:160]))
            continue
        loaded.append(archive)
        try:
            comparisons.extend(compare(archive, texts))
        except Exception as exc:  # noqa: BLE001 - reported by its own test, with the case
            crashed.append(Skip(archive.name, "ours", f"{type(exc).__name__}: {exc}"[:300]))
    print("\n" + table(comparisons, skipped + crashed))
    return Corpus(loaded, comparisons, skipped, crashed)


def _explain(bad: list[Comparison]) -> str:
    parts = []
    for c in bad:
        parts.append(f"{c.case}:{c.program} {c.matched}/{c.total}")
        parts.extend("    " + line[:240] for line in c.diff[:20])
    return "\n".join(parts)


@pytest.mark.parametrize("group", GROUPS)
def test_each_archive_matches_torch(fidelity: Corpus,
                                    group: str) -> None:
    comparisons = fidelity.comparisons
    mine = [c for c in comparisons if c.group == group]
    assert mine, f"no {group} case survived export/save/load"
    bad = [c for c in mine if c.ratio < THRESHOLD]
    assert not bad, "below 99% identical lines:\n" + _explain(bad)


def test_aggregate_matches_torch(fidelity: Corpus) -> None:
    comparisons = fidelity.comparisons
    matched = sum(c.matched for c in comparisons)
    total = sum(c.total for c in comparisons)
    assert total > 1500, "the corpus shrank: too few lines compared"
    assert matched / total >= THRESHOLD
    file_ok = sum(c.file_lines[0] for c in comparisons)
    file_total = sum(c.file_lines[1] for c in comparisons)
    assert file_total > 300
    assert file_ok / file_total >= THRESHOLD


def test_every_loaded_archive_is_compared(fidelity: Corpus) -> None:
    """Our reader and listing never crash on a file torch itself loads."""
    assert not fidelity.crashed, "\n".join(f"{s.name}: {s.reason}" for s in fidelity.crashed)
    compared = {c.case for c in fidelity.comparisons}
    missing = [a.name for a in fidelity.archives if a.name not in compared]
    assert not missing, f"loaded by torch but not compared: {missing}"


def test_corpus_is_broad(fidelity: Corpus) -> None:
    """Guard against the corpus quietly shrinking when torch changes: only the
    named ExportDB failures are skipped, every strict re-export is compared, and
    every hand-written case exports."""
    comparisons, skipped = fidelity.comparisons, fidelity.skipped
    names = {c.case for c in comparisons}
    unexpected = [s for s in skipped if KNOWN_SKIPS.get(s.name) != s.stage]
    assert not unexpected, "cases torch could not round-trip:\n" + "\n".join(
        f"{s.name} ({s.stage}): {s.reason}" for s in unexpected)
    assert sum(n.startswith("exportdb/") for n in names) >= 30
    strict = {n for n in names if n.startswith("exportdb-strict/")}
    assert strict == {f"exportdb-strict/{n}" for n in STRICT_EXPORTDB}, strict
    assert {"hf/gpt2", "hf/bert", "hf/llama", "hf/vit"} <= names
    assert any(c.program != "model" for c in comparisons), "no multi-program archive"


def test_line_maps_agree_with_text(fidelity: Corpus) -> None:
    """line_of / line_nodes / definitions point at the lines that show each node,
    on every program of the corpus."""
    from inspector.core.archive import open_archive
    from inspector.core.listing import STATEMENT, render_listing

    seen = 0
    for archive in fidelity.archives:
        with open_archive(archive.path) as arc:
            for program in arc.programs():
                listing = render_listing(program)
                assert len(listing.kinds) == len(listing.lines) == len(listing.line_nodes)
                for node in program.all_nodes():
                    line = listing.line_of(node)
                    where = f"{archive.name}:{program.name}:{node.name}"
                    assert line is not None, where
                    assert listing.kinds[line] == STATEMENT, where
                    assert listing.line_nodes[line] is node, where
                    text = listing.lines[line].strip()
                    outs = node.output_names()
                    shown = re.split(r"[:\s]", text, maxsplit=1)[0]
                    gname = node.graph.name
                    if node.name_in_file:
                        # a node without outputs is renamed `<op>_unused[_N]` by torch;
                        # FX prints some names under another (`sum_2` where an input
                        # named `sum` is printed `sum_1`)
                        printed = [listing.printed_name(gname, n) for n in (node.name, *outs[:1])]
                        assert shown in printed or re.search(r"_unused(_\d+)?$", shown), where
                    for name in outs:
                        defined = listing.definitions[(gname, name)]
                        assert listing.lines[defined].strip().startswith(
                            listing.printed_name(gname, name)), where
                        assert listing.value_name(gname, listing.printed_name(gname, name)) \
                            == name, where
                        assert listing.line_nodes[defined] is node, where
                    seen += 1
    assert seen > (1500 if not os.environ.get("FIDELITY_ONLY") else 0)
