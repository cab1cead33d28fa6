"""The Profile panel: will the open archive run on a device (Check), and where does the
time go (Profile), for any archive.

Both run in a job child through the JobRunner (`check`: a fake-tensor dry run, so the
device need not exist here; `profile`: a real run timing every node), never in the
window. What they find goes back onto the graph as the document's annotation layers
(inspector/core/run_layers.py): "profile" heat fills the listing's heat column, the
module tree's time column and the details pane; "check" marks the failing nodes in
the gutter with torch's message. The tables here (nodes by time, the rollups by op
and by source line, failures) jump to a node on click (Workspace.select_node: the
listing line, the details pane and the source pane follow; a rollup row jumps to its
slowest node).

Results belong to the document they were made for: switching tabs shows that
document's own, closing it drops them (and cancels its running job).
"""

from __future__ import annotations

from typing import Any

import shiboken6
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from inspector.core.annotations import AnnotationLayer
from inspector.core.errors import InspectorError
from inspector.core.graph_run_results import GraphRunResults, results_summary
from inspector.core.inputs import InputPlan, parse_dims, parse_shapes, plan_archive_inputs
from inspector.core.run_layers import (
    CHECK_SOURCE,
    PROFILE_SOURCE,
    check_layers,
    failure_rows,
    node_rows,
    op_rows,
    profile_layers,
    source_rows,
)
from inspector.core.device_choices import DeviceInfo
from inspector.ui.device_list import DeviceSource
from inspector.ui.job_runner import GraphRunSpec, JobRunner
from inspector.ui.panels.saved_options import SavedOptions
from inspector.ui.plain import plain_tip
from inspector.ui.widgets.job_chrome import JobChrome, confirm_trust
from inspector.ui.widgets.profile_tables import failures_table, node_table, op_table, source_table
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.widgets.theme import current_theme
from inspector.ui.workspace import Document, Workspace

PROFILE_OPTIONS_KEY = "profile/last_options"  # QSettings: the last options, as JSON
CHECK, PROFILE = "check", "profile"
ALL_PROGRAMS = ""
# Offered for Check even when this machine lacks them: a dry run needs no device.
CHECK_ONLY_DEVICES = ("cuda", "mps", "xpu")
PLAN_DELAY_MS = 250  # inline validation waits for a pause in typing


class ProfilePanel(QWidget):
    checked = Signal(object)  # the check result (dict) once shown
    profiled = Signal(object)  # the profile result (dict) once shown

    def __init__(self, workspace: Workspace | None = None, devices: DeviceSource | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace if workspace is not None else Workspace(self)
        self.devices = devices
        self.runner = JobRunner(self)
        self.results: dict[Document, GraphRunResults] = {}
        self.doc: Document | None = None  # the document the panel shows
        self._job: tuple[str, Document, GraphRunSpec] | None = None  # the running one
        self._plan_problem: str | None = None
        self._real: set[str] = {"cpu"}  # ids of the devices torch sees here
        self._saved_program: str | None = None
        self._plan_timer = QTimer(self)
        self._plan_timer.setSingleShot(True)
        self._plan_timer.setInterval(PLAN_DELAY_MS)
        self._plan_timer.timeout.connect(self._plan)
        self._build()
        self._fill_devices(devices.devices if devices is not None else [])
        if devices is not None:
            devices.changed.connect(self._fill_devices)
        self.runner.result.connect(self._on_result)
        self.runner.error.connect(self._on_error)
        self.runner.finished.connect(self._on_finished)
        self.workspace.currentChanged.connect(self._show_doc)
        self.workspace.documentClosed.connect(self._doc_closed)
        self._restore()
        self._show_doc(self.workspace.current)

    def running_spec(self) -> GraphRunSpec | None:
        """The spec of the check or profile running now."""
        return self._job[2] if self._job is not None else None

    # -- layout --
    def _build(self) -> None:
        self.archive_label = QLabel("Open an archive to check or profile it.")
        self.archive_label.setTextFormat(Qt.TextFormat.PlainText)
        self.archive_label.setWordWrap(True)
        self.device = QComboBox()
        self.device.setObjectName("profileDevice")
        self.device.setToolTip("Check: any device (fake tensors, it need not exist here); "
                               "Profile: a device torch sees on this machine")
        self.refresh_devices = QToolButton()
        self.refresh_devices.setText("↻")
        self.refresh_devices.setToolTip("list the devices torch sees again")
        self.refresh_devices.clicked.connect(
            lambda: self.devices.refresh() if self.devices is not None else None)
        self.program = QComboBox()
        self.program.setToolTip("the program to run (default: every program)")
        for combo in (self.device, self.program):  # long labels must not widen the column
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)
        self.warmup = _spin(0, 1000, 2, "untimed runs first")
        self.repeats = _spin(1, 10000, 5, "timed runs: each node's median is reported")
        self.precision = QComboBox()
        for p in ("fp32", "bf16"):
            self.precision.addItem(p, p)
        self.precision.setToolTip("fp32, or bf16 autocast")
        self.dims = QLineEdit()
        self.dims.setPlaceholderText("s70=16 s72=2")
        self.dims.setToolTip("values of symbolic sizes (default: the size export traced with)")
        self.inputs = QLineEdit()
        self.inputs.setPlaceholderText("input_ids=2x16")
        self.inputs.setToolTip("whole shapes of tensor inputs")
        for line in (self.dims, self.inputs):
            line.setMinimumWidth(90)
        self.plan_label = QLabel("")
        self.plan_label.setObjectName("profilePlan")
        self.plan_label.setTextFormat(Qt.TextFormat.PlainText)
        self.plan_label.setWordWrap(True)
        self.device_note = QLabel("")
        self.device_note.setTextFormat(Qt.TextFormat.PlainText)
        self.device_note.setWordWrap(True)
        self.device_note.hide()
        self.check_button = QPushButton("Check")
        self.check_button.setToolTip("dry run on the device with fake tensors: which nodes "
                                     "would fail there")
        self.profile_button = QPushButton("Profile")
        self.profile_button.setToolTip("run on the device and time every node")
        self.cancel_button = QPushButton("Cancel")
        self.chrome = JobChrome(self.runner, self)  # progress bar, trusted rerun
        self.progress = self.chrome.progress
        self.status_area = StatusArea(details_height=120)

        # The dock shares the short bottom area with the source pane: options in two
        # columns, the buttons beside them, so nothing needs scrolling at 700 px high.
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(4)
        dev_row = QHBoxLayout()
        dev_row.setContentsMargins(0, 0, 0, 0)
        dev_row.addWidget(self.device, 1)
        dev_row.addWidget(self.refresh_devices)
        runs = QHBoxLayout()
        runs.setContentsMargins(0, 0, 0, 0)
        runs.addWidget(self.warmup)
        runs.addWidget(QLabel("repeats"))
        runs.addWidget(self.repeats)
        runs.addWidget(self.precision)
        runs.addStretch(1)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.profile_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress, 1)
        grid.addWidget(QLabel("Device"), 0, 0)
        grid.addLayout(dev_row, 0, 1)
        grid.addWidget(QLabel("Dims"), 0, 2)
        grid.addWidget(self.dims, 0, 3)
        grid.addWidget(QLabel("Program"), 1, 0)
        grid.addWidget(self.program, 1, 1)
        grid.addWidget(QLabel("Inputs"), 1, 2)
        grid.addWidget(self.inputs, 1, 3)
        grid.addWidget(QLabel("Warm-up"), 2, 0)
        grid.addLayout(runs, 2, 1, 1, 3)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        left = QWidget()
        left.setObjectName("profileOptions")
        left.setMaximumWidth(520)
        col = QVBoxLayout(left)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(4)
        col.addWidget(self.archive_label)
        col.addLayout(grid)
        col.addLayout(buttons)
        col.addWidget(self.plan_label)
        col.addWidget(self.device_note)
        col.addWidget(self.status_area)
        col.addStretch(1)

        self.summary = QLabel("")
        self.summary.setObjectName("profileSummary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        self.nodes = node_table(self)
        self.ops = op_table(self)
        self.sources = source_table(self)
        self.failures = failures_table(self)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.nodes, "Nodes by time")
        self.tabs.addTab(self.ops, "By op")
        self.tabs.addTab(self.sources, "By source line")
        self.tabs.addTab(self.failures, "Failures")
        self.clear_button = QToolButton()
        self.clear_button.setText("Clear")
        self.clear_button.setToolTip("remove this archive's check and profile results "
                                     "(and their marks and times in the listing)")
        self.clear_button.clicked.connect(self.clear_results)
        self.tabs.setCornerWidget(self.clear_button)
        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.setContentsMargins(0, 0, 0, 0)
        rcol.addWidget(self.summary)
        rcol.addWidget(self.tabs, 1)
        body = QHBoxLayout(self)
        body.setContentsMargins(6, 6, 6, 6)
        body.addWidget(left)
        body.addWidget(right, 1)

        self.check_button.clicked.connect(lambda: self.start(CHECK))
        self.profile_button.clicked.connect(lambda: self.start(PROFILE))
        self.cancel_button.clicked.connect(self.cancel)
        self.nodes.rowActivated.connect(lambda r: self._jump(r.program, r.name))
        # a rollup row stands for several nodes: the click shows its slowest one
        self.ops.rowActivated.connect(lambda r: self._jump(r.program, r.slowest))
        self.sources.rowActivated.connect(lambda r: self._jump(r.program, r.slowest))
        self.failures.rowActivated.connect(lambda r: self._jump(r.program, r.node))
        self.device.currentIndexChanged.connect(lambda _i: self._options_changed())
        self.program.currentIndexChanged.connect(lambda _i: self._options_changed())
        self.dims.textChanged.connect(lambda _t: self._options_changed())
        self.inputs.textChanged.connect(lambda _t: self._options_changed())

    # -- devices and documents --
    def _fill_devices(self, devices: list[DeviceInfo]) -> None:
        current = self.device.currentData()
        self.device.blockSignals(True)
        self.device.clear()
        self._real = {d.id for d in devices} | {"cpu"}
        if not any(d.id == "cpu" for d in devices):
            self.device.addItem("cpu", "cpu")
        for d in devices:
            self.device.addItem(d.label, d.id)
        here_types = {d.split(":")[0] for d in self._real}
        for name in CHECK_ONLY_DEVICES:
            if name not in here_types:
                self.device.addItem(f"{name} (not here: Check only)", name)
        index = self.device.findData(current)
        self.device.setCurrentIndex(max(index, 0))
        self.device.blockSignals(False)
        self._update_enabled()

    def device_id(self) -> str:
        return str(self.device.currentData() or "cpu")

    def device_present(self) -> bool:
        dev = self.device_id()
        return dev in self._real or (":" not in dev and any(r.startswith(dev + ":")
                                                            for r in self._real))

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self.devices is not None:
            self.devices.ensure()  # the devices job imports torch: only once someone looks
        self._options_changed()

    def _show_doc(self, doc: Document | None) -> None:
        self.doc = doc
        self.program.blockSignals(True)
        wanted = self.program.currentData() or self._saved_program
        self.program.clear()
        self.program.addItem("All programs", ALL_PROGRAMS)
        if doc is not None:
            for name in doc.program_names:
                self.program.addItem(name, name)
            self.archive_label.setText(f"Archive: {doc.path.name}")
            self.archive_label.setToolTip(plain_tip(str(doc.path)))
        else:
            self.archive_label.setText("Open an archive to check or profile it.")
            self.archive_label.setToolTip("")
        self.program.setCurrentIndex(max(self.program.findData(wanted), 0))
        self.program.blockSignals(False)
        self._show_results()
        self._options_changed()

    def _doc_closed(self, doc: Document) -> None:
        self.results.pop(doc, None)
        if self._job is not None and self._job[1] is doc:
            self.cancel()
        if self.doc is doc:
            self._show_doc(self.workspace.current)

    # -- options --
    def spec(self, trust: bool = False) -> GraphRunSpec:
        program = self.program.currentData() or ALL_PROGRAMS
        return GraphRunSpec(
            file=str(self.doc.path) if self.doc is not None else "",
            device=self.device_id(), programs=(program,) if program else (),
            dims=tuple(self.dims.text().replace(",", " ").split()),
            inputs=tuple(self.inputs.text().replace(",", " ").split()),
            warmup=self.warmup.value(), repeats=self.repeats.value(),
            precision=self.precision.currentData() or "fp32", trust=trust)

    def _options_changed(self) -> None:
        """Syntax now; the plan against the program's ranges after a pause in typing."""
        self._plan_problem = None
        try:
            parse_dims(list(self.spec().dims))
            parse_shapes(list(self.spec().inputs))
        except InspectorError as exc:
            self._set_plan(str(exc), error=True)
        else:
            self._set_plan("", error=False)
            # planning parses the program JSON (seconds for a 100k-node program): only
            # for someone looking at the panel, never on every archive opened
            if self.doc is not None and self.isVisible():
                self._plan_timer.start()
        self._update_enabled()

    def _plan(self) -> None:
        doc, spec = self.doc, self.spec()
        if doc is None or doc.closed:
            return
        names = list(spec.programs) or list(doc.program_names)
        doc.tasks.start(plan_archive_inputs, doc.archive, names, spec.dims, spec.inputs,
                        key="profile-plan", on_done=self._planned,
                        on_fail=lambda msg, _det: self._set_plan(msg, error=True))

    def _planned(self, plans: dict[str, InputPlan]) -> None:
        parts = []
        for name, plan in plans.items():
            shapes = ", ".join(_planned_text(i) for i in plan.inputs)
            parts.append(f"{name}: {shapes or 'no inputs'}")
        self._set_plan("Inputs  " + "\n".join(parts), error=False)

    def _set_plan(self, text: str, error: bool) -> None:
        if not shiboken6.isValid(self.plan_label):  # a late plan for a closed window
            return
        self._plan_problem = text if error else None
        color = current_theme().severity["error"].name() if error else ""
        self.plan_label.setStyleSheet(f"color: {color};" if color else "color: palette(mid);")
        self.plan_label.setText(text)
        for field_ in (self.dims, self.inputs):
            field_.setStyleSheet(f"QLineEdit {{ border: 1px solid {color}; }}" if error else "")
        self._update_enabled()

    def _update_enabled(self) -> None:
        running = self.runner.is_running()
        ok = self.doc is not None and self._plan_problem is None and not running
        self.check_button.setEnabled(ok)
        present = self.device_present()
        self.profile_button.setEnabled(ok and present)
        self.cancel_button.setEnabled(running)
        for w in (self.device, self.program, self.warmup, self.repeats, self.precision,
                  self.dims, self.inputs):
            w.setEnabled(not running)
        if not present:
            self.device_note.setText(f"{self.device_id()} is not on this machine: Check "
                                     "answers with fake tensors; Profile needs the device.")
            self.device_note.show()
        else:
            self.device_note.hide()

    def _restore(self) -> None:
        self.options = SavedOptions(PROFILE_OPTIONS_KEY)
        for name, widget in (("device", self.device), ("precision", self.precision),
                             ("warmup", self.warmup), ("repeats", self.repeats),
                             ("dims", self.dims), ("inputs", self.inputs)):
            self.options.bind(name, widget)
        self.options.restore()
        # the program is chosen once an archive that has it is shown (_show_doc)
        self._saved_program = self.options.stored("program", (str,))

    def _remember(self) -> None:
        self.options.save(program=self.program.currentData() or "")

    # -- running --
    def start(self, kind: str, trust: bool = False, doc: Document | None = None) -> bool:
        doc = doc or self.doc
        if doc is None or doc.closed or self.runner.is_running():
            return False
        if kind == PROFILE and not self.device_present():
            return False
        try:
            spec = self.spec(trust=trust).validate()
        except InspectorError as exc:
            self._set_plan(str(exc), error=True)
            return False
        spec = GraphRunSpec(**{**spec.__dict__, "file": str(doc.path)})
        self._remember()
        self.status_area.clear()
        self._job = (kind, doc, spec)
        self.runner.start(kind, spec.to_argv(profile=kind == PROFILE))
        self.chrome.starting(f"{kind}: ")
        self._update_enabled()
        return True

    def cancel(self) -> None:
        job = self._job
        self.chrome.forget_rerun()
        if self.runner.cancel() and job is not None:
            self.status_area.set_status(f"Cancelled {job[0]} of {job[1].path.name}.")
            self.progress.setFormat("cancelled")

    def shutdown(self) -> None:
        self._plan_timer.stop()
        # the plan task runs on the document's group, which outlives this panel:
        # drop its outcome rather than deliver it to deleted widgets
        if self.doc is not None:
            self.doc.tasks.cancel("profile-plan")
        self.runner.shutdown()

    def _on_result(self, event: dict[str, Any]) -> None:
        if self._job is None:
            return
        kind, doc, spec = self._job
        result = {k: v for k, v in event.items() if k != "event"}
        if doc.closed:
            return
        entry = self.results.setdefault(doc, GraphRunResults())
        entry.specs[kind] = spec
        if kind == CHECK:
            entry.check = result
            layers = check_layers(result)
            source = CHECK_SOURCE
        else:
            entry.profile = result
            layers = profile_layers(result)
            source = PROFILE_SOURCE
        for program, layer in layers.items():
            self.workspace.annotate(doc, program, layer)
        for program in doc.program_names:  # programs not run this time: no stale marks
            if program not in layers:
                self.workspace.annotate(doc, program, AnnotationLayer(source))
        self.chrome.done()
        if doc is self.doc:
            self._show_results(focus=kind)
        (self.checked if kind == CHECK else self.profiled).emit(result)

    def _on_error(self, message: str, details: str) -> None:
        job = self._job
        if job is not None and self.chrome.offer_trust(
                message, job[2].trust, self.confirm_trust,
                lambda kind=job[0], doc=job[1]: self.start(kind, True, doc)):  # refused if closed
            return
        self.progress.setFormat("failed")
        what = job[0].capitalize() if job else "Job"
        self.status_area.set_status(f"{what} failed: {message}", error=True,
                                    details=details or "")

    def confirm_trust(self, message: str) -> bool:
        return confirm_trust(self, message)

    def _on_finished(self) -> None:
        self._job = None
        if not self.progress.format().endswith(("done", "failed", "cancelled")):
            self.progress.setFormat("stopped")
        self._update_enabled()
        self.chrome.finished()

    # -- results --
    def clear_results(self) -> None:
        doc = self.doc
        if doc is None:
            return
        self.results.pop(doc, None)
        for source in (CHECK_SOURCE, PROFILE_SOURCE):
            self.workspace.clear_annotations(doc, source)
        self._show_results()

    def _show_results(self, focus: str | None = None) -> None:
        entry = self.results.get(self.doc) if self.doc is not None else None
        check = entry.check if entry else None
        profile = entry.profile if entry else None
        self.nodes.set_rows(node_rows(profile) if profile else [])
        self.ops.set_rows(op_rows(profile) if profile else [])
        self.sources.set_rows(source_rows(profile) if profile else [])
        rows = (failure_rows(check) if check else []) + (failure_rows(profile) if profile else [])
        self.failures.set_rows(rows)
        n_fail = sum(1 for r in rows if r.severity == "error")
        self.tabs.setTabText(self.tabs.indexOf(self.failures),
                             f"Failures ({n_fail})" if (check or n_fail) else "Failures")
        self.summary.setText(results_summary(check, profile))
        self.clear_button.setEnabled(entry is not None)
        if focus == CHECK or (focus == PROFILE and n_fail and not self.nodes.shown_rows()):
            self.tabs.setCurrentWidget(self.failures)
        elif focus == PROFILE:
            self.tabs.setCurrentWidget(self.nodes)

    def _jump(self, program: str, node: str) -> None:
        if self.doc is not None and node:
            self.workspace.select_node(program, node, self.doc)


def _planned_text(i) -> str:
    if i.shape is None:
        return f"{i.name}={i.value!r}"
    return f"{i.name} {i.dtype_name}[{', '.join(map(str, i.shape))}]"


def _spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
    spin = QSpinBox()
    spin.setRange(lo, hi)
    spin.setValue(value)
    spin.setToolTip(tip)
    return spin


