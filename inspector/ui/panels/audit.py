"""The Audit panel: what export baked into the archive, and the fix one click away.

The audit (inspector/core/audit.py) and retarget (inspector/core/retarget.py) are pure
Python without torch, so they run in a worker thread of this process: no child needed,
and retargeting to `cuda` works on a machine without a GPU. Findings are grouped by rule
(with counts) and by group (the device, the package); clicking one selects its node in
the listing. Findings are marked in the listing's gutter through the window.
"Retarget to ..." writes a new archive (progress, Cancel), opens it in a new tab and
shows the audit before and after side by side.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.audit import ERROR, INFO, WARNING, Finding
from inspector.core.errors import InspectorError
from inspector.ui.device_list import DeviceSource
from inspector.ui.widgets.findings_tree import FINDING_ROLE, SEVERITY_COLORS, FindingsTree, plural
from inspector.ui.workers import Work, WorkQueue

NO_TARGET = "(any device)"
AUDIT_TARGET_KEY = "audit/target"  # QSettings: the last target device chosen
TARGET_CHOICES = ("cuda", "cuda:0", "cpu", "mps", "meta", "xpu")


# --- work done off the GUI thread (pure Python, no Qt) ---------------------------

@dataclass
class AuditReport:
    path: str
    target: str | None
    findings: list[Finding]

    def counts(self) -> Counter[str]:
        return Counter(f.severity for f in self.findings)

    def marks(self) -> dict[str, dict[int, str]]:
        """program -> {listing line: worst severity}, for the window's gutter."""
        rank = {ERROR: 0, WARNING: 1, INFO: 2}
        out: dict[str, dict[int, str]] = defaultdict(dict)
        for f in self.findings:
            if f.program is None or f.line is None:
                continue
            old = out[f.program].get(f.line)
            if old is None or rank[f.severity] < rank[old]:
                out[f.program][f.line] = f.severity
        return dict(out)


def audit_file(path: str, target: str | None) -> AuditReport:
    from inspector.core.archive import open_archive

    with open_archive(path) as archive:
        return audit_opened(path, archive, {}, target)


def audit_opened(path: str, archive: Any, listings: dict[str, Any],
                 target: str | None) -> AuditReport:
    """Audit an archive the window already opened, reusing the listings it built (a
    big program is parsed and rendered once, not once per panel)."""
    from inspector.core.audit import audit_archive
    from inspector.core.device_names import parse_device
    from inspector.core.listing import render_listing
    from inspector.ui.document import gc_paused

    device = parse_device(target) if target else None
    with gc_paused():  # parsing builds millions of small objects: see document.py
        # Listings give each finding its line: the same lines the window shows.
        listings = {n: listings.get(n) or render_listing(archive.program(n))
                    for n in archive.program_names}
    findings = audit_archive(archive, target=device, listings=listings)
    return AuditReport(str(path), target, findings)


def retarget_file(source: str, output: str, device: str,
                  progress: Callable[[float], None], cancelled: Callable[[], bool]
                  ) -> tuple[Any, AuditReport]:
    from inspector.core.retarget import retarget

    result = retarget(source, output, device, on_progress=lambda f: progress(0.9 * f),
                      should_cancel=cancelled)
    progress(0.95)
    return result, audit_file(str(result.output), device)


# --- the panel ----------------------------------------------------------------------

class AuditPanel(QWidget):
    audited = Signal(object)  # AuditReport of the archive shown on the left
    retargeted = Signal(object, object)  # RetargetResult, AuditReport of the new archive
    failed = Signal(str, str)

    def __init__(self, window: Any = None, devices: DeviceSource | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.queue = WorkQueue(self)  # our own pool: closing waits for exactly our work
        self.path: str | None = None
        self.report: AuditReport | None = None
        self.after: AuditReport | None = None
        self.retarget_result: Any = None
        self._cache: dict[tuple[str, str | None, int], AuditReport] = {}
        self._generation = 0  # one task per panel: stale results are dropped
        self._cancel = threading.Event()
        self._retargeting = False
        self._build()
        if devices is not None:
            devices.changed.connect(self._add_devices)
        if window is not None:
            if hasattr(window, "archive_opened"):
                window.archive_opened.connect(self._on_archive_opened)
            tabs = getattr(window, "tabs", None)
            if tabs is not None:
                tabs.currentChanged.connect(lambda _i: self._follow_window())

    # -- layout --
    def _build(self) -> None:
        self.archive_label = QLabel("Open an archive to audit it.")
        self.archive_label.setWordWrap(True)
        self.target = QComboBox()
        self.target.setEditable(True)
        self.target.setInsertPolicy(QComboBox.NoInsert)
        self.target.addItem(NO_TARGET, None)
        for name in TARGET_CHOICES:
            self.target.addItem(name, name)
        self.target.setToolTip("the device you will run on: device literals that differ from "
                               "it are errors; retarget rewrites them")
        from inspector.ui import settings as keys

        saved = keys.settings().value(AUDIT_TARGET_KEY, "cuda")
        saved = saved if isinstance(saved, str) and saved else "cuda"
        index = self.target.findData(saved) if saved != NO_TARGET else 0
        if index < 0:
            self.target.addItem(saved, saved)
            index = self.target.count() - 1
        self.target.setCurrentIndex(index)
        self.counts_label = QLabel()
        self.retarget_button = QPushButton()
        self.retarget_button.setToolTip("write a copy of the archive with every recorded "
                                        "device set to the target (no torch needed)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(180)
        self.progress.hide()
        top = QHBoxLayout()
        top.addWidget(QLabel("Target"))
        top.addWidget(self.target)
        top.addWidget(self.retarget_button)
        top.addWidget(self.cancel_button)
        top.addWidget(self.progress)
        top.addStretch(1)

        self.before_title = QLabel()
        self.before = FindingsTree()
        self.after_title = QLabel()
        self.after_tree = FindingsTree()
        left = self._titled(self.before_title, self.before)
        self.after_box = self._titled(self.after_title, self.after_tree)
        self.after_box.hide()
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.addWidget(left)
        self.split.addWidget(self.after_box)
        # A small browser, not a QLabel: messages run to several lines in a narrow dock.
        self.detail = QTextBrowser()
        self.detail.setMaximumHeight(96)
        self.detail.setPlaceholderText("Select a finding to read what it means and how to fix it.")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)

        layout = QVBoxLayout(self)
        layout.addWidget(self.archive_label)
        layout.addLayout(top)
        layout.addWidget(self.counts_label)
        layout.addWidget(self.split, 1)
        layout.addWidget(self.detail)
        layout.addWidget(self.status)

        self.target.currentIndexChanged.connect(self._target_changed)
        self.target.lineEdit().editingFinished.connect(self._target_changed)
        self.retarget_button.clicked.connect(self._retarget_dialog)
        self.cancel_button.clicked.connect(self.cancel)
        for tree in (self.before, self.after_tree):
            tree.itemClicked.connect(self._clicked)
            tree.currentItemChanged.connect(lambda cur, _prev: self._show_detail(cur))
        self._update_buttons()

    @staticmethod
    def _titled(title: QLabel, tree: QTreeWidget) -> QWidget:
        box = QWidget()
        v = QVBoxLayout(box)
        v.setContentsMargins(0, 0, 0, 0)
        v.addWidget(title)
        v.addWidget(tree, 1)
        return box

    # -- choosing what to audit --
    def target_device(self) -> str | None:
        text = self.target.currentText().strip()
        if not text or text == NO_TARGET:
            return None
        return text

    def set_target(self, device: str | None) -> None:
        index = self.target.findData(device) if device else 0
        if index < 0:
            self.target.addItem(device, device)
            index = self.target.count() - 1
        self.target.setCurrentIndex(index)

    def _target_problem(self) -> str | None:
        from inspector.core.device_names import parse_device

        device = self.target_device()
        if device is None:
            return None
        try:
            parse_device(device)
        except InspectorError as exc:
            return str(exc)
        return None

    def _target_changed(self, *_: object) -> None:
        problem = self._target_problem()
        self.target.setStyleSheet("" if not problem else "QComboBox { border: 1px solid #d32f2f; }")
        self._update_buttons()
        if problem:
            self._set_status(problem, error=True)
            return
        self._set_status("")
        from inspector.ui import settings as keys

        keys.set_value(AUDIT_TARGET_KEY, self.target_device() or NO_TARGET)
        if self.path and not self._retargeting:
            self.audit(self.path)

    def _add_devices(self, devices: list) -> None:
        for dev in devices:
            if self.target.findData(dev.id) < 0:
                self.target.addItem(dev.id, dev.id)

    def _on_archive_opened(self, path: str) -> None:
        if self.after is not None and Path(path) == Path(self.after.path):
            self._push_marks(self.after)  # the retarget result's own tab
            return
        self.audit(path)

    def _follow_window(self) -> None:
        getter = getattr(self.window, "current_archive_path", None)
        path = getter() if callable(getter) else None
        if path and path != self.path and not (self.after and Path(path) == Path(self.after.path)):
            self.audit(path)

    # -- auditing --
    def audit(self, path: str | Path) -> None:
        """Audit `path` (off the GUI thread); the result replaces the left tree."""
        path = str(path)
        if path != self.path:
            self.after = None
            self.after_box.hide()
        self.path = path
        self.archive_label.setText(f"Archive: <b>{_html(Path(path).name)}</b>")
        target = None if self._target_problem() else self.target_device()
        cached = self._cache.get(_cache_key(path, target))
        if cached is not None:
            self._show_report(cached)
            return
        self._generation += 1
        gen = self._generation
        self.counts_label.setText("Auditing…")
        doc = self._window_doc(path)
        work = (Work(audit_opened, path, doc.archive, {n: v.listing for n, v in doc.views.items()},
                     target) if doc is not None else Work(audit_file, path, target))
        self._start(work,
                    lambda rep: gen == self._generation and self._audited(rep),
                    lambda msg, det: gen == self._generation and self._failed(msg, det))

    def _window_doc(self, path: str) -> Any:
        """The window's own opened archive for `path`, when it is the current tab."""
        tab = getattr(self.window, "current_tab", lambda: None)()
        doc = getattr(tab, "doc", None)
        if doc is None or getattr(doc, "archive", None) is None:
            return None
        try:
            return doc if Path(doc.path).resolve() == Path(path).resolve() else None
        except OSError:
            return None

    def _audited(self, report: AuditReport) -> None:
        self._cache[_cache_key(report.path, report.target)] = report
        self._show_report(report)

    def _show_report(self, report: AuditReport) -> None:
        self.report = report
        self.before.show_findings(report.findings)
        self.before_title.setText(f"<b>{_html(Path(report.path).name)}</b>")
        self.counts_label.setText(_counts_text(report, "Findings"))
        self._push_marks(report)
        self._update_buttons()
        self.audited.emit(report)

    def _push_marks(self, report: AuditReport) -> None:
        setter = getattr(self.window, "set_line_marks", None)
        current = getattr(self.window, "current_archive_path", lambda: None)()
        if not callable(setter) or not current or Path(current) != Path(report.path):
            return
        marks = report.marks()
        for program in _program_names(report):
            setter(marks.get(program, {}), program)

    def _failed(self, message: str, details: str) -> None:
        self.counts_label.setText("")
        self._set_status(message, error=True)
        self.failed.emit(message, details)

    # -- clicking --
    def _clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        f: Finding | None = item.data(0, FINDING_ROLE)
        if f is None or f.program is None or f.node is None:
            return
        tree = item.treeWidget()
        select = getattr(self.window, "select_node", None)
        if callable(select) and self._tree_is_current_tab(tree):
            select(f.program, f.node)

    def _tree_is_current_tab(self, tree: QTreeWidget) -> bool:
        """A finding selects its node only in the tab of the archive it came from."""
        report = self.report if tree is self.before else self.after
        current = getattr(self.window, "current_archive_path", lambda: None)()
        if report is None or not current:
            return False
        if Path(current) != Path(report.path):
            self.window.open_archive(report.path)  # shows its tab (opens it if needed)
        return True

    def _show_detail(self, item: QTreeWidgetItem | None) -> None:
        f = item.data(0, FINDING_ROLE) if item is not None else None
        if f is None:
            self.detail.clear()
            return
        color = SEVERITY_COLORS.get(f.severity, "gray")
        text = f"<b style='color:{color}'>{f.severity}</b> {_html(f.message)}"
        if f.fix:
            text += f"<br><b>Fix:</b> <code>{_html(f.fix)}</code>"
        if f.source:
            text += f"<br><b>Source:</b> {_html(f.source)}"
        self.detail.setHtml(text)

    # -- retarget --
    def _update_buttons(self) -> None:
        device = self.target_device()
        ok = bool(self.path) and device is not None and not self._target_problem()
        self.retarget_button.setText(f"Retarget to {device}…" if device else "Retarget…")
        self.retarget_button.setEnabled(ok and not self._retargeting)
        self.cancel_button.setEnabled(self._retargeting)
        self.target.setEnabled(not self._retargeting)

    def default_output(self, device: str) -> Path:
        src = Path(self.path or "archive.pt2")
        return src.with_name(f"{src.stem}-{device.replace(':', '')}.pt2")

    def _retarget_dialog(self) -> None:
        device = self.target_device()
        if not device or not self.path:
            return
        out, _ = QFileDialog.getSaveFileName(self, f"Retarget to {device}",
                                             str(self.default_output(device)),
                                             "PyTorch export archives (*.pt2)")
        if out:
            self.retarget_to(device, out if out.endswith(".pt2") else out + ".pt2")

    def retarget_to(self, device: str, output: str | Path) -> bool:
        if self._retargeting or not self.path:
            return False
        self.set_target(device)
        self._retargeting = True
        self._cancel.clear()
        self._generation += 1
        gen = self._generation
        self.progress.setValue(0)
        self.progress.setFormat("retarget %p%")
        self.progress.show()
        self._set_status(f"Writing {Path(output).name}…")
        self._update_buttons()
        work = Work(retarget_file)
        # Progress crosses threads through the signal (queued to the GUI thread).
        work.args = (self.path, str(output), device, work.signals.progress.emit,
                     self._cancel.is_set)
        work.signals.progress.connect(lambda f: self.progress.setValue(int(f * 1000)))
        self._start(work, lambda value: self._retargeted(gen, value),
                    lambda msg, det: self._retarget_failed(gen, msg, det))
        return True

    def cancel(self) -> None:
        if self._retargeting:
            self._cancel.set()
            self._set_status("Cancelling…")

    def _retargeted(self, gen: int, value: tuple[Any, AuditReport]) -> None:
        self._retargeting = False
        self.progress.hide()
        self._update_buttons()
        if gen != self._generation:
            return
        result, report = value
        self.retarget_result = result
        self.after = report
        self._cache[_cache_key(report.path, report.target)] = report
        self.after_tree.show_findings(report.findings)
        self.after_title.setText(f"<b>{_html(Path(report.path).name)}</b> (after)")
        self.after_box.show()
        half = max(self.split.width() // 2, 100)
        self.split.setSizes([half, half])
        before = self.report
        changes = ", ".join(f"{p.program} {p.literals}" for p in result.programs if p.literals)
        literals = sum(p.literals for p in result.programs)
        text = (f"Rewrote {literals} device literal{'s' if literals != 1 else ''}"
                f"{f' ({changes})' if changes else ''} to {result.device} in "
                f"{result.seconds:.2f} s. ")
        if before is not None:
            text += (f"Errors {before.counts()[ERROR]} → {report.counts()[ERROR]}, "
                     f"warnings {before.counts()[WARNING]} → {report.counts()[WARNING]}.")
        self._set_status(text)
        if self.window is not None and hasattr(self.window, "open_archive"):
            self.window.open_archive(str(result.output))
        self.retargeted.emit(result, report)

    def _retarget_failed(self, gen: int, message: str, details: str) -> None:
        self._retargeting = False
        self.progress.hide()
        self._update_buttons()
        if gen == self._generation:
            self._set_status(message, error=True)
            self.failed.emit(message, details)

    # -- plumbing --
    def _start(self, work: Work, on_done: Callable[[Any], Any],
               on_fail: Callable[[str, str], Any]) -> None:
        self.queue.submit(work, on_done, on_fail)

    def is_busy(self) -> bool:
        return self.queue.busy()

    def shutdown(self) -> None:
        self._cancel.set()
        self._generation += 1
        self.queue.wait(5000)

    def _set_status(self, text: str, error: bool = False) -> None:
        self.status.setStyleSheet("color: #c62828;" if error else "")
        self.status.setText(text)


def _counts_text(report: AuditReport, what: str) -> str:
    c = report.counts()
    if not report.findings:
        return f"{what}: none. Nothing baked in that the rules know of."
    parts = [f"<span style='color:{SEVERITY_COLORS[s]}'>●</span> {plural(c[s], s)}"
             for s in (ERROR, WARNING, INFO) if c[s]]
    target = f" for <b>{_html(report.target)}</b>" if report.target else ""
    return f"{what}{target}: " + " &nbsp; ".join(parts)


def _program_names(report: AuditReport) -> list[str]:
    from inspector.core.archive import open_archive

    try:
        with open_archive(report.path) as archive:
            return list(archive.program_names)
    except InspectorError:
        return sorted({f.program for f in report.findings if f.program})




def _cache_key(path: str, target: str | None) -> tuple[str, str | None, int]:
    # The file's mtime: a re-export to the same path is a new archive.
    try:
        stamp = Path(path).stat().st_mtime_ns
    except OSError:
        stamp = 0
    return str(path), target, stamp






def _html(text: str | None) -> str:
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
