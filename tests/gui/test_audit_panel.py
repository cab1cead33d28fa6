"""The Audit panel in the real window: findings of a real CPU export, click to the node,
gutter marks, retarget to cuda (no GPU needed) with before/after, cancel."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from _panel_helpers import no_leaks  # noqa: E402,F401
from PySide6.QtCore import Qt  # noqa: E402

from inspector.core.archive import open_archive  # noqa: E402
from inspector.core.audit import DEVICE_LITERAL, ERROR, audit_archive  # noqa: E402


@pytest.fixture
def audited(qtbot, no_leaks, window, toy_tab, toy_archive):
    """The window with the toy archive open and its audit shown."""
    panels = window.job_panels
    panels.docks["audit"].raise_()
    audit = panels.audit
    qtbot.waitUntil(lambda: audit.report is not None
                    and audit.report.path == str(toy_archive), timeout=60000)
    # The default target is the CLI's (none: tests/gui/test_run_defaults.py); these
    # tests audit for cuda, where the cpu literals are errors.
    audit.set_target("cuda")
    qtbot.waitUntil(lambda: audit.report.target == "cuda", timeout=60000)
    yield window, audit
    audit.shutdown()


@pytest.fixture(scope="module")
def torch_cpu_literals(toy_archive):
    """{program: how many device(type='cpu') torch itself prints for it}, read in a child
    (this process never imports torch)."""
    code = ("import json, sys, warnings; warnings.simplefilter('ignore')\n"
            "import transformers.modeling_outputs  # the encoder's output pytree type\n"
            "from torch.export.pt2_archive._package import load_pt2\n"
            "eps = load_pt2(sys.argv[1]).exported_programs\n"
            "print(json.dumps({n: ep.graph_module.print_readable(print_output=False)"
            ".count(\"device(type='cpu')\") for n, ep in eps.items()}))\n")
    out = subprocess.run([sys.executable, "-c", code, str(toy_archive)], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


def _literals(report, program=None):
    return [f for f in report.findings if f.rule == DEVICE_LITERAL
            and (program is None or f.program == program)]


def test_lists_device_literals_of_a_cpu_export(audited, toy_archive, torch_cpu_literals):
    window, audit = audited
    assert audit.report.target == "cuda"  # cpu literals are errors for cuda
    literals = _literals(audit.report)
    # One finding per cpu literal torch prints, program by program.
    assert Counter(f.program for f in literals) == {
        p: n for p, n in torch_cpu_literals.items() if n}
    assert all(f.severity == ERROR for f in literals)
    counts = audit.before.rule_counts()
    assert counts[DEVICE_LITERAL] == len(literals)
    assert len(audit.before.findings_shown()) == len(audit.report.findings)
    # A cpu export has no other error (its weights on cpu are warnings): the count line
    # reads exactly torch's number of literals.
    errors = re.findall(r"(\d+) errors?\b", audit.counts_label.text())
    assert errors == [str(sum(torch_cpu_literals.values()))], audit.counts_label.text()
    # Every device-literal line of the shown program reads device(type='cpu') in the listing,
    # and is marked in the gutter as an error.
    tab = window.current_tab()
    program = tab.view.name
    lines = tab.view.listing.lines
    shown = _literals(audit.report, program)
    assert shown
    for f in shown:
        assert "device(type='cpu')" in lines[f.line], lines[f.line]
    marks = tab.listing.line_marks()
    assert {f.line for f in shown} <= set(marks)
    assert all(marks[f.line] == ERROR for f in shown)


def test_clicking_a_finding_selects_its_node(qtbot, audited):
    window, audit = audited
    tab = window.current_tab()
    program = tab.view.name
    item = audit.before.leaf_for(lambda f: f.rule == DEVICE_LITERAL and f.program == program
                                 and f.line is not None and f.line > 5)
    assert item is not None
    f = item.data(0, Qt.ItemDataRole.UserRole + 1)
    audit.before.scrollToItem(item)
    rect = audit.before.visualItemRect(item)
    assert rect.isValid()
    qtbot.mouseClick(audit.before.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: tab.listing.current_line() == f.line, timeout=5000)
    assert f.node in tab.view.listing.lines[f.line]
    assert "device=cpu" in audit.detail.toPlainText()


def test_retarget_to_cuda_opens_a_tab_and_compares(qtbot, audited, tmp_path, toy_archive):
    window, audit = audited
    out = tmp_path / "toy-cuda.pt2"
    before_errors = audit.report.counts()[ERROR]
    with qtbot.waitSignal(audit.retargeted, timeout=60000) as blocker:
        assert audit.retarget_to("cuda", out)
        assert not audit.retarget_button.isEnabled() and audit.cancel_button.isEnabled()
    result, after = blocker.args
    assert out.is_file() and result.output == out
    assert sum(p.literals for p in result.programs) == len(_literals(audit.report))
    assert after.counts()[ERROR] == 0 < before_errors
    # The archive itself: no cpu literal left (core audit, independent of the panel).
    with open_archive(out) as archive:
        again = audit_archive(archive, target=None)
    assert all(f.group != "cpu" for f in again if f.rule == DEVICE_LITERAL)
    # Opened in a new tab; before and after side by side.
    qtbot.waitUntil(lambda: window.tabs.count() == 2
                    and window.current_archive_path() == str(out), timeout=60000)
    assert audit.after_box.isVisibleTo(audit)
    assert audit.after_tree.rule_counts()[DEVICE_LITERAL] == len(_literals(after))
    assert f"Errors {before_errors} → 0" in audit.status.text()
    assert audit.report.path == str(toy_archive)  # the left side still shows the original
    # Its tab got its own gutter marks (warnings now: cuda literals matching the target).
    qtbot.waitUntil(lambda: bool(window.current_tab().listing.line_marks()), timeout=10000)
    assert ERROR not in window.current_tab().listing.line_marks().values()


def test_cancelled_retarget_writes_nothing(qtbot, audited, tmp_path):
    window, audit = audited
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "toy-meta.pt2"
    with qtbot.waitSignal(audit.failed, timeout=60000) as blocker:
        assert audit.retarget_to("meta", out)
        audit.cancel()
    assert "cancel" in blocker.args[0]
    audit.tasks.wait(5000)
    assert not out.exists() and list(folder.iterdir()) == []
    assert audit.retarget_button.isEnabled() and window.tabs.count() == 1


def test_bad_target_is_refused_before_running(qtbot, audited):
    _window, audit = audited
    audit.target.setEditText("gpu")
    audit.target.lineEdit().editingFinished.emit()
    assert "did you mean cuda" in audit.status.text()
    assert not audit.retarget_button.isEnabled()


def test_target_choice_is_remembered(qtbot, audited):
    from inspector.ui.panels.audit import AuditPanel
    from inspector.ui.workspace import Workspace

    _window, audit = audited
    audit.set_target("meta")
    again = AuditPanel(Workspace())
    qtbot.addWidget(again)
    assert again.target_device() == "meta"
    again.shutdown()


def test_the_explanation_follows_the_target(qtbot, no_leaks, window, toy_tab, toy_archive):
    """Issue 29: a finding's explanation under the trees is the current report's. With
    no target a cpu literal is a warning; switching the target to cuda makes it an
    error, and the explanation says so (it said "warning" until another click)."""
    window.job_panels.docks["audit"].raise_()
    audit = window.job_panels.audit
    audit.set_target(None)
    qtbot.waitUntil(lambda: audit.report is not None and audit.report.path == str(toy_archive)
                    and audit.report.target is None, timeout=60000)
    item = audit.before.leaf_for(lambda f: f.rule == DEVICE_LITERAL and f.node is not None)
    assert item is not None
    audit.before.setCurrentItem(item)
    assert audit.detail.toPlainText().startswith("warning")
    audit.set_target("cuda")
    qtbot.waitUntil(lambda: audit.report.target == "cuda", timeout=60000)
    assert not audit.detail.toPlainText().startswith("warning"), audit.detail.toPlainText()
    assert audit.detail.toPlainText().startswith("error"), audit.detail.toPlainText()
    current = audit.before.currentItem()  # the same finding, current still, now an error
    assert current is not None
    f = current.data(0, Qt.ItemDataRole.UserRole + 1)
    assert f.rule == DEVICE_LITERAL and f.severity == ERROR
    audit.shutdown()


def test_leaving_the_target_field_unchanged_audits_nothing(qtbot, audited):
    """Focus leaving the target field (editingFinished) with the same text keeps the
    report and the status line (a retarget's answer was wiped when the new tab took
    the focus); a changed text audits again."""
    window, audit = audited
    audit.status_area.set_status("Rewrote 19 device literals")
    edit = audit.target.lineEdit()
    edit.editingFinished.emit()
    assert audit.status.text() == "Rewrote 19 device literals"
    assert audit.counts_label.text() != "Auditing…" and audit.report.target == "cuda"
    edit.setText("cpu")
    edit.editingFinished.emit()
    qtbot.waitUntil(lambda: audit.report.target == "cpu", timeout=60000)
    assert audit.status.text() == ""
    audit.set_target("cuda")
    qtbot.waitUntil(lambda: audit.report.target == "cuda", timeout=60000)
