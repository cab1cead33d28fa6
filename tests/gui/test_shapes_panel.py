"""The Shapes panel and the symbols of the listing, on archives torch really wrote.

The archive: a module exported twice by real torch in a child process (this process
never imports torch) and packaged as two programs: `main` with derived dims
(`2*s + 1`, `2*s`), an unbacked symbol (`n.item()`) with torch._check assertions, and
`fixed`, the same module with static shapes (so `x.shape[0]` looks specialized there).
The module lives in a folder whose name is HTML and its checks carry an HTML comment:
both reach the panel through the stack traces and must stay plain text.

The panel's tables must equal `pt2-inspector shapes --json` of the same archive (run
as a real child process; tests/unit/test_shapes.py checks that against torch), and
the inputs and ranges also what torch itself said when it exported (dumped by the
export child).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QHelpEvent, QTextDocument
from PySide6.QtGui import Qt as GuiQt  # mightBeRichText is a QtGui function of the Qt namespace
from PySide6.QtWidgets import QLabel, QTableWidget, QToolTip

ROOT = Path(__file__).resolve().parents[2]  # the checkout (each tests/ folder has a conftest)

HTML_DIR = "m<b>odel</b>&amp;"  # a real folder name: the stack traces carry it
MODEL = '''
import torch


class Shapes(torch.nn.Module):
    def forward(self, x, y, n):
        k = n.item()  # <b>k</b> must be &amp; <i>positive</i> (torch cites this line)
        torch._check(k >= 1)
        torch._check(k <= y.shape[0])
        return x[1:] + y[:, None], torch.zeros(k, 2), y[:k].sum()
'''
EXPORT = '''
import json, sys
import torch
from torch.export import Dim, export
from torch.export.pt2_archive._package import package_pt2
from torch.utils._sympy.numbers import int_oo

sys.path.insert(0, sys.argv[1])
from shapes_model import Shapes

args = (torch.randn(9, 1), torch.randn(8), torch.tensor(3))
d = Dim("d", min=2, max=100)
main = export(Shapes(), args, dynamic_shapes=({0: 2 * d + 1}, {0: 2 * d}, None))
fixed = export(Shapes(), args)
package_pt2(sys.argv[2], exported_programs={"main": main, "fixed": fixed})

def bound(v):
    return None if v in (int_oo, -int_oo) else int(v)

facts = {}
for name, ep in (("main", main), ("fixed", fixed)):
    users = set(ep.graph_signature.user_inputs)
    facts[name] = {
        "inputs": {n.name: [str(s) for s in n.meta["val"].shape]
                   for n in ep.graph.nodes if n.op == "placeholder" and n.name in users
                   and hasattr(n.meta.get("val"), "shape")},
        "ranges": {str(k): [bound(v.lower), bound(v.upper)]
                   for k, v in ep.range_constraints.items()},
    }
json.dump(facts, open(sys.argv[3], "w"))
'''


@pytest.fixture(scope="session")
def shapes_archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:
    """(archive, torch's facts, `shapes --json`) for the two-program archive."""
    base = tmp_path_factory.getbasetemp() / "shapes-export"
    src = base / HTML_DIR
    src.mkdir(parents=True, exist_ok=True)
    (src / "shapes_model.py").write_text(MODEL)
    (base / "export.py").write_text(EXPORT)
    out, facts = base / "shapes.pt2", base / "torch.json"
    proc = subprocess.run([sys.executable, str(base / "export.py"), str(src), str(out), str(facts)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cli = subprocess.run([sys.executable, "-m", "inspector", "shapes", str(out), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    by_name = {p["name"]: p for p in json.loads(cli.stdout)["programs"]}
    return out, json.loads(facts.read_text()), by_name


def _shapes_panel(window):
    panel = window.job_panels["shapes"]
    window.job_panels.docks["shapes"].raise_()
    return panel


def _open_with_shapes(qtbot, window, open_wait, path: Path):
    panel = _shapes_panel(window)
    tab = open_wait(path)
    qtbot.waitUntil(lambda: panel.current_shapes() is not None, timeout=30000)
    return panel, tab


def _show_program(qtbot, window, tab, panel, program: str) -> None:
    if tab.view is None or tab.view.name != program:
        tab.select_program(program)
        qtbot.waitUntil(lambda: tab.view is not None and tab.view.name == program, timeout=30000)
    qtbot.waitUntil(lambda: panel.current_shapes() is not None
                    and panel.current_shapes().name == program, timeout=30000)


def _plain(tooltip: str) -> str:
    """What a (rich, escaped) tooltip shows."""
    doc = QTextDocument()
    doc.setHtml(tooltip)
    return doc.toPlainText()


# --- the tables are the `shapes` command's model -------------------------------------

def test_tables_equal_shapes_json_and_torch(qtbot, window, open_wait, shapes_archive) -> None:
    path, facts, cli = shapes_archive
    panel, tab = _open_with_shapes(qtbot, window, open_wait, path)
    t = panel.tables
    for program in ("main", "fixed"):
        _show_program(qtbot, window, tab, panel, program)
        want = cli[program]
        assert panel.programs.currentText() == program
        # inputs: name, dtype, then one cell per size as torch prints it
        rows = t.rows("inputs")
        tensors = [i for i in want["inputs"] if i["shape"] is not None]
        assert [(r[0], r[1], r[2:]) for r in rows] == \
            [(i["name"], i["dtype"], i["shape"]) for i in tensors]
        assert {r[0]: r[2:] for r in rows} == facts[program]["inputs"]  # torch's own
        # symbols: name, min, max, example, sources (or the defining node), assertions
        rows = t.rows("symbols")
        assert [r[0] for r in rows] == list(want["symbols"])
        for r in rows:
            s = want["symbols"][r[0]]
            assert r[1:4] == ["-inf" if s["min"] is None else str(s["min"]),
                              "inf" if s["max"] is None else str(s["max"]),
                              "" if s["example"] is None else str(s["example"])]
            assert r[4] == (", ".join(s["sources"]) if s["sources"] else
                            f"node {s['defined_by']} (data-dependent)" if s["defined_by"] else "")
            assert r[5] == "; ".join(s["assertions"])
            assert [s["min"], s["max"]] == facts[program]["ranges"][r[0]]  # torch's own
        assert [r[0] for r in t.rows("derived")] == [d["expr"] for d in want["derived"]]
        assert [(r[0], r[1], r[2]) for r in t.rows("assertions")] == \
            [(a["condition"], a["node"], a["op"]) for a in want["assertions"]]
        assert [r[0] for r in t.rows("guards")] == [g["text"] for g in want["guards"]]
        assert [tuple(r) for r in t.rows("specialized")] == \
            [(s["source"], s["size"], s["reason"]) for s in want["specialized"]]
    # what the archive holds, so the comparisons above compared something
    main, fixed = cli["main"], cli["fixed"]
    assert any("*" in s and "+ 1" in s for s in main["inputs"][0]["shape"])  # 2*s + 1
    assert any(s["defined_by"] for s in main["symbols"].values())  # unbacked
    assert len(main["assertions"]) >= 2 and main["derived"]
    assert [s["source"] for s in fixed["specialized"]] == ["x.shape[0]", "y.shape[0]"]


def test_specialized_dims_are_highlighted(qtbot, window, open_wait, shapes_archive) -> None:
    from inspector.ui.widgets.theme import current_theme

    path, _facts, cli = shapes_archive
    panel, tab = _open_with_shapes(qtbot, window, open_wait, path)
    _show_program(qtbot, window, tab, panel, "fixed")
    table = panel.tables.tables["inputs"]
    bg = current_theme().specialized_bg
    marked = {(table.item(r, 0).text(), c - 2) for r in range(table.rowCount())
              for c in range(2, table.columnCount())
              if table.item(r, c) is not None and table.item(r, c).background().color() == bg}
    assert marked == {("x", 0), ("y", 0)}
    assert "symbolic in program 'main'" in _plain(table.item(0, 2).toolTip())
    spec = panel.tables.tables["specialized"]
    assert spec.isVisible() and spec.rowCount() == len(cli["fixed"]["specialized"])
    assert all(spec.item(r, c).background().color() == bg
               for r in range(spec.rowCount()) for c in range(spec.columnCount()))
    _show_program(qtbot, window, tab, panel, "main")  # nothing looks specialized there
    assert not panel.tables.tables["specialized"].isVisible()
    assert panel.tables.titles["specialized"].text() == "Looks specialized: none"


# --- clicks, hovers, colours, plain text ----------------------------------------------

def test_clicking_an_assertion_selects_its_node(qtbot, window, open_wait, shapes_archive) -> None:
    path, _facts, cli = shapes_archive
    panel, tab = _open_with_shapes(qtbot, window, open_wait, path)
    _show_program(qtbot, window, tab, panel, "main")
    table = panel.tables.tables["assertions"]
    assert table.rowCount() == len(cli["main"]["assertions"]) >= 2
    for row in (table.rowCount() - 1, 0):
        want = cli["main"]["assertions"][row]
        with qtbot.waitSignal(window.workspace.nodeRequested, timeout=5000) as got:
            rect = table.visualItemRect(table.item(row, 1))
            qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        assert got.args[1:] == ["main", want["node"]]
        node = tab.view.node_at(tab.listing.current_line())
        assert node is not None and node.name == want["node"]
        # the window moved the listing there; the source pane shows the check's line
        frame = window.source.frame
        assert (frame.file, frame.line) == (want["file"], want["line"])
        assert window.source.marked_line() == want["line"]  # 1-based
        assert not window.source.missing  # the real file, in the HTML-named folder
        assert want["file"].endswith("shapes_model.py") and HTML_DIR in want["file"]


def test_hovering_a_symbol_in_the_listing_shows_its_range_and_sources(
        qtbot, window, open_wait, shapes_archive) -> None:
    from inspector.core.shapes import symbol_tooltip

    path, _facts, cli = shapes_archive
    panel, tab = _open_with_shapes(qtbot, window, open_wait, path)
    _show_program(qtbot, window, tab, panel, "main")
    listing = tab.listing
    shown: dict[str, tuple[int, int]] = {}  # first place each symbol shows in the listing
    for line in range(listing.line_count()):
        text = listing.line_text(line)
        for col in range(len(text)):
            name = listing.symbol_at(line, col)
            if name and name not in shown:
                shown[name] = (line, col)
    # every symbol of the program shows in the listing's annotations (range_constraints
    # also has keys for derived sizes, `2*s40 + 1`: those are expressions, not symbols)
    symbols = {n: s for n, s in cli["main"]["symbols"].items() if re.fullmatch(r"[a-z]+\d+", n)}
    assert len(symbols) >= 2 and any(s["defined_by"] for s in symbols.values())
    assert set(shown) == set(symbols)
    for name, s in symbols.items():
        line, col = shown[name]
        tip = listing.text_tooltip(line, col)
        lo = "-inf" if s["min"] is None else s["min"]
        hi = "inf" if s["max"] is None else s["max"]
        assert tip.splitlines()[0] == f"{name}: [{lo}, {hi}]"
        assert tip == symbol_tooltip(panel.current_shapes(), name)
        for source in s["sources"]:
            assert source in tip
        if s["defined_by"]:
            assert f"node {s['defined_by']}" in tip
    # a real hover: Qt's tooltip event on the symbol shows that text, as plain text
    name = next(iter(symbols))
    line, col = shown[name]
    listing.ensure_visible(line)
    listing.horizontalScrollBar().setValue(0)
    qtbot.waitUntil(lambda: listing.first_visible_line() <= line)
    listing.ensure_columns_visible(col, col + len(name))
    pos = listing.point_at(line, col)
    QToolTip.hideText()
    event = QHelpEvent(QEvent.Type.ToolTip, pos, listing.viewport().mapToGlobal(pos))
    listing.viewportEvent(event)
    qtbot.waitUntil(QToolTip.isVisible, timeout=3000)
    assert _plain(QToolTip.text()) == listing.text_tooltip(line, col)
    assert QToolTip.text() != listing.text_tooltip(line, col)  # escaped, never raw markup
    QToolTip.hideText()
    # words that are not symbols (a dtype, a name) have no tooltip
    first = listing.line_text(line)
    dtype_col = first.find('"') + 1
    assert listing.symbol_at(line, dtype_col) is None and listing.text_tooltip(line, dtype_col) == ""


def test_symbol_colours_are_the_same_in_listing_and_table(qtbot, window, open_wait,
                                                          shapes_archive, toy_archive) -> None:
    from inspector.ui.widgets.theme import DARK, LIGHT, symbol_color

    path, _facts, cli = shapes_archive
    for archive in (path, toy_archive):
        panel, tab = _open_with_shapes(qtbot, window, open_wait, archive)
        listing = tab.listing
        names = [n for n in panel.current_shapes().symbols if re.fullmatch(r"[a-z]+\d+", n)]
        assert names
        table = panel.tables.tables["symbols"]
        table_colors = {table.item(r, 0).text(): table.item(r, 0).foreground().color()
                        for r in range(table.rowCount())}
        listing_colors = {}
        for line in range(listing.line_count()):
            layout = listing._layout(line)
            for fr in layout.formats():
                word = listing.line_text(line)[fr.start:fr.start + fr.length]
                if word in names:
                    listing_colors.setdefault(word, set()).add(fr.format.foreground().color().name())
        assert set(listing_colors) == set(names)
        for name in names:
            assert listing_colors[name] == {table_colors[name].name()}, name
            assert table_colors[name] == symbol_color(name, listing.theme)
        # inputs' dims that are one symbol wear its colour too
        inputs = panel.tables.tables["inputs"]
        for r in range(inputs.rowCount()):
            for c in range(2, inputs.columnCount()):
                item = inputs.item(r, c)
                if item is not None and item.text() in names:
                    assert item.foreground().color() == table_colors[item.text()]
        # symbols of one program have distinct colours (in both palettes)
        for theme in (LIGHT, DARK):
            colors = [symbol_color(n, theme).name() for n in names]
            assert len(set(colors)) == len(colors)
            assert all(c not in {t.name() for t in theme.tokens.values()} for c in colors)


def test_text_from_the_archive_stays_plain(qtbot, window, open_wait, shapes_archive) -> None:
    path, _facts, cli = shapes_archive
    panel, tab = _open_with_shapes(qtbot, window, open_wait, path)
    _show_program(qtbot, window, tab, panel, "main")
    table = panel.tables.tables["assertions"]
    codes = [a["code"] for a in cli["main"]["assertions"]]
    html_bearing = [r for r in range(table.rowCount()) if GuiQt.mightBeRichText(table.item(r, 3).text())]
    assert html_bearing  # the file path holds HTML_DIR; one check's code an HTML comment
    assert any("<b>k</b>" in (c or "") for c in codes)
    for r in range(table.rowCount()):
        for c in range(table.columnCount()):
            item = table.item(r, c)
            # shown as written: the tooltip (escaped) reads back as the cell's raw text
            assert item.text() in _plain(item.toolTip())
        where = table.item(r, 3).text()
        assert HTML_DIR in where  # not interpreted: "<b>" is still there
    for label in panel.findChildren(QLabel):
        assert label.textFormat() == Qt.TextFormat.PlainText, label.objectName()
    for t in panel.findChildren(QTableWidget):
        for r in range(t.rowCount()):
            for c in range(t.columnCount()):
                item = t.item(r, c)
                if item is not None and item.toolTip():
                    assert item.toolTip().startswith("<p style='white-space:pre-wrap'>")
                    assert "<b>" not in item.toolTip()  # escaped


def test_panel_follows_documents_and_computes_only_when_shown(qtbot, window, open_wait,
                                                              shapes_archive, toy_archive) -> None:
    path, _facts, _cli = shapes_archive
    panel = window.job_panels["shapes"]
    window.job_panels.docks["audit"].raise_()  # the Shapes tab is hidden
    tab = open_wait(path)
    qtbot.wait(200)
    assert not panel.is_shown() and not tab.doc.shapes_known()  # nobody looked: no work
    # a hover over a symbol in the listing asks for them (shown from the next hover on)
    listing = tab.listing
    line, col = next((ln, c) for ln in range(listing.line_count())
                     for c in range(len(listing.line_text(ln))) if listing.symbol_at(ln, c))
    assert listing.text_tooltip(line, col) == ""
    qtbot.waitUntil(tab.doc.shapes_known, timeout=30000)
    assert listing.text_tooltip(line, col).startswith(f"{listing.symbol_at(line, col)}: [")
    window.job_panels.docks["shapes"].raise_()
    qtbot.waitUntil(lambda: panel.current_shapes() is not None, timeout=30000)
    assert tab.doc.shapes_known() and panel.current_shapes().name == tab.view.name
    toy = open_wait(toy_archive)
    qtbot.waitUntil(lambda: panel.doc is toy.doc and panel.current_shapes() is not None
                    and panel.current_shapes().name == toy.view.name, timeout=30000)
    assert panel.programs.currentText() == toy.view.name
    window.close_tab(window.tabs.indexOf(toy))
    qtbot.waitUntil(lambda: panel.doc is window.workspace.current, timeout=5000)
    window.close_tab(window.tabs.indexOf(window.current_tab()))
    qtbot.waitUntil(lambda: panel.doc is None and panel.current_shapes() is None, timeout=5000)


def test_panel_alone_on_a_workspace(qtbot, shapes_archive) -> None:
    """A panel needs only a Workspace (no window): the registry's contract."""
    from inspector.ui.panels.shapes import ShapesPanel
    from inspector.ui.workspace import Workspace

    path, _facts, cli = shapes_archive
    ws = Workspace()
    panel = ShapesPanel(ws)
    qtbot.addWidget(panel)
    panel.show()
    with qtbot.waitSignal(ws.documentOpened, timeout=30000):
        ws.open(path)
    doc = ws.current
    qtbot.waitUntil(lambda: panel.current_shapes() is not None, timeout=30000)
    assert panel.current_shapes().to_json() == cli[doc.shown_program]
    requests = []
    ws.nodeRequested.connect(lambda d, prog, node: requests.append((d, prog, node)))
    table = panel.tables.tables["assertions"]
    if table.rowCount():
        table.cellClicked.emit(0, 0)
        assert requests == [(doc, doc.shown_program, table.item(0, 1).text())]
    ws.close(doc)
    ws.shutdown()
    qtbot.waitUntil(lambda: panel.doc is None, timeout=5000)
