"""The Numerics panel: what each node of the open archive computes against a candidate
run (bf16/fp16, another device or thread count, decomposed, another archive, eager).

The comparison runs in a `numerics` job child through the JobRunner (progress, cancel),
never in the window. What it finds goes back onto the listing as the document's
"numerics" annotation layer (core/numerics_layers.py): error heat in the gutter and
the module tree, marks on the failing nodes and on the first divergence and NaN. The
chart draws each node's error against its tolerance along program order (log scale,
the tolerance line at 1); a click on a point, an answer or a table row selects that
node (workspace.selection), and the panel follows the selection: the chart marks the
selected node and the panel shows its figures.

Results belong to the document they were made for (switching tabs shows that
document's own; closing it drops them and cancels its job).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTabWidget,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.annotations import AnnotationLayer
from inspector.core.errors import InspectorError
from inspector.core.numerics_layers import (
    NUMERICS_SOURCE,
    answers,
    figures,
    module_rows,
    numerics_layers,
    points,
)
from inspector.core.device_choices import DeviceInfo
from inspector.ui.device_list import DeviceSource
from inspector.ui.job_runner import GraphRunSpec, JobRunner, NumericsSpec
from inspector.ui.plain import plain_tip
from inspector.ui.widgets.error_chart import ErrorChart
from inspector.ui.widgets.job_chrome import JobChrome, confirm_trust
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.workspace import Document, Workspace

# (label, candidate kind, value): value "" or a placeholder the panel fills
CANDIDATES = (
    ("bf16 (weights, inputs cast)", "precision", "bf16"),
    ("fp16 (weights, inputs cast)", "precision", "fp16"),
    ("another device / thread count", "on", "device"),
    ("run_decompositions()", "decompose", ""),
    ("another archive…", "with", "file"),
    ("eager toy model", "eager", ""),
)


@dataclass
class DocResults:
    result: dict[str, Any] | None = None
    spec: NumericsSpec | None = None
    programs: dict[str, dict[str, Any]] = field(default_factory=dict)


class NumericsPanel(QWidget):
    compared = Signal(object)  # the result (dict) once shown

    def __init__(self, workspace: Workspace | None = None, devices: DeviceSource | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace if workspace is not None else Workspace(self)
        self.devices = devices
        self.runner = JobRunner(self)
        self.results: dict[Document, DocResults] = {}
        self.doc: Document | None = None
        self._job: tuple[Document, NumericsSpec] | None = None
        self._build()
        self._fill_devices(devices.devices if devices is not None else [])
        if devices is not None:
            devices.changed.connect(self._fill_devices)
        self.runner.result.connect(self._on_result)
        self.runner.error.connect(self._on_error)
        self.runner.finished.connect(self._on_finished)
        self.workspace.currentChanged.connect(self._show_doc)
        self.workspace.documentClosed.connect(self._doc_closed)
        selection = getattr(self.workspace, "selection", None)
        if selection is not None:
            selection.changed.connect(lambda _aspects: self._follow())
        self._show_doc(self.workspace.current)

    # -- layout --
    def _build(self) -> None:
        self.archive_label = QLabel("Open an archive to compare its numerics.")
        self.archive_label.setTextFormat(Qt.TextFormat.PlainText)
        self.archive_label.setWordWrap(True)
        self.device = QComboBox()
        self.device.setObjectName("numericsDevice")
        self.device.setToolTip("the reference run's device (a device torch sees here)")
        self.candidate = QComboBox()
        self.candidate.setObjectName("numericsCandidate")
        for label, kind, value in CANDIDATES:
            self.candidate.addItem(label, f"{kind}:{value}")
        self.candidate.setToolTip("what the reference is compared with")
        self.on_device = QComboBox()
        self.on_device.setToolTip("the candidate's device (the same CPU: another thread count)")
        self.other = QLineEdit()
        self.other.setPlaceholderText("OTHER.pt2")
        self.other.setToolTip("the archive to compare with (a re-export, a retarget)")
        self.browse = QToolButton()
        self.browse.setText("…")
        self.browse.clicked.connect(self._browse)
        self.program = QComboBox()
        self.program.setToolTip("the program to compare (default: every program)")
        for combo in (self.device, self.candidate, self.on_device, self.program):
            combo.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)
        self.run_button = QPushButton("Compare")
        self.run_button.setObjectName("numericsRun")
        self.run_button.setToolTip("run the program twice, in lockstep, and compare every node")
        self.cancel_button = QPushButton("Cancel")
        self.chrome = JobChrome(self.runner, self)
        self.progress = self.chrome.progress
        self.status_area = StatusArea(details_height=100)

        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(4)
        grid.addWidget(QLabel("Device"), 0, 0)
        grid.addWidget(self.device, 0, 1)
        grid.addWidget(QLabel("Program"), 0, 2)
        grid.addWidget(self.program, 0, 3)
        grid.addWidget(QLabel("Against"), 1, 0)
        grid.addWidget(self.candidate, 1, 1, 1, 3)
        other_row = QHBoxLayout()
        other_row.setContentsMargins(0, 0, 0, 0)
        other_row.addWidget(self.on_device, 1)
        other_row.addWidget(self.other, 2)
        other_row.addWidget(self.browse)
        grid.addLayout(other_row, 2, 1, 1, 3)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress, 1)
        left = QWidget()
        left.setObjectName("numericsOptions")
        left.setMaximumWidth(440)
        col = QVBoxLayout(left)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(4)
        col.addWidget(self.archive_label)
        col.addLayout(grid)
        col.addLayout(buttons)
        col.addWidget(self.status_area)
        self.answers_box = QWidget()
        self.answers_layout = QGridLayout(self.answers_box)
        self.answers_layout.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.answers_box)
        self.selected = QLabel("")
        self.selected.setObjectName("numericsSelected")
        self.selected.setTextFormat(Qt.TextFormat.PlainText)
        self.selected.setWordWrap(True)
        col.addWidget(self.selected)
        col.addStretch(1)

        self.summary = QLabel("Compare to see each node's error here.")
        self.summary.setObjectName("numericsSummary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        self.chart = ErrorChart()
        self.chart.nodeClicked.connect(self._jump)
        self.modules = QTreeWidget()
        self.modules.setObjectName("numericsModules")
        self.modules.setHeaderLabels(["module", "failing", "max abs", "amplification"])
        self.modules.setRootIsDecorated(False)
        self.modules.itemActivated.connect(self._module_clicked)
        self.modules.itemClicked.connect(self._module_clicked)
        self.failing = QTreeWidget()
        self.failing.setObjectName("numericsFailing")
        self.failing.setHeaderLabels(["line", "node", "module", "max abs", "max rel"])
        self.failing.setRootIsDecorated(False)
        self.failing.itemActivated.connect(self._node_clicked)
        self.failing.itemClicked.connect(self._node_clicked)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.chart, "Error along the program")
        self.tabs.addTab(self.modules, "Modules")
        self.tabs.addTab(self.failing, "Over tolerance")
        self.clear_button = QToolButton()
        self.clear_button.setText("Clear")
        self.clear_button.setToolTip("remove this archive's comparison (and its heat)")
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

        self.run_button.clicked.connect(lambda: self.start())
        self.cancel_button.clicked.connect(self.cancel)
        self.candidate.currentIndexChanged.connect(lambda _i: self._update_enabled())
        self.other.textChanged.connect(lambda _t: self._update_enabled())

    # -- devices and documents --
    def _fill_devices(self, devices: list[DeviceInfo]) -> None:
        for combo in (self.device, self.on_device):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            if not any(d.id == "cpu" for d in devices):
                combo.addItem("cpu", "cpu")
            for d in devices:
                combo.addItem(d.label, d.id)
            combo.setCurrentIndex(max(combo.findData(current), 0))
            combo.blockSignals(False)
        self._update_enabled()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self.devices is not None:
            self.devices.ensure()

    def _show_doc(self, doc: Document | None) -> None:
        self.doc = doc
        wanted = self.program.currentData()
        self.program.blockSignals(True)
        self.program.clear()
        self.program.addItem("All programs", "")
        if doc is not None:
            for name in doc.program_names:
                self.program.addItem(name, name)
            self.archive_label.setText(f"Archive: {doc.path.name}")
            self.archive_label.setToolTip(plain_tip(str(doc.path)))
        else:
            self.archive_label.setText("Open an archive to compare its numerics.")
            self.archive_label.setToolTip("")
        self.program.setCurrentIndex(max(self.program.findData(wanted), 0))
        self.program.blockSignals(False)
        self._show_results()
        self._update_enabled()

    def _doc_closed(self, doc: Document) -> None:
        self.results.pop(doc, None)
        if self._job is not None and self._job[0] is doc:
            self.cancel()
        if self.doc is doc:
            self._show_doc(self.workspace.current)

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Compare with", "", "Archives (*.pt2)")
        if path:
            self.other.setText(path)

    # -- options --
    def candidate_choice(self) -> tuple[str, str]:
        kind, _, value = str(self.candidate.currentData() or "precision:bf16").partition(":")
        return kind, value

    def spec(self, trust: bool = False) -> NumericsSpec:
        kind, value = self.candidate_choice()
        if value == "device":
            value = str(self.on_device.currentData() or "cpu")
        elif value == "file":
            value = self.other.text().strip()
        program = self.program.currentData() or ""
        graph = GraphRunSpec(file=str(self.doc.path) if self.doc is not None else "",
                             device=str(self.device.currentData() or "cpu"),
                             programs=(program,) if program else (), trust=trust)
        return NumericsSpec(graph, kind, value)

    def _update_enabled(self) -> None:
        running = self.runner.is_running()
        kind, value = self.candidate_choice()
        self.on_device.setVisible(value == "device")
        self.other.setVisible(value == "file")
        self.browse.setVisible(value == "file")
        ok = self.doc is not None and not running and (value != "file" or bool(self.other.text().strip()))
        self.run_button.setEnabled(ok)
        self.cancel_button.setEnabled(running)
        for w in (self.device, self.candidate, self.on_device, self.other, self.program):
            w.setEnabled(not running)

    # -- running --
    def start(self, trust: bool = False, doc: Document | None = None) -> bool:
        doc = doc or self.doc
        if doc is None or doc.closed or self.runner.is_running():
            return False
        try:
            spec = self.spec(trust=trust).validate()
        except InspectorError as exc:
            self.status_area.set_status(str(exc), error=True)
            return False
        self.status_area.clear()
        self._job = (doc, spec)
        self.runner.start("numerics", spec.to_argv())
        self.chrome.starting("numerics: ")
        self._update_enabled()
        return True

    def cancel(self) -> None:
        job = self._job
        self.chrome.forget_rerun()
        if self.runner.cancel() and job is not None:
            self.status_area.set_status(f"Cancelled the comparison of {job[0].path.name}.")
            self.progress.setFormat("cancelled")

    def shutdown(self) -> None:
        self.runner.shutdown()

    def _on_result(self, event: dict[str, Any]) -> None:
        if self._job is None:
            return
        doc, spec = self._job
        if doc.closed:
            return
        result = {k: v for k, v in event.items() if k != "event"}
        entry = self.results.setdefault(doc, DocResults())
        entry.result, entry.spec = result, spec
        entry.programs = {p["name"]: p for p in result.get("programs") or []}
        layers = numerics_layers(result)
        for program, layer in layers.items():
            self.workspace.annotate(doc, program, layer)
        for program in doc.program_names:
            if program not in layers:
                self.workspace.annotate(doc, program, AnnotationLayer(NUMERICS_SOURCE))
        self.chrome.done()
        if doc is self.doc:
            self._show_results()
        self.compared.emit(result)

    def _on_error(self, message: str, details: str) -> None:
        job = self._job
        if job is not None and self.chrome.offer_trust(
                message, job[1].graph.trust, lambda m: confirm_trust(self, m),
                lambda doc=job[0]: self.start(True, doc)):
            return
        self.progress.setFormat("failed")
        self.status_area.set_status(f"Comparison failed: {message}", error=True,
                                    details=details or "")

    def _on_finished(self) -> None:
        self._job = None
        if not self.progress.format().endswith(("done", "failed", "cancelled")):
            self.progress.setFormat("stopped")
        self._update_enabled()
        self.chrome.finished()

    # -- results --
    def clear_results(self) -> None:
        if self.doc is None:
            return
        self.results.pop(self.doc, None)
        self.workspace.clear_annotations(self.doc, NUMERICS_SOURCE)
        self._show_results()

    def shown_program(self) -> dict[str, Any] | None:
        """The program whose comparison is on screen: the selection's, else the first."""
        entry = self.results.get(self.doc) if self.doc is not None else None
        if entry is None or not entry.programs:
            return None
        selection = getattr(self.workspace, "selection", None)
        name = getattr(selection, "program", None) if selection is not None else None
        if selection is not None and getattr(selection, "document", None) is not self.doc:
            name = None
        return entry.programs.get(name or "") or next(iter(entry.programs.values()))

    def _show_results(self) -> None:
        entry = self.results.get(self.doc) if self.doc is not None else None
        program = self.shown_program()
        self.clear_button.setEnabled(entry is not None)
        self._shown_name = program["name"] if program else None
        while self.answers_layout.count():
            item = self.answers_layout.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        if program is None:
            self.summary.setText("Compare to see each node's error here.")
            self.chart.set_points([])
            self.modules.clear()
            self.failing.clear()
            self.selected.setText("")
            return
        result = entry.result or {}
        cand = result.get("candidate") or {}
        self.summary.setText(
            f"{program['name']}: {program.get('compared', 0)} nodes compared, "
            f"{program.get('failing', 0)} over tolerance; reference on "
            f"{(result.get('reference') or {}).get('device')}, candidate: "
            f"{_candidate_text(cand)}"
            + ("" if program.get("ok", True) else "; a run FAILED (see Over tolerance)"))
        for row, answer in enumerate(answers(program)):
            label = QLabel(f"{answer.label}: {answer.text}")
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setWordWrap(True)
            node = next((n for n in program.get("nodes") or [] if n["node"] == answer.node), None)
            if node is not None:
                label.setToolTip(plain_tip(figures(node)))
            self.answers_layout.addWidget(label, row, 0)
            if answer.node:
                go = QToolButton()
                go.setText("Go")
                go.setObjectName(f"numericsGo{row}")
                go.setToolTip(f"select {answer.node} in the listing")
                go.clicked.connect(lambda _c=False, n=answer.node: self._jump(n))
                self.answers_layout.addWidget(go, row, 1)
        self.chart.set_points(points(program))
        self.modules.clear()
        for m in module_rows(program):
            amp = ("new" if m.get("makes_error") else
                   "-" if m.get("amplification") is None else f"{m['amplification']:.3g}")
            item = QTreeWidgetItem([m["path"], str(m.get("failing", 0)),
                                    f"{m.get('max_abs') or 0:.3g}", amp])
            item.setData(0, Qt.ItemDataRole.UserRole, m.get("first_failing") or m.get("worst"))
            item.setToolTip(0, plain_tip(f"{m['path']} ({m.get('class', '')}): worst node "
                                         f"{m.get('worst')}"))
            self.modules.addTopLevelItem(item)
        self.failing.clear()
        for n in program.get("nodes") or []:
            if n.get("passes"):
                continue
            item = QTreeWidgetItem([str(n.get("line") or "?"), n["node"], n.get("module") or "",
                                    f"{n.get('max_abs') or 0:.3g}",
                                    "-" if n.get("max_rel") is None else f"{n['max_rel']:.3g}"])
            item.setData(0, Qt.ItemDataRole.UserRole, n["node"])
            item.setToolTip(1, plain_tip(figures(n)))
            self.failing.addTopLevelItem(item)
        for f in program.get("failures") or []:
            item = QTreeWidgetItem([str(f.get("line") or "?"), f.get("node", ""), "",
                                    "failed", (f.get("message") or "")[:200]])
            item.setData(0, Qt.ItemDataRole.UserRole, f.get("node"))
            self.failing.addTopLevelItem(item)
        self.tabs.setTabText(self.tabs.indexOf(self.failing),
                             f"Over tolerance ({program.get('failing', 0)})")
        self._follow()

    def _follow(self) -> None:
        """The selection moved: mark its node on the chart and show its figures."""
        program = self.shown_program()
        if program is None:
            return
        if program["name"] != getattr(self, "_shown_name", None):
            self._show_results()  # the user went to another program of the archive
            return
        selection = getattr(self.workspace, "selection", None)
        node = getattr(selection, "node", None) if selection is not None else None
        n = next((x for x in program.get("nodes") or [] if x["node"] == node), None)
        self.chart.mark(node if n is not None else None)
        self.selected.setText(f"Selected {node} (line {n.get('line') or '?'}): {figures(n)}"
                              if n is not None else "")

    def _jump(self, node: str) -> None:
        program = self.shown_program()
        if self.doc is None or program is None or not node:
            return
        selection = getattr(self.workspace, "selection", None)
        if selection is not None:
            selection.select_node(program["name"], node, self.doc)
        else:
            self.workspace.select_node(program["name"], node, self.doc)
        self._follow()

    def _module_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        node = item.data(0, Qt.ItemDataRole.UserRole)
        if node:
            self._jump(str(node))

    def _node_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        node = item.data(0, Qt.ItemDataRole.UserRole)
        if node:
            self._jump(str(node))


def _candidate_text(cand: dict[str, Any]) -> str:
    kind = cand.get("kind")
    if kind == "precision":
        return f"{cand.get('precision')} on {cand.get('device')}"
    if kind == "on":
        threads = f", {cand['threads']} threads" if cand.get("threads") else ""
        return f"on {cand.get('device')}{threads}"
    if kind == "with":
        return f"{cand.get('archive')} ({cand.get('matched')} nodes matched)"
    if kind == "decompose":
        return "run_decompositions()"
    if kind == "eager":
        return "the eager toy model (module boundaries)"
    return str(kind)
