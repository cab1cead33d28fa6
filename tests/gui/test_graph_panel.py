"""The Graph panel on the demo toy (a real torch export of the tiny ViT+GPT-2 toy):
the same picture as `pt2-inspector graph --json` (a real child process), a click on a
node's box moves the listing to that node's line, `show_node` opens the groups
holding a node and centres on it, Enter/Backspace open and close, arrows follow
edges, and the layout never runs on the GUI thread."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from inspector.core.graph_layout import dot_available

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"

pytestmark = pytest.mark.skipif(not dot_available(), reason="needs Graphviz's dot (apt install graphviz)")


@pytest.fixture
def graph_panel(qtbot, window, open_wait):
    tab = open_wait(DEMO)
    panel = window.job_panels["graph"]
    dock = window.job_panels.docks["graph"]
    dock.show()
    dock.raise_()
    qtbot.waitUntil(lambda: panel.picture() is not None, timeout=60000)
    return window, tab, panel


def _wait_picture(qtbot, panel, check) -> None:
    qtbot.waitUntil(lambda: panel.picture() is not None and check(panel.picture()),
                    timeout=60000)


def test_the_panel_draws_what_the_graph_command_lays_out(graph_panel) -> None:
    window, tab, panel = graph_panel
    pic = panel.picture()
    proc = subprocess.run([sys.executable, "-m", "inspector", "graph", str(DEMO), "--program",
                           "decoder", "--depth", "2", "--json"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(proc.stdout)
    # the first picture opens the chain of sole groups: the toy's root holds only `decoder`
    assert {b.id for b in pic.boxes if b.open} == {"m:decoder"}
    assert [(b.id, round(b.x, 1), round(b.y, 1), round(b.w, 1), round(b.h, 1))
            for b in pic.boxes] == [(b["id"], round(b["x"], 1), round(b["y"], 1),
                                     round(b["w"], 1), round(b["h"], 1)) for b in cli["boxes"]]
    assert [(e.src, e.dst) for e in pic.edges] == [(e["from"], e["to"]) for e in cli["edges"]]
    # every box and edge is on the scene
    assert set(panel.view.items_by_id) == {b.id for b in pic.boxes}


def test_a_click_on_a_node_box_moves_the_listing_there(qtbot, graph_panel) -> None:
    window, tab, panel = graph_panel
    view = panel.view
    item = view.items_by_id["n:sym_size_int_18"]
    view.centerOn(item)
    pos = view.mapFromScene(item.sceneBoundingRect().center())
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    doc_view = tab.view
    node = next(n for n in doc_view.program.graph.nodes if n.name == "sym_size_int_18")
    qtbot.waitUntil(lambda: tab.listing.current_line() == doc_view.listing.line_of(node),
                    timeout=5000)
    assert view.selected == "n:sym_size_int_18"


def test_show_node_opens_the_groups_holding_it_and_centres_on_it(qtbot, graph_panel) -> None:
    window, tab, panel = graph_panel
    panel.show_node("split")  # in decoder.transformer.h.0.attn
    _wait_picture(qtbot, panel, lambda pic: pic.box("n:split") is not None)
    qtbot.waitUntil(lambda: panel.view.selected == "n:split", timeout=5000)
    pic = panel.picture()
    assert {"m:decoder", "m:decoder.transformer", "m:decoder.transformer.h.0",
            "m:decoder.transformer.h.0.attn"} <= {b.id for b in pic.boxes if b.open}
    item = panel.view.items_by_id["n:split"]
    seen = panel.view.mapToScene(panel.view.viewport().rect()).boundingRect()
    assert seen.contains(item.sceneBoundingRect().center())


def test_enter_opens_backspace_closes_arrows_follow_edges(qtbot, graph_panel) -> None:
    window, tab, panel = graph_panel
    view = panel.view
    view.setFocus()
    view.select("m:decoder.transformer")
    qtbot.keyClick(view, Qt.Key.Key_Return)
    _wait_picture(qtbot, panel, lambda pic: pic.box("m:decoder.transformer").open)
    assert panel.picture().box("m:decoder.transformer.h.0") is not None
    # Down from a box goes to a box it feeds (an edge of the picture), Up back to one
    # feeding it
    view.select("n:view")
    qtbot.keyClick(view, Qt.Key.Key_Down)
    edges = {(e.src, e.dst) for e in panel.picture().edges}
    assert ("n:view", view.selected) in edges
    below = view.selected
    qtbot.keyClick(view, Qt.Key.Key_Up)
    assert (view.selected, below) in edges
    # Backspace on a box inside the open group closes the group
    view.select("m:decoder.transformer.h.0")
    qtbot.keyClick(view, Qt.Key.Key_Backspace)
    _wait_picture(qtbot, panel, lambda pic: not pic.box("m:decoder.transformer").open)
    assert panel.picture().box("m:decoder.transformer.h.0") is None


def test_layout_runs_off_the_gui_thread(qtbot, graph_panel, monkeypatch) -> None:
    import inspector.core.graph_picture as gp

    window, tab, panel = graph_panel
    threads: list[threading.Thread] = []
    real = gp.GraphPicture.picture

    def spy(self, *args, **kwargs):
        threads.append(threading.current_thread())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(gp.GraphPicture, "picture", spy)
    panel.open_box("m:decoder.transformer")
    _wait_picture(qtbot, panel, lambda pic: pic.box("m:decoder.transformer").open)
    assert threads and all(t is not threading.main_thread() for t in threads)


def test_moving_in_the_listing_centres_the_picture_on_that_node(qtbot, graph_panel) -> None:
    window, tab, panel = graph_panel
    doc_view = tab.view
    node = next(n for n in doc_view.program.graph.nodes if n.name == "scaled_dot_product_attention_1")
    tab.jump_to(doc_view.listing.line_of(node))  # the listing's cursor, as a user moves it
    qtbot.waitUntil(lambda: panel.view.selected == "n:scaled_dot_product_attention_1",
                    timeout=60000)
    pic = panel.picture()
    holder = pic.box(pic.box("n:scaled_dot_product_attention_1").parent)
    from inspector.core.frames import module_path

    assert holder.open and holder.box.module == module_path(node.nn_module_stack)
    seen = panel.view.mapToScene(panel.view.viewport().rect()).boundingRect()
    assert seen.contains(panel.view.items_by_id["n:scaled_dot_product_attention_1"]
                         .sceneBoundingRect().center())


def test_a_module_picked_is_selected_in_the_picture(qtbot, graph_panel) -> None:
    window, tab, panel = graph_panel
    panel.workspace.selection.select_module("decoder.transformer.h.1.mlp")
    qtbot.waitUntil(lambda: panel.view.selected == "m:decoder.transformer.h.1.mlp",
                    timeout=60000)
    assert panel.picture().box("m:decoder.transformer.h.1").open


def _box_pixel(panel, box_id: str):
    """The colour drawn near a box's top left corner (its fill: inside the outline, off
    the text, the mark's dot and the heat bar)."""
    from PySide6.QtCore import QPointF

    view = panel.view
    item = view.items_by_id[box_id]
    view.centerOn(item)
    point = view.mapFromScene(item.mapToScene(QPointF(4, 4)))
    return view.viewport().grab().toImage().pixelColor(point)


def test_annotations_are_painted_on_the_boxes_holding_their_nodes(qtbot, graph_panel) -> None:
    """The audit's findings of the demo (its `cpu` literals) mark the boxes that hold
    the marked nodes; a heat layer tints its hottest box; clearing takes both away."""
    from inspector.core.annotations import AnnotationLayer, Heat
    from inspector.core.frames import module_path

    window, tab, panel = graph_panel
    ws, doc = panel.workspace, tab.doc
    view = tab.view
    qtbot.waitUntil(lambda: doc.annotations.layer("decoder", "audit") is not None, timeout=60000)
    audit = doc.annotations.layer("decoder", "audit")
    marked_nodes = {view.listing.node_at(line) for line in audit.line_marks} - {None}
    assert marked_nodes, "the demo's audit marks nodes"
    qtbot.waitUntil(lambda: panel.overlay is not None and any(
        o.severity for o in panel.overlay.boxes.values()), timeout=60000)
    pic = panel.picture()
    shown = {b.id: b for b in pic.boxes}
    for node in marked_nodes:
        # the outermost closed module box holding the node, else its own box
        path = module_path(node.nn_module_stack) or ""
        parts = path.split(".") if path else []
        box = next((f"m:{'.'.join(parts[:k])}" for k in range(1, len(parts) + 1)
                    if f"m:{'.'.join(parts[:k])}" in shown
                    and not shown[f"m:{'.'.join(parts[:k])}"].open), f"n:{node.name}")
        assert panel.view.items_by_id[box].overlay.severity is not None, (node.name, box)

    # a heat layer: every decoder node 1, except one hot node in a closed block
    closed = next(b for b in pic.boxes if b.box.module and not b.open)
    hot = next(n for n in view.program.graph.nodes
               if (module_path(n.nn_module_stack) or "").startswith(closed.box.module))
    for layer in doc.annotations.layers("decoder"):  # the Memory panel's bytes, if there
        if layer.heat and layer.source != "audit":
            ws.clear_annotations(doc, layer.source)
    qtbot.waitUntil(lambda: panel.overlay.heat_source is None, timeout=60000)
    before = _box_pixel(panel, closed.id)
    heat = {n.name: Heat(1.0, "1 ms") for n in view.program.graph.nodes}
    heat[hot.name] = Heat(1000.0, "1 s")
    ws.annotate(doc, "decoder", AnnotationLayer("profile", heat=heat, title="time"))
    qtbot.waitUntil(lambda: panel.overlay.heat_source == "profile", timeout=60000)
    assert panel.view.items_by_id[closed.id].overlay.level == 1.0
    assert "heat: time (profile)" in panel.where.full_text()
    assert "time:" in panel.view.items_by_id[closed.id].toolTip()
    tinted = _box_pixel(panel, closed.id)
    assert tinted != before, "the hottest box is tinted"

    ws.clear_annotations(doc, "profile")
    ws.clear_annotations(doc, "audit")
    qtbot.waitUntil(lambda: not panel.overlay.boxes, timeout=60000)
    assert all(item.overlay.severity is None and item.overlay.level is None
               for item in panel.view.items_by_id.values())
    assert _box_pixel(panel, closed.id) == before


def _holding_box(pic, node) -> str:
    """The picture's box that draws `node` by its own module path: the outermost
    closed module holding it, else its own box."""
    from inspector.core.frames import module_path

    shown = {b.id: b for b in pic.boxes}
    path = module_path(node.nn_module_stack) or ""
    parts = path.split(".") if path else []
    for k in range(1, len(parts) + 1):
        box = f"m:{'.'.join(parts[:k])}"
        if box in shown and not shown[box].open:
            return box
    return f"n:{node.name}"


def test_search_matches_light_the_boxes_holding_them(qtbot, graph_panel) -> None:
    """Typing a search lights, in the picture, the boxes that hold the matching
    nodes (as the listing paints the lines); clearing it puts them out."""
    window, tab, panel = graph_panel
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(tab.search.edit, "op:scaled_dot_product_attention")
    qtbot.waitUntil(lambda: tab.result is not None and bool(tab.result.lines), timeout=60000)
    listing = tab.view.listing
    matched = [listing.node_at(line) for line in tab.result.lines]
    assert matched and all(n is not None for n in matched)
    want = {_holding_box(panel.picture(), n) for n in matched}
    qtbot.waitUntil(lambda: panel.view.lit == want, timeout=60000)
    lit_items = {i for i, item in panel.view.items_by_id.items() if item.lit}
    assert lit_items == want
    # open the box holding the first match: the lit box follows it inside
    first = next(iter(sorted(want)))
    panel.open_box(first)
    _wait_picture(qtbot, panel, lambda pic: pic.box(first) is not None and pic.box(first).open)
    want = {_holding_box(panel.picture(), n) for n in matched}
    assert first not in want
    qtbot.waitUntil(lambda: panel.view.lit == want, timeout=60000)
    tab.search.edit.clear()
    qtbot.waitUntil(lambda: not panel.view.lit, timeout=60000)
    assert not any(item.lit for item in panel.view.items_by_id.values())
