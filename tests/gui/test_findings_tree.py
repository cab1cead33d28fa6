"""The findings tree with more findings than it lists at once (a 400k-node program
has ~31,000): the counts are the whole report's, "show more" lists the next batch,
and a finding not listed yet is still found (the panel's jump to a node's finding)."""

from __future__ import annotations

import msgspec

from inspector.core.archive import open_archive
from inspector.core.audit import audit_program
from inspector.ui.widgets.findings_tree import FINDING_ROLE, LEAF_BATCH, MORE_ROLE, FindingsTree


def _more_rows(tree: FindingsTree) -> list:
    rows, stack = [], [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    while stack:
        item = stack.pop()
        if item.data(0, MORE_ROLE) is not None:
            rows.append(item)
        stack.extend(item.child(i) for i in range(item.childCount()))
    return rows


def test_many_findings_are_listed_in_batches_and_all_reachable(qtbot, toy_archive):
    with open_archive(toy_archive) as archive:
        real = [f for name in archive.program_names for f in audit_program(archive.program(name))]
    assert real
    copies = 3 * LEAF_BATCH // len(real) + 2
    many = [msgspec.structs.replace(f, node=f"{f.node}_r{i}", line=(f.line or 0) + i)
            for i in range(copies) for f in real]
    tree = FindingsTree()
    qtbot.addWidget(tree)
    tree.show_findings(many)
    counted = tree.rule_counts()
    assert sum(counted.values()) == len(many)  # the rule rows count them all
    shown = tree.findings_shown()
    assert len(shown) < len(many) and _more_rows(tree)

    last = many[-1]
    leaf = tree.leaf_for(lambda f: f is last)  # beyond the first batch: listed on the way
    assert leaf is not None and leaf.data(0, FINDING_ROLE) is last

    clicks = 0
    while rows := _more_rows(tree):
        tree.itemClicked.emit(rows[0], 0)  # as a click on the row
        clicks += 1
        assert clicks < 100
    listed = tree.findings_shown()
    assert sorted(map(id, listed)) == sorted(map(id, many))  # each once, none lost
