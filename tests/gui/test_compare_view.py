"""The compare view (issue 13, window part) on real exports: a model and a
variant with one inserted node, the toy and a retargeted copy, an archive and
a copy of itself. The rows, marks and summary numbers are checked against
core's alignment computed afresh and against `pt2-inspector diff --json` run
as a real process; F7 / Shift+F7 are real key presses.

The chain archives are exported with real torch in a child process (this
process never imports torch, as the window does not).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402

from inspector.core.archive import open_archive  # noqa: E402
from inspector.core.diff import diff_archives  # noqa: E402
from inspector.core.node_match import ADDED, CHANGED, SAME  # noqa: E402
from inspector.core.retarget import retarget  # noqa: E402
from inspector.ui.widgets.diff_view import diff_colors  # noqa: E402
from inspector.ui.window.compare_tab import ARROW, CompareTab  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _export_chains(folder: Path) -> tuple[Path, Path]:
    code = ("import sys; sys.path[:0] = sys.argv[1].split('|'); from pathlib import Path; "
            "from diff_models import chain_archive; r = Path(sys.argv[2]); "
            "print(chain_archive(r, extra=False)); print(chain_archive(r, extra=True))")
    proc = subprocess.run([sys.executable, "-c", code, f"{ROOT / 'tests' / 'unit'}|{ROOT / 'tests'}", str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    plain, extra = proc.stdout.split()
    return Path(plain), Path(extra)


@pytest.fixture(scope="module")
def chains(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _export_chains(tmp_path_factory.mktemp("compare-chains"))


@pytest.fixture(scope="module")
def retargeted(toy_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compare-retarget") / "toy-cuda.pt2"
    retarget(toy_archive, out, "cuda")
    return out


def _cli_json(a: Path, b: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "inspector", "diff", str(a), str(b), "--json"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _compare(qtbot, window, a: Path, b: Path) -> CompareTab:
    tab = window.open_compare(a, b)
    with qtbot.waitSignal(tab.ready, timeout=120000):
        pass
    assert window.tabs.currentWidget() is tab
    assert window.tabs.tabText(window.tabs.currentIndex()) == f"{a.name} {ARROW} {b.name}"
    return tab


def _fresh_alignment(a: Path, b: Path, program: str | None = None):
    with open_archive(a) as x, open_archive(b) as y:
        diff = diff_archives(x, y)
    p = next(p for p in diff.programs if program is None or p.name == program)
    return p, p.alignment()


def _children(item) -> list[str]:
    return [item.child(i).text(0) for i in range(item.childCount())]


def _summary_item(tab: CompareTab, *path: str):
    tree = tab.summary
    items = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    item = None
    for label in path:
        item = next(x for x in items if x.text(0) == label)
        items = [item.child(i) for i in range(item.childCount())]
    return item


# --- rows and marks ---------------------------------------------------------------------

def test_rows_and_marks_equal_core_alignment(qtbot, window, chains):
    plain, extra = chains
    tab = _compare(qtbot, window, plain, extra)
    p, al = _fresh_alignment(plain, extra)
    view = tab.view
    assert view.row_count() == len(al) > 0
    la, lb = p.listing_a, p.listing_b
    for r in range(len(al)):
        assert view.row_status(r) == al.status[r]
        assert view.row_lines(r) == (al.a[r], al.b[r])
        ta, tb = view.row_texts(r)
        assert ta == (la.lines[al.a[r]] if al.a[r] >= 0 else None)
        assert tb == (lb.lines[al.b[r]] if al.b[r] >= 0 else None)
    # One inserted node: one added statement row, filler on A's side, and the
    # summary (like diff --json) says one node added, none removed.
    js = _cli_json(plain, extra)["programs"][0]["nodes"]
    assert len(js["added"]) == 1 and js["removed"] == []
    added_rows = [r for r in range(len(al)) if al.status[r] == ADDED]
    assert any(js["added"][0] in (view.row_texts(r)[1] or "") for r in added_rows)
    assert tab.change_count() == len(al.changes) >= 1

    # What is painted: the status colours of the theme on each side.
    tab.resize(1200, 800)
    qtbot.waitExposed(window)
    colors = diff_colors(view.theme)
    r = added_rows[0]
    view.set_current_row(0)  # the current row has its own tint: away from the ones probed
    view.set_change_span(None)
    # scrolled right to the end, the longest line stops 2 characters before the
    # right edge of each half: the last pixels of a half show its background
    view.horizontalScrollBar().setValue(view.horizontalScrollBar().maximum())
    view.verticalScrollBar().setValue(max(0, r - 2))
    image = view.viewport().grab().toImage()
    y = int(view.point_at(r, 1).y())
    x_b = int(view.half_x(1) + view.half_width() - 3)
    assert image.pixelColor(x_b, y) == colors.added
    x_a = int(view.half_x(0) + view.half_width() - 3)
    assert image.pixelColor(x_a, y) in (colors.filler, colors.hatch)  # the filler side
    changed = [r for r in range(len(al)) if al.status[r] == CHANGED]
    if changed:
        c = changed[0]
        view.verticalScrollBar().setValue(max(0, c - 2))
        image = view.viewport().grab().toImage()
        y = int(view.point_at(c, 0).y())
        assert image.pixelColor(int(view.half_width() - 3), y) == colors.changed
    same = next(r for r in range(len(al)) if al.status[r] == SAME and r != view.current_row())
    view.verticalScrollBar().setValue(max(0, same - 2))
    image = view.viewport().grab().toImage()
    assert image.pixelColor(int(view.half_width() - 3), int(view.point_at(same, 0).y())) \
        == view.theme.background


def test_dark_theme_has_its_own_marks(qtbot, window, chains):
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QApplication

    tab = _compare(qtbot, window, *chains)
    app = QApplication.instance()
    old = app.palette()
    try:
        dark = QPalette(old)
        dark.setColor(QPalette.ColorRole.Window, QColor("#202124"))
        app.setPalette(dark)
        window.apply_theme()
        assert tab.view.theme.dark
        assert tab.view.colors == diff_colors(tab.view.theme) != diff_colors(
            type(tab.view.theme)(**{**tab.view.theme.__dict__, "dark": False}))
        r = next(r for r in range(tab.view.row_count()) if tab.view.row_status(r) == ADDED)
        assert tab.view.row_background(r, 1) == diff_colors(tab.view.theme).added
    finally:
        app.setPalette(old)
        window.apply_theme()
    assert not tab.view.theme.dark


# --- summary ----------------------------------------------------------------------------

def _check_summary(tab: CompareTab, js: dict, program: str | None = None) -> None:
    progs = js["programs"]
    pj = next(p for p in progs if program is None or p["name"] == program)
    assert tab.select_program(pj["name"])
    n = pj["nodes"]
    assert tab.summary_count("Nodes", "same") == n["same"]
    assert tab.summary_count("Nodes", "changed") == len(n["changed"])
    assert tab.summary_count("Nodes", "added") == len(n["added"])
    assert tab.summary_count("Nodes", "removed") == len(n["removed"])
    assert tab.summary_count("Nodes", "metadata only") == pj["meta_changed"]
    assert _children(_summary_item(tab, "Nodes", "added")) == n["added"][:500]
    assert _children(_summary_item(tab, "Nodes", "removed")) == n["removed"][:500]
    w = pj["weights"]
    assert tab.summary_count("Weights", "same") == w["same"]
    for k in ("changed", "added", "removed"):
        assert tab.summary_count("Weights", k) == len(w[k])
        assert tab.summary_count("Ranges", k) == len(pj["ranges"][k])
    for k in ("new", "resolved"):
        assert tab.summary_count("Findings", k) == len(pj["findings"][k])
    sig = pj["signature"]
    for side in ("inputs", "outputs"):
        s = sig[side]
        assert tab.summary_count("Signature", f"{side} changed") == \
            len(s["changed"]) + len(s["added"]) + len(s["removed"])
    rec = js["records"]
    assert tab.summary_count("Records", "same") == rec["same"]
    for k in ("changed", "added", "removed"):
        assert tab.summary_count("Records", k) == len(rec[k])
    assert _summary_item(tab, f"Program {pj['name']}").text(1) == pj["status"]


def test_summary_numbers_equal_diff_json(qtbot, window, chains, toy_archive, retargeted):
    plain, extra = chains
    tab = _compare(qtbot, window, plain, extra)
    _check_summary(tab, _cli_json(plain, extra))
    tab = _compare(qtbot, window, toy_archive, retargeted)
    js = _cli_json(toy_archive, retargeted)
    assert len(js["programs"]) == 2
    for p in js["programs"]:
        _check_summary(tab, js, p["name"])
    # A retarget changes nodes (the device literals) and no weight's bytes.
    assert sum(len(p["nodes"]["changed"]) for p in js["programs"]) > 0
    assert tab.summary_count("Weights", "changed") == 0


def test_clicking_a_summary_node_shows_its_row(qtbot, window, chains):
    tab = _compare(qtbot, window, *chains)
    item = _summary_item(tab, "Nodes", "added").child(0)
    row = item.data(0, Qt.ItemDataRole.UserRole)
    assert isinstance(row, int) and tab.view.row_status(row) == ADDED
    tab.view.set_current_row(0)
    tab._summary_clicked(item)
    assert tab.view.current_row() == row
    assert item.text(0) in (tab.view.row_texts(row)[1] or "")


# --- F7 / Shift+F7 ----------------------------------------------------------------------

def test_f7_walks_the_changes_in_order_and_wraps(qtbot, window, toy_archive, retargeted):
    tab = _compare(qtbot, window, toy_archive, retargeted)
    p, al = _fresh_alignment(toy_archive, retargeted, tab.program.name)
    n = len(al.changes)
    assert n >= 3 and tab.change_count() == n
    assert tab.view.current_row() == al.changes[0]  # shown: the first change
    assert tab.counter.text() == f"change 1 of {n}"
    window.activateWindow()
    tab.view.setFocus()
    qtbot.waitUntil(lambda: tab.view.hasFocus(), timeout=5000)
    seen = [tab.view.current_row()]
    checked = 0
    for k in range(1, n):
        qtbot.keyClick(tab.view, Qt.Key.Key_F7)
        seen.append(tab.view.current_row())
        assert tab.counter.text() == f"change {k + 1} of {n}"
        start = seen[-1]
        assert tab.view.change_span() == (start, al.change_end(start))
        assert start in range(tab.view.first_visible_row(),
                              tab.view.first_visible_row() + tab.view._visible_rows())
        checked += _check_difference_on_screen(tab.view, p, start, al.change_end(start))
    assert seen == al.changes
    # every change F7 went to that holds a changed line was checked, and there are some
    parted = sum(any(None not in (p.row(r).text_a, p.row(r).text_b)
                     and p.row(r).text_a != p.row(r).text_b for r in range(c, al.change_end(c)))
                 for c in al.changes[1:])
    assert checked == parted > 0
    qtbot.keyClick(tab.view, Qt.Key.Key_F7)  # past the last: wraps, and says so
    assert tab.view.current_row() == al.changes[0]
    assert tab.counter.text() == f"change 1 of {n} (wrapped to the first change)"
    qtbot.keyClick(tab.view, Qt.Key.Key_F7, Qt.KeyboardModifier.ShiftModifier)
    assert tab.view.current_row() == al.changes[-1]
    assert tab.counter.text() == f"change {n} of {n} (wrapped to the last change)"
    back = [tab.view.current_row()]
    for _ in range(n - 1):
        qtbot.keyClick(tab.view, Qt.Key.Key_F7, Qt.KeyboardModifier.ShiftModifier)
        back.append(tab.view.current_row())
    assert back == al.changes[::-1]
    # The toolbar buttons do the same.
    qtbot.mouseClick(tab.next_button, Qt.MouseButton.LeftButton)
    assert tab.view.current_row() == al.changes[1]
    qtbot.mouseClick(tab.prev_button, Qt.MouseButton.LeftButton)
    assert tab.view.current_row() == al.changes[0]
    # From inside a change, Shift+F7 goes to that change's start (then the one before).
    inside = next(r for r in range(al.changes[1] + 1, len(al))
                  if al.status[r] != SAME) if al.change_end(al.changes[1]) > al.changes[1] + 1 \
        else None
    if inside is not None:
        tab.view.set_current_row(inside)
        tab.prev_change()
        assert tab.view.current_row() == al.changes[1]


def _check_difference_on_screen(view, diff, start: int, end: int) -> bool:
    """The first differing character of the change F7 went to is in view (a device
    literal far right scrolls the listing sideways): in the change's first row whose
    two sides differ, by core's rows (`diff`, not the view's), the column where the
    texts part computed here. False when the change has no such row (lines only
    added or removed): nothing to check there."""
    for r in range(start, end):
        row = diff.row(r)
        if row.text_a is None or row.text_b is None or row.text_a == row.text_b:
            continue
        col = len(os.path.commonprefix([row.text_a, row.text_b]))
        x = view.point_at(r, 1, col).x()
        assert view.half_x(1) + view.gutter_width() <= x < view.half_x(1) + view.half_width(), \
            (r, col, row.text_b)
        return True
    return False


# --- the same archive -------------------------------------------------------------------

def test_an_archive_against_itself_shows_no_differences(qtbot, window, toy_archive, tmp_path):
    copy = tmp_path / "copy.pt2"
    shutil.copy(toy_archive, copy)
    tab = _compare(qtbot, window, toy_archive, copy)
    assert "no differences" in tab.status_area.text()
    assert tab.counter.text() == "no differences in this program"
    assert tab.change_count() == 0
    assert all(tab.view.row_status(r) == SAME for r in range(tab.view.row_count()))
    assert not tab.act_next.isEnabled() and not tab.act_prev.isEnabled()
    assert tab.next_change() is None and tab.prev_change() is None
    assert tab.counter.text() == "no differences in this program"
    assert _cli_json(toy_archive, copy)["programs"][0]["status"] == "same"
    assert _summary_item(tab, f"Program {tab.program.name}").text(1) == "same"
    assert tab.summary_count("Nodes", "changed") == 0


# --- cancel, errors, closing ------------------------------------------------------------

def test_cancel_leaves_no_running_thread(qtbot, window, toy_archive, retargeted):
    tab = window.open_compare(toy_archive, retargeted)
    assert tab.is_busy() and tab.cancel_button.isVisibleTo(tab)
    with qtbot.waitSignal(tab.failed, timeout=60000) as blocker:
        qtbot.mouseClick(tab.cancel_button, Qt.MouseButton.LeftButton)
    assert blocker.args[0] == "cancelled"
    assert tab.status_area.text() == "Comparison cancelled."
    assert not tab.is_busy() and not tab.cancel_button.isVisibleTo(tab)
    window.pool.waitForDone(5000)
    assert window.pool.activeThreadCount() == 0
    assert tab.diff is None and tab.view.row_count() == 0
    # It can be started again, and then it completes.
    with qtbot.waitSignal(tab.ready, timeout=120000):
        tab.start()
    assert tab.change_count() > 0


def test_closing_a_tab_mid_comparison_waits_for_its_worker(qtbot, window, toy_archive,
                                                           retargeted):
    tab = window.open_compare(toy_archive, retargeted)
    assert tab.is_busy()
    worker = tab.comparison_task
    window.close_tab(window.tabs.indexOf(tab))
    # closing returned only after the worker's function did (its thread then goes
    # back to the pool a moment later)
    assert worker is not None and worker.finished.is_set()
    assert window.pool.waitForDone(5000) and window.pool.activeThreadCount() == 0
    assert window.tabs.count() == 0


def test_an_unreadable_file_is_a_plain_message(qtbot, window, toy_archive, tmp_path):
    bad = tmp_path / "<b>bad<b>.pt2"
    bad.write_bytes(b"not a zip")
    tab = window.open_compare(toy_archive, bad)
    with qtbot.waitSignal(tab.failed, timeout=60000) as blocker:
        pass
    message = blocker.args[0]
    assert tab.status_area.text() == f"Cannot compare: {message}"
    assert "<b>bad<b>.pt2" in message
    assert tab.status_area.label.textFormat() == Qt.TextFormat.PlainText
    assert "Traceback" not in tab.status_area.text()
    assert not tab.is_busy()


# --- plain text -------------------------------------------------------------------------

def _rename_node(src: Path, dst: Path, old: str, new: str) -> None:
    """A copy of `src` whose program names the value `old` `new` (every reference)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".json") and "/models/" in info.filename:
                data = data.replace(f'"{old}"'.encode(), json.dumps(new).encode())
            zout.writestr(info, data)


def test_html_in_names_is_shown_as_plain_text(qtbot, window, chains, tmp_path):
    plain, extra = chains
    html = "<b>add_3</b>"  # the inserted node of `extra`, renamed
    other = tmp_path / "<i>b<i>.pt2"
    _rename_node(extra, other, "add_3", html)
    tab = _compare(qtbot, window, plain, other)
    assert tab.title_b.text() == "B: <i>b<i>.pt2"
    for label in (tab.title_a, tab.title_b, tab.counter, tab.status_area.label):
        assert label.textFormat() == Qt.TextFormat.PlainText
    assert "<i>b<i>.pt2" in tab.status_area.text()
    # The node reads literally, in the rows and in the summary (tree items are plain).
    rows = [tab.view.row_texts(r)[1] or "" for r in range(tab.view.row_count())]
    assert any(t.strip().startswith(html + ":") for t in rows)
    js = _cli_json(plain, other)["programs"][0]["nodes"]
    assert js["added"] == [html]
    assert _children(_summary_item(tab, "Nodes", "added")) == [html]


# --- opening a compare view -------------------------------------------------------------

def test_file_menu_and_shift_drop_open_a_compare_tab(qtbot, window, open_wait, chains):
    plain, extra = chains
    assert window.act_compare.text() == "Compare &With…"
    open_wait(plain)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(extra))])
    event = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier)
    window.dropEvent(event)
    tab = window.tabs.currentWidget()
    assert isinstance(tab, CompareTab)
    assert (tab.path_a, tab.path_b) == (plain, extra)
    with qtbot.waitSignal(tab.ready, timeout=120000):
        pass
    assert tab.change_count() > 0
    # A plain drop still opens the file in its own tab.
    window.tabs.setCurrentIndex(0)
    event = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.loadsFinished, timeout=60000):
        window.dropEvent(event)
    assert window.current_archive_path() == str(extra)


def test_audit_retarget_compares_before_and_after(qtbot, window, toy_tab, toy_archive, tmp_path):
    audit = window.job_panels.audit
    qtbot.waitUntil(lambda: audit.report is not None
                    and audit.report.path == str(toy_archive), timeout=60000)
    out = tmp_path / "toy-cuda.pt2"
    with qtbot.waitSignal(audit.retargeted, timeout=60000):
        audit.retarget_to("cuda", out)
    assert audit.compare_button.isVisibleTo(audit)
    qtbot.mouseClick(audit.compare_button, Qt.MouseButton.LeftButton)
    tab = window.tabs.currentWidget()
    assert isinstance(tab, CompareTab) and (tab.path_a, tab.path_b) == (toy_archive, out)
    with qtbot.waitSignal(tab.ready, timeout=120000):
        pass
    # The changed rows are the device literals the retarget rewrote.
    changed = [tab.view.row_texts(r) for r in range(tab.view.row_count())
               if tab.view.row_status(r) == CHANGED]
    assert changed and any("cpu" in (a or "") and "cuda" in (b or "") for a, b in changed)
    # Inside a changed row the word that differs is marked: cpu on A's side, cuda on B's.
    r = next(r for r in range(tab.view.row_count()) if tab.view.row_status(r) == CHANGED
             and "device(type='cpu')" in (tab.view.row_texts(r)[0] or ""))
    (ta, tb), (sa, sb) = tab.view.row_texts(r), tab.view.inline_spans(r)
    assert [ta[x:y] for x, y in sa] == ["cpu"] and [tb[x:y] for x, y in sb] == ["cuda"]
    assert tab.summary_count("Weights", "changed") == 0
    audit.shutdown()


def test_the_compare_tab_drives_the_selection_model(qtbot, window, toy_archive, retargeted):
    """Issue 29: the compare view's cursor is the selection while its tab is current:
    the Details panel (a registered panel, following the selection) shows B's node on
    the current row, and moving the row moves it; closing the tab forgets both sides."""
    tab = _compare(qtbot, window, toy_archive, retargeted)
    sel = window.workspace.selection
    qtbot.waitUntil(lambda: sel.document is tab.side_b and window.details.node is not None,
                    timeout=60000)
    p, al = tab.program, tab._alignment
    row = tab.view.current_row()
    node = p.listing_b.line_nodes[al.b[row]]
    assert (sel.program, sel.line, sel.node) == (p.name, al.b[row], node.name)
    assert window.details.node.name == node.name
    # another row with a node on B's side: the panel follows
    other = next(r for r in range(len(al)) if r != row and al.b[r] >= 0
                 and p.listing_b.line_nodes[al.b[r]] is not None
                 and p.listing_b.line_nodes[al.b[r]].name != node.name)
    tab.view.set_current_row(other)
    moved = p.listing_b.line_nodes[al.b[other]]
    qtbot.waitUntil(lambda: window.details.node is not None
                    and window.details.node.name == moved.name, timeout=10000)
    assert sel.line == al.b[other]
    window.close_tab(window.tabs.indexOf(tab))
    assert sel.document is None and window.details.node is None
