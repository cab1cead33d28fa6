"""The Profile panel's rollups (by op, by source line) and its clicks, on a real profile
job of the tiny toy decoder: the rows must be what the job's nodes add up to, and a
click must select the node in the window (listing, details, source) while the Profile
dock stays raised over the Source dock it shares the bottom area with.

Set PT2I_SHOTS=DIR to also save screenshots of the panel (1024x700 and 1400x900)."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from _panel_helpers import no_leaks  # noqa: E402,F401
from PySide6.QtCore import Qt  # noqa: E402
from test_profile_panel import _section_center, choose, click_row, line_of, run_job  # noqa: E402

from inspector.core.frames import parse_stack_trace  # noqa: E402
from inspector.core.run_layers import ms_text  # noqa: E402
from inspector.ui.widgets.share_bar import SHARE_ROLE  # noqa: E402


@pytest.fixture
def profiled(qtbot, no_leaks, window, toy_tab):
    panel = window.job_panels["profile"]
    dock = window.job_panels.docks["profile"]
    dock.show()
    dock.raise_()
    choose(panel.device, "cpu")
    choose(panel.program, "decoder")
    panel.warmup.setValue(0)
    panel.repeats.setValue(1)
    result = run_job(qtbot, panel, panel.profile_button)
    yield panel, dock, result["programs"][0]
    panel.shutdown()


def _frames(tab, name: str) -> list:
    """The node's frames, found as the window finds it: by its listing line."""
    node = tab.view.node_at(line_of(tab, name))
    assert node is not None, name
    return parse_stack_trace(node.stack_trace)


def _innermost(tab, name: str):
    return _frames(tab, name)[-1]


def test_rollups_are_what_the_nodes_add_up_to_and_sort(qtbot, profiled, toy_tab):
    panel, _dock, program = profiled
    by_target: dict[str, list[dict]] = defaultdict(list)
    for n in program["nodes"]:
        by_target[n["target"]].append(n)
    rows = panel.ops.shown_rows()
    assert {r.target for r in rows} == set(by_target) and len(rows) == len(by_target)
    total = sum(n["ms"] for n in program["nodes"])
    for r in rows:
        mine = by_target[r.target]
        assert r.program == "decoder" and r.nodes == len(mine)
        assert math.isclose(r.ms, sum(n["ms"] for n in mine), rel_tol=1e-4, abs_tol=1e-5)
        assert math.isclose(r.share, r.ms / total, rel_tol=1e-3, abs_tol=1e-5)
        assert r.slowest == max(mine, key=lambda n: n["ms"])["name"]
    # slowest first; a click on the ms header flips the order; the share column's
    # bars are the rows' shares; the cells print the job's figures
    table = panel.ops
    assert [r.ms for r in table.shown_rows()] == sorted((r.ms for r in rows), reverse=True)
    header = table.horizontalHeader()
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=_section_center(header, 1))
    assert [r.ms for r in table.shown_rows()] == sorted(r.ms for r in rows)
    first = table.proxy.index(0, 2)
    assert first.data(SHARE_ROLE) == pytest.approx(table.row_at(0).share)
    assert table.proxy.index(0, 1).data() == ms_text(table.row_at(0).ms)
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=_section_center(header, 3))
    counts = [r.nodes for r in table.shown_rows()]
    assert counts == sorted(counts) or counts == sorted(counts, reverse=True)

    # by source line: the nodes' innermost frames (the listing's `# File:` line)
    rows = panel.sources.shown_rows()
    assert rows and any(r.file.endswith("modeling_gpt2.py") for r in rows)
    by_line: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for n in program["nodes"]:
        frames = _frames(toy_tab, n["name"])
        if frames:
            by_line[(frames[-1].file, frames[-1].line)].append(n)
    assert {(r.file, r.line) for r in rows} == set(by_line)
    for r in rows:
        mine = by_line[(r.file, r.line)]
        assert r.nodes == len(mine)
        assert math.isclose(r.ms, sum(n["ms"] for n in mine), rel_tol=1e-4, abs_tol=1e-5)
        assert r.slowest == max(mine, key=lambda n: n["ms"])["name"]
        assert r.user == _innermost(toy_tab, r.slowest).is_user


def _source_shows(window, frame) -> bool:
    """The source pane shows `frame`'s file with its line marked and in view."""
    pane = window.source
    if pane.frame is None or (pane.frame.file, pane.frame.line) != (frame.file, frame.line):
        return False
    editor = pane.editor
    return (pane.marked_line() == frame.line and editor.textCursor().blockNumber() + 1 == frame.line
            and editor.viewport().rect().contains(editor.cursorRect().center()))


def test_a_click_selects_the_node_and_the_source_follows(qtbot, profiled, window, toy_tab):
    panel, dock, program = profiled
    window.dock_source.show()
    window.dock_source.raise_()
    toy_tab.listing.set_current_line(0)
    dock.raise_()  # the Profile dock over the Source dock
    qtbot.wait(50)

    # a node row: listing, details, and the (hidden) source pane's frame
    slowest = max(program["nodes"], key=lambda n: n["ms"])
    frame = _innermost(toy_tab, slowest["name"])
    click_row(qtbot, panel.nodes, lambda r: r.name == slowest["name"])
    qtbot.waitUntil(lambda: toy_tab.listing.current_line() == line_of(toy_tab, slowest["name"]))
    assert window.details.node.name == slowest["name"]
    assert dock.isVisible() and panel.nodes.isVisible()  # the table stays in view
    window.dock_source.raise_()
    qtbot.waitUntil(lambda: _source_shows(window, frame))

    # a source-line row: its slowest node, whose innermost frame is that line
    dock.raise_()
    panel.tabs.setCurrentWidget(panel.sources)
    row = next(r for r in panel.sources.shown_rows()
               if r.slowest != slowest["name"] and r.file.endswith("modeling_gpt2.py"))
    click_row(qtbot, panel.sources, lambda r: r == row)
    qtbot.waitUntil(lambda: toy_tab.listing.current_line() == line_of(toy_tab, row.slowest))
    assert window.details.node.name == row.slowest
    assert (_innermost(toy_tab, row.slowest).file, _innermost(toy_tab, row.slowest).line) == \
        (row.file, row.line)
    window.dock_source.raise_()
    qtbot.waitUntil(lambda: _source_shows(window, _innermost(toy_tab, row.slowest)))

    # an op row: its slowest node
    dock.raise_()
    panel.tabs.setCurrentWidget(panel.ops)
    op = max((r for r in panel.ops.shown_rows() if r.slowest != row.slowest),
             key=lambda r: r.nodes)
    # with the Source dock closed, not only tabbed away: it shows the node once opened
    window.dock_source.close()
    click_row(qtbot, panel.ops, lambda r: r == op)
    qtbot.waitUntil(lambda: toy_tab.listing.current_line() == line_of(toy_tab, op.slowest))
    assert window.details.node.name == op.slowest
    window.dock_source.show()
    window.dock_source.raise_()
    qtbot.waitUntil(lambda: _source_shows(window, _innermost(toy_tab, op.slowest)))
    dock.raise_()

    shots = os.environ.get("PT2I_SHOTS")
    if shots:
        for w, h in ((1024, 700), (1400, 900)):
            window.resize(w, h)
            for tab, name in ((panel.ops, "ops"), (panel.sources, "sources"),
                              (panel.nodes, "nodes")):
                panel.tabs.setCurrentWidget(tab)
                qtbot.wait(200)
                window.grab().save(str(Path(shots) / f"check11-{name}-{w}x{h}.png"))
