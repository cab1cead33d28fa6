"""The Profile panel against the real toy archive, real job children and the real CLI:
what the window shows must be what `pt2-inspector check|profile --json` says."""

from __future__ import annotations

import json
import os
import subprocess
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from _panel_helpers import ROOT, child_pids, no_leaks, wait_gone  # noqa: E402,F401
from PySide6.QtCore import Qt  # noqa: E402

from inspector.core.run_layers import ms_text  # noqa: E402

JOB_TIMEOUT_MS = 300_000  # a job child imports torch: slow on a busy 2-core machine


def cli(*args: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "inspector", *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture
def panel(qtbot, no_leaks, window, toy_tab):
    p = window.job_panels["profile"]
    window.job_panels.docks["profile"].show()
    window.job_panels.docks["profile"].raise_()
    yield p
    p.shutdown()


def choose(combo, data) -> None:
    index = combo.findData(data)
    assert index >= 0, f"{data!r} not offered"
    combo.setCurrentIndex(index)


def run_job(qtbot, panel, button) -> dict:
    signal = panel.checked if button is panel.check_button else panel.profiled
    qtbot.waitUntil(button.isEnabled, timeout=5000)  # the inputs planned, no error
    with qtbot.waitSignal(signal, timeout=JOB_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.runner.is_running(), timeout=10000)
    return blocker.args[0]


def click_row(qtbot, table, pred) -> object:
    for i in range(table.proxy.rowCount()):
        row = table.row_at(i)
        if pred(row):
            index = table.proxy.index(i, 0)
            table.scrollTo(index)
            qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton,
                             pos=table.visualRect(index).center())
            return row
    raise AssertionError("no such row")


def line_of(tab, name: str) -> int:
    return tab.view.listing.definitions[("", name)]


def test_check_on_cuda_marks_the_failing_nodes_like_the_cli(qtbot, panel, window, toy_tab,
                                                            toy_archive):
    choose(panel.device, "cuda")  # offered although this machine has none: a dry run
    assert not panel.profile_button.isEnabled()  # profiling needs the real device
    result = run_job(qtbot, panel, panel.check_button)
    code, expected = cli("check", str(toy_archive), "--device", "cuda")
    assert code == 1

    # the same failures as the CLI, node by node, with torch's message
    got = {(p["name"], f["node"], f["message"]) for p in result["programs"] for f in p["failures"]}
    want = {(p["name"], f["node"], f["message"]) for p in expected["programs"]
            for f in p["failures"]}
    assert got == want
    decoder = next(p for p in expected["programs"] if p["name"] == "decoder")
    emb = next(f for f in decoder["failures"] if f["node"] == "embedding_1")

    # the gutter of the decoder listing marks every failing node, with the message
    assert toy_tab.view.name == "decoder"
    marks = toy_tab.listing.line_marks()
    for f in decoder["failures"]:
        line = line_of(toy_tab, f["node"])
        assert marks.get(line) == "error", f["node"]
        assert f["message"] in toy_tab.listing.gutter_tooltip(line)
        assert line + 1 == f["line"]  # the CLI's listing line, 1-based
    assert emb["message"] in toy_tab.listing.gutter_tooltip(line_of(toy_tab, "embedding_1"))

    # the failures table lists them; a click selects the node (and the details show why)
    assert {(r.program, r.node) for r in panel.failures.shown_rows()} >= \
        {("decoder", f["node"]) for f in decoder["failures"]}
    toy_tab.listing.set_current_line(0)
    click_row(qtbot, panel.failures, lambda r: r.program == "decoder" and r.node == "embedding_1")
    qtbot.waitUntil(lambda: toy_tab.listing.current_line() == line_of(toy_tab, "embedding_1"))
    assert window.details.node is not None and window.details.node.name == "embedding_1"
    assert emb["message"] in window.details.plain_text()

    # Clear takes the results off the listing and out of the panel
    qtbot.mouseClick(panel.clear_button, Qt.MouseButton.LeftButton)
    assert panel.failures.shown_rows() == []
    assert emb["message"] not in toy_tab.listing.gutter_tooltip(line_of(toy_tab, "embedding_1"))
    assert toy_tab.doc.annotations.layer("decoder", "check") is None
    assert not panel.clear_button.isEnabled()

    # the options are remembered for the next window
    from inspector.ui.panels.profile import ProfilePanel
    from inspector.ui.workspace import Workspace

    again = ProfilePanel(Workspace())
    qtbot.addWidget(again)
    assert again.device_id() == "cuda"


def test_profile_on_cpu_fills_heat_table_modules_and_details(qtbot, panel, window, toy_tab,
                                                             toy_archive):
    choose(panel.device, "cpu")
    choose(panel.program, "decoder")
    panel.warmup.setValue(0)
    panel.repeats.setValue(1)
    result = run_job(qtbot, panel, panel.profile_button)
    _code, expected = cli("profile", str(toy_archive), "--device", "cpu", "--program",
                          "decoder", "--warmup", "0", "--repeats", "1")
    want = {n["name"] for n in expected["programs"][0]["nodes"]}
    assert want and {n["name"] for n in result["programs"][0]["nodes"]} == want

    # every op node the CLI names has a time in the heat column, the panel's own
    heat = toy_tab.listing.line_heat()
    mine = {n["name"]: n for n in result["programs"][0]["nodes"]}
    for name in want:
        line = line_of(toy_tab, name)
        assert line in heat, name
        assert heat[line].text == ms_text(mine[name]["ms"])
    slowest = max(mine.values(), key=lambda n: n["ms"])
    assert heat[line_of(toy_tab, slowest["name"])].level == pytest.approx(1.0)

    # the table holds every node and sorts by time, both ways
    table = panel.nodes
    assert len(table.shown_rows()) == len(want)
    header = table.horizontalHeader()
    ms_col = 1
    assert table.proxy.sortColumn() == ms_col  # slowest first
    orders = []
    for _ in range(3):
        order = table.proxy.sortOrder()
        orders.append(order)
        times = [r.ms for r in table.shown_rows()]
        assert times == sorted(times, reverse=order == Qt.SortOrder.DescendingOrder)
        qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                         pos=_section_center(header, ms_col))
    assert orders[0] == Qt.SortOrder.DescendingOrder and orders[1] == Qt.SortOrder.AscendingOrder
    assert table.proxy.sortColumn() == ms_col

    # the module tree's time column shows the job's module rollup
    root = next(m for m in result["programs"][0]["modules"] if m["path"] == "")
    assert window.modules.time_text("") == ms_text(root["ms"])
    assert not window.modules.tree.isColumnHidden(3)

    # a click on the slowest node selects it; the details pane shows its time
    clicked = click_row(qtbot, table, lambda r: r.name == slowest["name"])
    qtbot.waitUntil(lambda: toy_tab.listing.current_line() == line_of(toy_tab, clicked.name))
    assert ms_text(slowest["ms"]) in window.details.plain_text()

    # closing the document drops its results
    doc = toy_tab.doc
    window.close_tab(window.tabs.indexOf(toy_tab))
    qtbot.waitUntil(lambda: doc not in panel.results)
    assert panel.nodes.shown_rows() == []


def _section_center(header, col):
    from PySide6.QtCore import QPoint

    x = header.sectionViewportPosition(col) + header.sectionSize(col) // 2
    return QPoint(x, header.height() // 2)


def test_cancel_stops_the_child(qtbot, panel):
    before = child_pids()
    choose(panel.device, "cpu")
    qtbot.waitUntil(panel.profile_button.isEnabled, timeout=5000)
    with qtbot.waitSignal(panel.runner.progress, timeout=60000):  # torch is importing
        panel.start("profile")
    pid = panel.runner.pid()
    assert pid and pid in child_pids()
    assert panel.cancel_button.isEnabled() and not panel.check_button.isEnabled()
    qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert not panel.runner.is_running()
    # it ends, and takes nothing with it left running (how fast: bench_ui_jobs.py)
    assert wait_gone({pid}, timeout=None) == set()
    assert wait_gone(None, timeout=None) - before == set()
    assert panel.check_button.isEnabled()
    assert panel.nodes.shown_rows() == []  # nothing from the killed child


def test_inputs_are_validated_inline(qtbot, panel):
    choose(panel.program, "decoder")
    panel.dims.setText("s70=abc")
    assert not panel.check_button.isEnabled()  # syntax: at once, no job started
    assert "s70" in panel.plan_label.text()
    panel.dims.setText("s70=99999")  # outside the program's range: planned from the JSON
    qtbot.waitUntil(lambda: not panel.check_button.isEnabled() and "range" in panel.plan_label.text(),
                    timeout=5000)
    panel.dims.setText("s70=16")
    qtbot.waitUntil(panel.check_button.isEnabled, timeout=5000)
    qtbot.waitUntil(lambda: "16]" in panel.plan_label.text(), timeout=5000)
    assert not panel.runner.is_running()


def test_retargeted_archive_checks_clean(qtbot, panel, window, open_wait, toy_archive, tmp_path):
    out = tmp_path / "toy-cuda.pt2"
    proc = subprocess.run([sys.executable, "-m", "inspector", "retarget", str(toy_archive),
                           "--device", "cuda", "-o", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    tab = open_wait(out)
    assert panel.doc is not None and panel.doc.path == out
    choose(panel.device, "cuda")
    choose(panel.program, "")
    result = run_job(qtbot, panel, panel.check_button)
    assert all(p["ok"] and not p["failures"] for p in result["programs"])
    assert "error" not in tab.listing.line_marks().values()
    assert [r for r in panel.failures.shown_rows() if r.severity == "error"] == []
    assert "runs on cuda" in panel.summary.text()


def _with_record(src, dst, rel: str, data: bytes):
    import zipfile

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        names = zin.namelist()
        top = next(n for n in names if n.endswith("/archive_format"))[: -len("archive_format")]
        for name in names:
            zout.writestr(name, zin.read(name))
        zout.writestr(top + rel, data)
    return dst


def test_untrusted_archive_asks_before_running(qtbot, panel, open_wait, toy_archive, tmp_path,
                                               monkeypatch):
    bad = _with_record(toy_archive, tmp_path / "so.pt2", "data/aotinductor/model/model.so",
                       b"\x7fELF")
    open_wait(bad)
    asked: list[str] = []
    answer = [False]
    monkeypatch.setattr(panel, "confirm_trust", lambda msg: asked.append(msg) or answer[0])
    choose(panel.device, "cpu")
    qtbot.waitUntil(panel.check_button.isEnabled, timeout=5000)
    qtbot.mouseClick(panel.check_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(asked) and not panel.runner.is_running(), timeout=JOB_TIMEOUT_MS)
    assert "model.so" in asked[0]
    assert "failed" in panel.status_area.text() and "model.so" in panel.status_area.text()
    assert panel.results == {}

    answer[0] = True  # consent: the same check again, with --trust
    qtbot.mouseClick(panel.check_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(asked) == 2 and panel.running_spec() is not None and panel.running_spec().trust,
                    timeout=JOB_TIMEOUT_MS)
    panel.cancel()
    assert not panel.runner.is_running()


def test_a_closed_archive_is_freed_after_the_panel_planned_for_it(qtbot, no_leaks, window,
                                                                  open_wait, toy_archive):
    # the panel plans inputs for the open archive; once its tab closes, nothing of
    # the panel may keep the document (and so its parsed programs) alive: a plan's
    # bookkeeping did, ~400 MB for a 100k-node program, until another was planned
    import gc
    import weakref

    panel = window.job_panels["profile"]
    window.job_panels.docks["profile"].show()
    tab = open_wait(toy_archive)
    qtbot.waitUntil(lambda: panel.plan_label.text().startswith("Inputs"), timeout=30000)
    doc, archive = weakref.ref(tab.doc), weakref.ref(tab.doc.archive)
    del tab
    while window.tabs.count():
        window.close_tab(0)
    window.pool.waitForDone(30000)
    for _ in range(5):  # deleteLater, the archive's release
        qtbot.wait(20)
    gc.unfreeze()  # the window freezes what survived a load (core/document.py)
    gc.collect()
    held = doc() or archive()
    assert held is None, [type(r).__name__ for r in gc.get_referrers(held)][:6]
    panel.shutdown()
