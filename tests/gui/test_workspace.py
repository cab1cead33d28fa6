"""The Workspace and the task mechanism without the window (panels see only these), and
the window as the Workspace's client: annotations in the gutter, node requests, closing."""

from __future__ import annotations

import os
import threading

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QThreadPool  # noqa: E402

from inspector.core.annotations import ERROR, AnnotationLayer, Heat, Mark  # noqa: E402
from inspector.core.archive import ArchiveError  # noqa: E402
from inspector.core.errors import InspectorError  # noqa: E402
from inspector.ui.tasks import TaskGroup  # noqa: E402
from inspector.ui.workspace import Workspace  # noqa: E402


@pytest.fixture
def group(qapp):
    pool = QThreadPool()
    pool.setMaxThreadCount(1)
    g = TaskGroup(pool)
    yield g
    g.cancel()
    pool.waitForDone(5000)


def test_a_task_delivers_on_the_gui_thread(qtbot, group):
    got, ended = [], []
    main = threading.get_ident()
    group.start(lambda a, b: (a + b, threading.get_ident()), 2, 3,
                on_done=got.append, on_end=lambda: ended.append(threading.get_ident()))
    qtbot.waitUntil(lambda: bool(ended), timeout=5000)
    (value, worker), = got
    assert value == 5 and worker != main and ended == [main]
    assert not group.busy()


def test_errors_arrive_as_message_and_traceback(qtbot, group):
    failed = []

    def bad_input():
        raise InspectorError("no such program (archive has 2)")

    def bug():
        return {}["missing"]

    group.start(bad_input, on_fail=lambda m, d: failed.append((m, d)))
    group.start(bug, on_fail=lambda m, d: failed.append((m, d)))
    qtbot.waitUntil(lambda: len(failed) == 2, timeout=5000)
    assert failed[0][0] == "no such program (archive has 2)"
    assert failed[1][0].startswith("internal error: KeyError") and "Traceback" in failed[1][1]


def test_a_newer_task_with_the_same_key_drops_the_stale_result(qtbot, group):
    gate, started = threading.Event(), threading.Event()
    got, ended, ran = [], [], []

    def old():
        started.set()
        gate.wait(60)  # holds the group's one thread until the test lets go
        return "old"

    group.start(old, on_done=got.append, key="audit", on_end=lambda: ended.append("old"))
    assert started.wait(30)  # the one thread is busy: what follows is queued
    queued = group.start(lambda: ran.append("other"), on_done=got.append, key="other")
    group.start(lambda: "new", on_done=got.append, key="audit",
                on_end=lambda: ended.append("new"))
    group.cancel("other")  # queued: it never starts, it ends at once
    assert queued.cancelled and queued.finished.is_set()
    gate.set()
    qtbot.waitUntil(lambda: len(ended) == 2, timeout=5000)
    assert got == ["new"] and ran == []


def test_close_runs_its_callback_only_after_the_running_task_returned(qtbot, group):
    gate, started, returned, closed = threading.Event(), threading.Event(), threading.Event(), []

    def slow():
        started.set()
        gate.wait(5)
        returned.set()
        return "late"

    got = []
    group.start(slow, on_done=got.append)
    assert started.wait(5)  # running (a task taken but not yet started would be skipped)
    group.close(lambda: closed.append(returned.is_set()))
    assert closed == []  # still running: the archive must stay open
    gate.set()
    qtbot.waitUntil(lambda: bool(closed), timeout=5000)
    assert closed == [True] and got == []  # the outcome was dropped


def test_gated_tasks_wait_for_the_gate_and_start_in_order(qtbot, group):
    from PySide6.QtCore import QObject, Signal

    class Painter(QObject):
        painted = Signal()

    painter = Painter()
    ran, got = [], []
    group.gate_until(painter.painted, 60_000)  # only the signal can open it here
    group.start(lambda: ran.append("gated 1") or 1, on_done=got.append, gated=True)
    group.start(lambda: ran.append("now") or 0, on_done=got.append)  # not gated: at once
    qtbot.waitUntil(lambda: got == [0], timeout=5000)
    stale = group.start(lambda: ran.append("stale") or -1, on_done=got.append, gated=True,
                        key="audit")
    group.start(lambda: ran.append("gated 2") or 2, on_done=got.append, gated=True,
                key="audit")  # replaces the stale one while both wait
    assert stale.cancelled and stale.finished.is_set() and group.busy()
    qtbot.wait(50)
    assert ran == ["now"]  # the gated ones still wait
    painter.painted.emit()
    qtbot.waitUntil(lambda: len(got) == 3, timeout=5000)
    assert ran == ["now", "gated 1", "gated 2"] and got == [0, 1, 2]
    group.start(lambda: 3, on_done=got.append, gated=True)  # open for good now
    qtbot.waitUntil(lambda: len(got) == 4, timeout=5000)
    assert not group.busy()


def test_a_gate_opens_by_itself_when_its_signal_never_comes(qtbot, group):
    from PySide6.QtCore import QObject, Signal

    class Painter(QObject):
        painted = Signal()

    painter = Painter()
    got = []
    group.gate_until(painter.painted, 100)
    group.start(lambda: "late", on_done=got.append, gated=True)
    qtbot.waitUntil(lambda: got == ["late"], timeout=5000)


def test_a_gate_closes_again_for_the_next_program_and_its_old_deadline_is_void(qtbot, group):
    """A Document gates again for each program it shows: the second gate waits for the
    second paint; the first gate's deadline (passed while the second waits) and the
    first gate's signal (fired again) do not open it."""
    from PySide6.QtCore import QObject, Signal

    class Painter(QObject):
        painted = Signal()
        other = Signal()

    painter = Painter()
    got = []
    group.gate_until(painter.painted, 150)
    painter.painted.emit()  # the first program's paint opens the first gate
    qtbot.wait(10)  # (once the emitter's work is over: a queued slot)
    group.gate_until(painter.other, 60_000)  # the next program's gate
    group.start(lambda: "second", on_done=got.append, gated=True)
    qtbot.wait(400)  # the first deadline has passed
    painter.painted.emit()
    qtbot.wait(50)
    assert got == [] and group.busy()  # still held
    painter.other.emit()
    qtbot.waitUntil(lambda: got == ["second"], timeout=5000)


def test_cancelling_a_group_ends_its_gated_tasks(qtbot, group):
    from PySide6.QtCore import QObject, Signal

    class Painter(QObject):
        painted = Signal()

    painter = Painter()
    ran, ended, closed = [], [], []
    group.gate_until(painter.painted, 60_000)
    task = group.start(lambda: ran.append(1), gated=True, on_end=lambda: ended.append(1))
    group.close(lambda: closed.append(True))
    assert task.cancelled and task.finished.is_set() and ended == [1] and closed == [True]
    painter.painted.emit()
    qtbot.wait(50)
    assert ran == [] and not group.busy()


def test_stop_asks_a_context_task_and_still_delivers(qtbot, group):
    started, failed, progress = threading.Event(), [], []

    def work(ctx):
        ctx.progress(0.5)
        started.set()
        while not ctx.cancelled():
            threading.Event().wait(0.01)
        raise InspectorError("cancelled by the user")

    task = group.start(work, context=True, on_progress=progress.append,
                       on_fail=lambda m, d: failed.append(m))
    assert started.wait(5)
    task.stop()
    qtbot.waitUntil(lambda: bool(failed), timeout=5000)
    assert failed == ["cancelled by the user"] and progress == [0.5]


def test_workspace_opens_annotates_and_closes(qtbot, toy_archive):
    ws = Workspace()
    with qtbot.waitSignal(ws.documentOpened, timeout=60000) as opened:
        assert ws.open(toy_archive) is None
    doc = opened.args[0]
    assert ws.current is doc and ws.current_path() == str(toy_archive)
    assert ws.open(toy_archive) is doc  # already open: the same document
    view = doc.view()
    assert view is not None and view.name == doc.shown_program
    node = next(n for n in view.program.all_nodes() if n.name)
    with qtbot.waitSignal(ws.marksChanged) as changed:
        ws.annotate(doc, view.name, AnnotationLayer("check", marks={node.name: Mark(ERROR, "x")}))
    assert changed.args == [doc, view.name]
    resolved = doc.annotations.resolve(view.program, view.listing)
    assert resolved.marks == {view.listing.line_of(node): Mark(ERROR, "x")}
    with qtbot.waitSignal(ws.nodeRequested) as requested:
        ws.select_node(view.name, node.name)
    assert requested.args == [doc, view.name, node.name]
    qtbot.waitUntil(lambda: not ws.is_busy(), timeout=60000)
    with qtbot.waitSignal(ws.documentClosed):
        ws.close(doc)
    assert ws.current is None and ws.documents == []
    with pytest.raises(ArchiveError, match="already closed"):  # the archive's zip is closed
        doc.archive.read_bytes(doc.archive.records[0].path, 1 << 20)
    ws.shutdown()


def test_a_panel_needs_only_a_workspace(qtbot, toy_archive):
    """AuditPanel(Workspace()): audits the opened document and publishes its layer."""
    from inspector.ui.panels.audit import AuditPanel

    ws = Workspace()
    panel = AuditPanel(ws)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.audited, timeout=60000):
        ws.open(toy_archive)
    doc = ws.current
    assert panel.report.path == str(toy_archive) and panel.report.findings
    layers = {p: doc.annotations.layer(p, "audit") for p in doc.program_names}
    marked = {p: set(lay.line_marks) for p, lay in layers.items() if lay is not None}
    expected = {p: {f.line for f in panel.report.findings if f.program == p and f.line is not None}
                for p in doc.program_names}
    assert marked == {p: lines for p, lines in expected.items()}
    assert any(lines for lines in marked.values())
    panel.shutdown()
    ws.shutdown()


def test_the_window_paints_annotation_layers(qtbot, window, toy_tab):
    view = toy_tab.view
    nodes = [n for n in view.program.all_nodes() if n.name][:3]
    heat = {n.name: Heat(float(i + 1), f"{i + 1}.0 ms", "self time") for i, n in enumerate(nodes)}
    marks = {nodes[0].name: Mark(ERROR, "fails on meta: no kernel")}
    # the Memory panel puts each node's bytes in the gutter as the archive opens: this
    # test paints a profile layer alone, so that one goes first
    window.workspace.clear_annotations(toy_tab.doc, "memory")
    assert not toy_tab.listing.line_heat()
    gutter = toy_tab.listing.gutter_width()  # the heat column widens it
    window.workspace.annotate(toy_tab.doc, view.name,
                              AnnotationLayer("profile", marks=marks, heat=heat, title="time"))
    first = view.listing.line_of(nodes[0])
    assert toy_tab.listing.line_marks()[first] == ERROR
    assert {ln: h.text for ln, h in toy_tab.listing.line_heat().items()} == {
        view.listing.line_of(n): f"{i + 1}.0 ms" for i, n in enumerate(nodes)}
    assert toy_tab.listing.line_heat()[view.listing.line_of(nodes[2])].level == 1.0
    tip = toy_tab.listing.gutter_tooltip(first)
    assert tip.split("\n") == ["time: 1.0 ms", "self time", "fails on meta: no kernel"]
    assert toy_tab.listing.gutter_width() > gutter
    window.workspace.clear_annotations(toy_tab.doc, "profile")
    assert first not in toy_tab.listing.line_marks() and not toy_tab.listing.line_heat()
    assert toy_tab.listing.gutter_width() == gutter


def test_a_registered_panel_is_docked_and_follows_the_workspace(qtbot, monkeypatch, toy_archive):
    """What a new panel does: one PanelSpec in the registry, nothing in the window."""
    from PySide6.QtWidgets import QLabel

    from inspector.ui.panels import registry
    from inspector.ui.window.main_window import MainWindow

    class Probe(QLabel):
        def __init__(self, ws: Workspace) -> None:
            super().__init__("probe")
            self.seen: list[str | None] = []
            ws.currentChanged.connect(lambda doc: self.seen.append(doc and doc.path.name))

    monkeypatch.setattr(registry, "PANELS", [*registry.PANELS, registry.PanelSpec(
        "probe", "Probe", lambda ws, services: Probe(ws), "bottom")])
    w = MainWindow(remember=False)
    qtbot.addWidget(w)
    try:
        probe = w.job_panels["probe"]
        assert w.job_panels.docks["probe"].windowTitle() == "Probe"
        assert "Probe" in [a.text() for a in w.view_menu.actions()]
        with qtbot.waitSignal(w.loadsFinished, timeout=60000):
            w.open_archive(toy_archive)
        assert probe.seen[-1] == toy_archive.name
    finally:
        w.close()
