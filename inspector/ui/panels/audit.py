"""The Audit panel: what export baked into the archive, and the fix one click away.

The audit (inspector/core/audit.py) and retarget (inspector/core/retarget.py) are pure
Python without torch, so they run in a worker thread of this process: no child needed,
and retargeting to `cuda` works on a machine without a GPU. Findings are grouped by rule
(with counts) and by group (the device, the package); clicking one selects its node in
the listing. Findings are marked in the listing's gutter as the "audit" annotation
layer of the document (Workspace.annotate), with each finding's message as tooltip.
"Retarget to ..." writes a new archive (progress, Cancel), opens it in a new tab and
shows the audit before and after side by side; "Compare listings" opens the window's
compare view of the two archives (Workspace.compare).
"""

from __future__ import annotations

import os

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

from inspector.core.annotations import AnnotationLayer
from inspector.core.audit import ERROR, INFO, WARNING, Finding
from inspector.core.audit_report import (
    AUDIT_SOURCE,
    DEFAULT_TARGET,
    AuditReport,
    audit_file,
    audit_opened,
    retarget_file,
)
from inspector.core.errors import InspectorError
from inspector.ui.device_list import DeviceSource
from inspector.ui.panels.saved_options import SavedOptions
from inspector.ui.tasks import Task, TaskGroup
from inspector.ui.widgets.findings_tree import FINDING_ROLE, SEVERITY_COLORS, FindingsTree, plural
from inspector.ui.plain import ElidedLabel
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.widgets.theme import current_theme
from inspector.ui.workspace import Document, Workspace

NO_TARGET = "(any device)"
AUDIT_OPTIONS_KEY = "audit/options"  # QSettings: {"target": the last target chosen}
TARGET_CHOICES = ("cuda", "cuda:0", "cpu", "mps", "meta", "xpu")
SIDE_BY_SIDE_WIDTH = 560  # narrower: the after tree goes under the before tree


# --- the panel ----------------------------------------------------------------------

class AuditPanel(QWidget):
    audited = Signal(object)  # AuditReport of the archive shown on the left
    retargeted = Signal(object, object)  # RetargetResult, AuditReport of the new archive
    failed = Signal(str, str)

    def __init__(self, workspace: Workspace | None = None, devices: DeviceSource | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace if workspace is not None else Workspace(self)
        # Work on a file no document holds (retarget, audit of a closed archive);
        # an open document's audit runs on its own tasks (cancelled when it closes).
        self.tasks = TaskGroup(self.workspace.pool, self)
        self.path: str | None = None
        self.report: AuditReport | None = None
        self.after: AuditReport | None = None
        self.retarget_result: Any = None
        self._cache: dict[tuple[str, str | None, int], AuditReport] = {}
        self._audit_task: Task | None = None  # the one audit shown next (older: dropped)
        self._retarget_task: Task | None = None
        self._build()
        if devices is not None:
            devices.changed.connect(self._add_devices)
        self.workspace.documentOpened.connect(self._on_document_opened)
        self.workspace.currentChanged.connect(lambda _doc: self._follow_current())
        self.workspace.programIndexed.connect(self._listing_whole)
        self._waiting: str | None = None  # path audited once its listing is whole
        self._follow_current()  # built after an archive opened: audit it now

    # -- layout --
    def _build(self) -> None:
        # File names are plain text, elided in a narrow dock (whole in the tooltip).
        self.archive_label = ElidedLabel("Open an archive to audit it.")
        self.target = QComboBox()
        self.target.setEditable(True)
        self.target.setInsertPolicy(QComboBox.NoInsert)
        self.target.addItem(NO_TARGET, None)
        for name in TARGET_CHOICES:
            self.target.addItem(name, name)
        self.target.setToolTip("the device you will run on: device literals that differ from "
                               "it are errors; retarget rewrites them")
        # The CLI's default (DEFAULT_TARGET) until the user picks one, then theirs.
        self.set_target(DEFAULT_TARGET)
        self.options = SavedOptions(AUDIT_OPTIONS_KEY)
        self.options.bind("target", self.target)  # editable: a typed device is kept
        self.options.restore()
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
        # Two rows, so the panel reflows down to a 300 px dock.
        target_row = QHBoxLayout()
        target_row.addWidget(QLabel("Target"))
        target_row.addWidget(self.target, 1)
        actions = QHBoxLayout()
        actions.addWidget(self.retarget_button)
        actions.addWidget(self.cancel_button)
        actions.addWidget(self.progress, 1)
        actions.addStretch(0)
        self.target.setMinimumContentsLength(8)
        self.target.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.counts_label.setWordWrap(True)

        self.before_title = _bold(ElidedLabel())
        self.before = FindingsTree()
        self.after_title = _bold(ElidedLabel())
        self.after_tree = FindingsTree()
        self.compare_button = QPushButton("Compare listings")
        self.compare_button.setToolTip("show the archive before and after the retarget side "
                                       "by side, changed lines marked (F7: next change)")
        self.compare_button.clicked.connect(self.compare_before_after)
        left = self._titled(self.before_title, self.before)
        after_head = QHBoxLayout()
        after_head.setContentsMargins(0, 0, 0, 0)
        after_head.addWidget(self.after_title, 1)
        after_head.addWidget(self.compare_button)
        after_title_row = QWidget()
        after_title_row.setLayout(after_head)
        self.after_box = self._titled(after_title_row, self.after_tree)
        self.after_box.hide()
        # Before | after side by side when there is room, one over the other in a
        # narrow dock (resizeEvent), so neither tree's columns are squeezed.
        self.split = QSplitter(Qt.Orientation.Horizontal)
        self.split.setChildrenCollapsible(False)
        self.split.addWidget(left)
        self.split.addWidget(self.after_box)
        # A small browser, not a QLabel: messages run to several lines in a narrow dock.
        self.detail = QTextBrowser()
        self.detail.setMaximumHeight(96)
        self.detail.setPlaceholderText("Select a finding to read what it means and how to fix it.")
        self.status_area = StatusArea()
        self.status = self.status_area.label  # the status line (plain text)

        layout = QVBoxLayout(self)
        layout.addWidget(self.archive_label)
        layout.addLayout(target_row)
        layout.addLayout(actions)
        # the retarget's answer right under its button: at the bottom, a short dock
        # (1024x700) scrolled it out of view
        layout.addWidget(self.status_area)
        layout.addWidget(self.counts_label)
        layout.addWidget(self.split, 1)
        layout.addWidget(self.detail)

        # the target as last acted on: leaving the field (editingFinished) with the
        # text unchanged must not audit again (nor clear the retarget's status line)
        self._target_text = self.target.currentText()
        self.target.currentIndexChanged.connect(self._target_changed)
        self.target.lineEdit().editingFinished.connect(self._target_changed)
        self.retarget_button.clicked.connect(self._retarget_dialog)
        self.cancel_button.clicked.connect(self.cancel)
        for tree in (self.before, self.after_tree):
            tree.itemClicked.connect(self._clicked)
            tree.currentItemChanged.connect(lambda cur, _prev: self._show_detail(cur))
        self._update_buttons()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        wide = self.width() >= SIDE_BY_SIDE_WIDTH
        orientation = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self.split.orientation() != orientation:
            self.split.setOrientation(orientation)

    @staticmethod
    def _titled(title: QWidget, tree: QTreeWidget) -> QWidget:
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
        if self.target.currentText() == self._target_text:
            return
        self._target_text = self.target.currentText()
        problem = self._target_problem()
        self.target.setStyleSheet("" if not problem else "QComboBox { border: 1px solid %s; }"
                                  % current_theme().severity["error"].name())
        self._update_buttons()
        if problem:
            self._set_status(problem, error=True)
            return
        self._set_status("")
        self.options.save()
        if self.path and not self._retargeting:
            self.audit(self.path)

    def _add_devices(self, devices: list) -> None:
        for dev in devices:
            if self.target.findData(dev.id) < 0:
                self.target.addItem(dev.id, dev.id)

    @property
    def _retargeting(self) -> bool:
        return self._retarget_task is not None

    def _on_document_opened(self, doc: Document) -> None:
        path = str(doc.path)
        if self.after is not None and Path(path) == Path(self.after.path):
            self._push_marks(self.after)  # the retarget result's own tab
            return
        self.audit(path)

    def _follow_current(self) -> None:
        path = self.workspace.current_path()
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
        self.archive_label.set_full_text(f"Archive: {Path(path).name}")
        target = None if self._target_problem() else self.target_device()
        cached = self._cache.get(_cache_key(path, target))
        if cached is not None:
            self._show_report(cached)
            return
        self.counts_label.setText("Auditing…")
        if self._audit_task is not None:
            self._audit_task.cancel()  # its result would be stale
        doc = self.workspace.find(path)
        self._waiting = None
        if doc is not None and any(v.streaming for v in doc.views.values()):
            # a listing still streamed in: audit once it is whole (_listing_whole)
            # rather than list the big program a second time, beside the stream
            self._waiting = path
            return
        if doc is not None:  # reuse the opened archive and the listings already built
            listings = {n: v.listing for n, v in doc.views.items()}
            self._audit_task = doc.tasks.start(
                audit_opened, path, doc.archive, listings, target,
                on_done=self._audited, on_fail=self._failed, key=AUDIT_SOURCE, gated=True)
        else:
            self._audit_task = self.tasks.start(
                audit_file, path, target, on_done=self._audited, on_fail=self._failed,
                key=AUDIT_SOURCE)

    def _listing_whole(self, doc: Document, _view: object) -> None:
        if self._waiting is not None and self._waiting == str(doc.path) and not doc.closed:
            self.audit(self._waiting)

    def _audited(self, report: AuditReport) -> None:
        self._cache[_cache_key(report.path, report.target)] = report
        self._show_report(report)

    def _show_report(self, report: AuditReport) -> None:
        self.report = report
        self._show_detail(_refill(self.before, report.findings))
        self.before_title.set_full_text(Path(report.path).name)
        self.counts_label.setText(_counts_text(report, "Findings"))
        self._push_marks(report)
        self._update_buttons()
        self.audited.emit(report)

    def _push_marks(self, report: AuditReport) -> None:
        """Publish the findings as the document's "audit" annotation layer."""
        doc = self.workspace.find(report.path)
        if doc is None:
            return
        layers = report.layers()
        for program in doc.program_names:
            self.workspace.annotate(doc, program, layers.get(program, AnnotationLayer(AUDIT_SOURCE)))

    def _failed(self, message: str, details: str) -> None:
        self.counts_label.setText("")
        self._set_status(message, error=True)
        self.failed.emit(message, details)

    # -- clicking --
    def _clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        f: Finding | None = item.data(0, FINDING_ROLE)
        if f is None or f.program is None or f.node is None:
            return
        # A finding selects its node in the tab of the archive it came from.
        report = self.report if item.treeWidget() is self.before else self.after
        if report is None:
            return
        doc = self.workspace.open(report.path)  # shows its tab (opens it if needed)
        if doc is not None:
            self.workspace.select_node(f.program, f.node, doc)

    def _show_detail(self, item: QTreeWidgetItem | None) -> None:
        """The explanation under the trees: the current finding's, or none."""
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
        """Beside the archive, unless that is the project's own bundled demo folder
        (not the user's, and read-only once installed) or a folder we cannot write:
        then where exports go by default (the Documents folder)."""
        src = Path(self.path or "archive.pt2")
        name = f"{src.stem}-{device.replace(':', '')}.pt2"
        folder = src.parent
        if _bundled(src) or not os.access(folder, os.W_OK):
            from inspector.ui.panels.export import default_output_dir

            folder = default_output_dir()
        return folder / name

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
        # A new target audits the original again for it (the left side); that audit
        # is left to finish: cancelled, it would leave "Auditing…" behind.
        self.set_target(device)
        self.progress.setValue(0)
        self.progress.setFormat("retarget %p%")
        self.progress.show()
        self._set_status(f"Writing {Path(output).name}…")

        def run(ctx, source: str, out: str, dev: str):
            return retarget_file(source, out, dev, ctx.progress, ctx.cancelled)

        self._retarget_task = self.tasks.start(
            run, self.path, str(output), device, context=True, key="retarget",
            on_progress=lambda f: self.progress.setValue(int(f * 1000)),
            on_done=self._retargeted, on_fail=self._retarget_failed,
            on_end=self._retarget_ended)
        self._update_buttons()
        return True

    def cancel(self) -> None:
        if self._retarget_task is not None:
            self._retarget_task.stop()  # it stops at its next check; failed("cancelled")
            self._set_status("Cancelling…")

    def _retarget_ended(self) -> None:
        self._retarget_task = None
        self.progress.hide()
        self._update_buttons()

    def _retargeted(self, value: tuple[Any, AuditReport]) -> None:
        result, report = value
        self.retarget_result = result
        self.after = report
        self._cache[_cache_key(report.path, report.target)] = report
        self._show_detail(_refill(self.after_tree, report.findings))
        self.after_title.set_full_text(f"{Path(report.path).name} (after)")
        self.after_box.show()
        half = max((self.split.width() if self.split.orientation() == Qt.Orientation.Horizontal
                    else self.split.height()) // 2, 100)
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
        self.workspace.open(str(result.output))
        self.retargeted.emit(result, report)

    def compare_before_after(self) -> bool:
        """Open the compare view of the archive before and after the retarget."""
        if self.report is None or self.after is None:
            return False
        self.workspace.compare(self.report.path, self.after.path)
        return True

    def _retarget_failed(self, message: str, details: str) -> None:
        self._set_status(message, error=True)
        self.failed.emit(message, details)

    # -- plumbing --
    def shutdown(self) -> None:
        """Drop every pending outcome and wait for the running work (closing)."""
        for task in (self._audit_task, self._retarget_task):
            if task is not None:
                task.cancel()
        self.tasks.cancel()
        self.tasks.wait(5000)
        if self._audit_task is not None:
            self._audit_task.finished.wait(5.0)

    def _set_status(self, text: str, error: bool = False) -> None:
        self.status_area.set_status(text, error)


def _counts_text(report: AuditReport, what: str) -> str:
    c = report.counts()
    if not report.findings:
        return f"{what}: none. Nothing baked in that the rules know of."
    parts = [f"<span style='color:{SEVERITY_COLORS[s]}'>●</span> {plural(c[s], s)}"
             for s in (ERROR, WARNING, INFO) if c[s]]
    target = f" for <b>{_html(report.target)}</b>" if report.target else ""
    return f"{what}{target}: " + " &nbsp; ".join(parts)


def _bold(label: QLabel) -> QLabel:
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    return label


def _cache_key(path: str, target: str | None) -> tuple[str, str | None, int]:
    # The file's mtime: a re-export to the same path is a new archive.
    try:
        stamp = Path(path).stat().st_mtime_ns
    except OSError:
        stamp = 0
    return str(path), target, stamp



def _html(text: str | None) -> str:
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _bundled(path: Path) -> bool:
    """Whether `path` lies in the folder of the demo archive pt2-inspector ships."""
    from inspector.resources import demo_archive

    try:
        return path.resolve().parent == demo_archive().resolve().parent
    except (OSError, FileNotFoundError):
        return False


def _refill(tree: FindingsTree, findings: list[Finding]) -> QTreeWidgetItem | None:
    """Show a new report's `findings` in `tree`, the finding that was current kept
    current where the new report has it (same rule, program, node and group: its
    severity and message are the new report's, e.g. an error once the target is
    cuda). Returns that item (None: the explanation under the trees is cleared,
    never left in the old report's words)."""
    item = tree.currentItem()
    was: Finding | None = item.data(0, FINDING_ROLE) if item is not None else None
    tree.show_findings(findings)
    again = None
    if was is not None:
        key = (was.rule, was.program, was.node, was.group)
        again = tree.leaf_for(lambda f: (f.rule, f.program, f.node, f.group) == key)
    if again is not None:
        tree.setCurrentItem(again)
    return again
