"""The Memory panel: will it fit? Live bytes along program order, from the archive alone.

The plan is core/memory_plan.py (the `memory` command's): the model is built once per
program off the GUI thread (Document.tasks, key "memory", so closing the document
cancels it), then every change of a Dim spin box or of the budget re-plans on the GUI
thread (a few milliseconds even at 100,000 nodes: tests/benchmarks/bench_memory.py) and
redraws at once. The chart (ui/widgets/memory_chart.py) marks the peak and draws the
budget line; a click selects the nearest node through the selection model, and the
node the listing is on is marked in the chart (it follows `workspace.selection`). Each node's live bytes
go to the listing's gutter as heat and each module's peak to the module tree
(an AnnotationLayer "memory").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from inspector.core.annotations import AnnotationLayer, Heat
from inspector.core.byte_sizes import format_bytes
from inspector.ui.plain import plain_tip
from inspector.ui.selection import PLACE
from inspector.ui.widgets.memory_chart import MIB, MemoryChart
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.workspace import Document, Workspace

if TYPE_CHECKING:  # memory_plan imports numpy (~0.05 s): in the worker, not at launch
    from inspector.core.memory_plan import MemoryModel, MemoryPlan

SOURCE = "memory"
SPIN_CAP = 2**31 - 1  # a QSpinBox holds a C int; unbounded dims stop here
GIB = float(1 << 30)


def build_model(archive: Any, program_name: str, view: Any = None) -> MemoryModel:
    """Worker side: the memory model of one program under the listing's names."""
    from inspector.core.listing import render_listing
    from inspector.core.memory_plan import MemoryModel
    from inspector.core.memory_report import listed_names, weight_records
    from inspector.core.node_index import node_index

    program = view.program if view is not None else archive.program(program_name)
    listing = view.listing if view is not None else render_listing(program)
    names = listed_names(program, listing, node_index(program, listing))
    return MemoryModel(program, names, weight_records(archive, program))


class MemoryPanel(QWidget):
    planned = Signal()  # after each re-plan and redraw (tests, benchmarks)

    def __init__(self, workspace: Workspace | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("memoryPanel")
        self.workspace = workspace if workspace is not None else Workspace(self)
        self.doc: Document | None = None
        self.program: str | None = None
        self.model: MemoryModel | None = None
        self.plan: MemoryPlan | None = None
        self.spins: dict[str, QSpinBox] = {}
        self._build()
        ws = self.workspace
        ws.currentChanged.connect(self._follow)
        ws.documentClosed.connect(lambda doc: self._follow(ws.current) if doc is self.doc else None)
        ws.selection.changed.connect(self._selection_changed)
        self._follow(ws.current)

    # -- widgets --
    def _build(self) -> None:
        self.programs = QComboBox()
        self.programs.setObjectName("memoryProgram")
        self.programs.setToolTip("program of the current archive")
        self.programs.currentTextChanged.connect(self._program_picked)
        self.budget = QDoubleSpinBox()
        self.budget.setObjectName("memoryBudget")
        self.budget.setRange(0.0, 1 << 20)
        self.budget.setDecimals(2)
        self.budget.setSuffix(" GiB")
        self.budget.setSpecialValueText("no budget")
        self.budget.setToolTip("memory the device has for the program: the chart draws the "
                               "line, the summary says whether it fits and the largest dims that do")
        self.budget.valueChanged.connect(lambda _v: self.replan())
        self.dims_row = QHBoxLayout()
        self.dims_row.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        for text, widget in (("Program", self.programs), ("Budget", self.budget)):
            label = QLabel(text)
            label.setTextFormat(Qt.TextFormat.PlainText)
            top.addWidget(label)
            top.addWidget(widget, 1 if widget is self.programs else 0)
        top.addLayout(self.dims_row)
        self.summary = QLabel("Open an archive to see its memory.")
        self.summary.setObjectName("memorySummary")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        # one line, no word wrap: a wrapping label gives the panel a height-for-width,
        # and the dock's scroll area then lays it out at its preferred height
        # (~580 px), not the dock's; the full text is the tooltip
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.summary.setMinimumWidth(60)
        self.chart = MemoryChart()  # its plot is made when it is first painted
        self.chart.nodeClicked.connect(self.select_index)
        self.status_area = StatusArea()
        box = QVBoxLayout(self)
        box.addLayout(top)
        box.addWidget(self.summary)
        box.addWidget(self.chart, 1)
        box.addWidget(self.status_area)

    # -- following the workspace and its selection --
    def _follow(self, doc: Document | None) -> None:
        if doc is self.doc:
            return
        if self.doc is not None:
            try:
                self.doc.programShown.disconnect(self._shown)
            except (RuntimeError, TypeError):
                pass
            self.doc.tasks.cancel(SOURCE)
        self.doc = doc
        self.programs.blockSignals(True)
        self.programs.clear()
        if doc is not None:
            self.programs.addItems(doc.program_names)
            doc.programShown.connect(self._shown)
        self.programs.blockSignals(False)
        self.program = None
        self._set_model(None)
        if doc is None:
            self.summary.setText("Open an archive to see its memory.")
            return
        self._shown(doc.shown_program or (doc.program_names[0] if doc.program_names else ""))

    def _shown(self, program: str) -> None:
        if program and self.programs.findText(program) >= 0:
            self.programs.blockSignals(True)
            self.programs.setCurrentText(program)
            self.programs.blockSignals(False)
            self._program_picked(program)

    def _program_picked(self, program: str) -> None:
        if not program or program == self.program or self.doc is None:
            return
        self.program = program
        self._set_model(None)
        self.summary.setText(f"{program}: planning memory…")
        doc = self.doc
        doc.tasks.start(build_model, doc.archive, program, doc.view(program), key=SOURCE,
                        on_done=lambda model, p=program, d=doc: self._model_ready(d, p, model),
                        on_fail=self._failed, gated=True)

    def _model_ready(self, doc: Document, program: str, model: MemoryModel) -> None:
        if doc is not self.doc or program != self.program:
            return  # a stale answer
        self._set_model(model)

    def _failed(self, message: str, details: str) -> None:
        self.summary.setText("")
        self.status_area.set_status(message, error=True, details=details)

    def _selection_changed(self, aspects: frozenset[str]) -> None:
        if PLACE not in aspects:
            return
        sel = self.workspace.selection
        if sel.document is self.doc and sel.program and sel.program != self.program:
            self._shown(sel.program)
        self._mark_cursor()

    def _mark_cursor(self) -> None:
        sel = self.workspace.selection
        i = self._index_of(sel.node) if sel.program == self.program else None
        self.chart.mark(i if self.plan is not None else None)

    def _index_of(self, node: str | None) -> int | None:
        if node is None or self.model is None:
            return None
        if not hasattr(self, "_positions") or self._positions[0] is not self.model:
            self._positions = (self.model, {n: i for i, n in enumerate(self.model.node_names)})
        return self._positions[1].get(node)

    # -- the plan --
    def _set_model(self, model: MemoryModel | None) -> None:
        self.model = model
        self.plan = None
        while self.dims_row.count():
            item = self.dims_row.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self.spins = {}
        if model is None:
            self.chart.clear()
            return
        for sym in model.dynamic_symbols:
            label = QLabel(sym.name)
            label.setTextFormat(Qt.TextFormat.PlainText)
            spin = QSpinBox()
            spin.setObjectName(f"memoryDim_{sym.name}")
            spin.setRange(max(sym.min or 0, 0), min(sym.max if sym.max is not None else SPIN_CAP,
                                                    SPIN_CAP))
            spin.setValue(min(sym.default(), spin.maximum()))
            hi = "inf" if sym.max is None else sym.max
            spin.setToolTip(f"{sym.name} in [{sym.min}, {hi}]; traced with {sym.traced}")
            spin.valueChanged.connect(lambda _v: self.replan())
            self.dims_row.addWidget(label)
            self.dims_row.addWidget(spin)
            self.spins[sym.name] = spin
        self.status_area.clear()
        self.replan()

    def dims(self) -> dict[str, int]:
        return {name: spin.value() for name, spin in self.spins.items()}

    def budget_bytes(self) -> int | None:
        value = self.budget.value()
        return int(value * GIB) if value > 0 else None

    def replan(self) -> None:
        """Plan at the spin boxes' values and redraw, at once."""
        model = self.model
        if model is None:
            return
        plan = model.plan(self.dims(), checked=False)
        self.plan = plan
        y = plan.live_bytes / MIB
        i = plan.peak_index
        peak = None if i is None else (
            i, float(y[i]), f"peak {format_bytes(plan.peak_bytes)} at {plan.peak_node()}")
        budget = self.budget_bytes()
        self.chart.show_plan(y, plan.baseline_bytes / MIB, peak,
                             None if budget is None else budget / MIB)
        text = self._summary_text(plan, budget)
        self.summary.setText(text)
        self.summary.setToolTip(plain_tip(text))  # names from the file: plain text
        self._publish(plan)
        self._mark_cursor()
        self.planned.emit()

    def _summary_text(self, plan: MemoryPlan, budget: int | None) -> str:
        model = plan.model
        parts = [f"{model.program}: peak {format_bytes(plan.peak_bytes)}"
                 + (f" at {plan.peak_node()}" if plan.peak_node() else ""),
                 f"weights {format_bytes(plan.weights_bytes)}",
                 f"inputs {format_bytes(plan.inputs_bytes)}",
                 f"{len(model.node_names):,} nodes"]
        text = " · ".join(parts)
        if budget is not None:
            fits = plan.peak_bytes <= budget
            text += f" · {'fits in' if fits else 'does not fit in'} {format_bytes(budget)}"
            largest = model.largest_fitting(budget, self.dims())
            if largest:
                text += "; largest that fit (the others as set): " + ", ".join(
                    f"{k} {v}" if v is not None else f"{k} none" for k, v in sorted(largest.items()))
        return text

    def _publish(self, plan: MemoryPlan) -> None:
        """Each node's live bytes as the gutter's heat, each module's peak in the tree."""
        if self.doc is None or self.program is None:
            return
        model = plan.model
        heat = {name: Heat(float(live), format_bytes(int(live)),
                           f"live {format_bytes(int(live))} while it runs; "
                           f"its outputs {format_bytes(int(out))}")
                for name, live, out in zip(model.node_names, plan.live_bytes, plan.out_bytes)}
        modules = {}
        if len(model.node_names) <= 20_000:  # the rollup walks every value's readers
            modules = {m.path: Heat(float(m.peak_bytes), format_bytes(m.peak_bytes),
                                    f"peak {format_bytes(m.peak_bytes)} at {m.peak_node}; "
                                    f"its outputs keep {format_bytes(m.kept_bytes)}")
                       for m in model.module_rollups(plan)}
        self.workspace.annotate(self.doc, self.program,
                                AnnotationLayer(SOURCE, heat=heat, modules=modules, title="bytes"))

    def select_index(self, i: int) -> None:
        """Select the node at index i of program order (a click on the chart)."""
        if self.plan is not None and self.doc is not None and self.program is not None:
            self.workspace.select_node(self.program, self.plan.model.node_names[i], self.doc)
