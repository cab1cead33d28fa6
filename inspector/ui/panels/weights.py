"""The Weights panel: every parameter, buffer and constant of the shown program with its
statistics (min, max, mean, std, NaN, Inf, zeros), the histogram of the selected one,
and a jump to its placeholder in the listing and to the nodes that use it.

Statistics and histograms read the raw records with numpy (inspector/core/
weight_table.py), on the document's task group (`doc.tasks`): never on the GUI thread,
with progress and Cancel, and cancelled when the document closes. A weight that cannot
be read says why in its own row ("error: ...", "not read (pickled)"): no dialog.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QSortFilterProxyModel, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from inspector.core.errors import InspectorError
from inspector.core.weight_table import (
    StatsResult,
    WeightEntry,
    stats_of_row,
    table_stats,
    weight_entries,
    weight_histogram,
)
from inspector.ui.device_list import DeviceSource
from inspector.ui.tasks import Task, TaskContext
from inspector.ui.plain import plain_tip
from inspector.ui.widgets.weights_view import (
    COLUMNS,
    SORT_ROLE,
    HistogramView,
    WeightsModel,
)
from inspector.ui.workspace import Document, Workspace

HISTOGRAM_BINS = 64
# Progress is reported per block (~256 KB): a 465 MB program has ~1,800 blocks, so
# report only steps of this size to keep the GUI thread's queue short.
PROGRESS_STEP = 0.005


def _stats_task(ctx: TaskContext, archive: Any, infos: list) -> StatsResult:
    last = [-1.0]

    def progress(fraction: float) -> None:
        if fraction - last[0] >= PROGRESS_STEP or fraction >= 1.0:
            last[0] = fraction
            ctx.progress(fraction)

    return table_stats(archive, infos, should_cancel=ctx.cancelled, progress=progress)


def _histogram_task(ctx: TaskContext, archive: Any, info: Any, stats: Any) -> Any:
    return weight_histogram(archive, info, HISTOGRAM_BINS, stats=stats, should_cancel=ctx.cancelled)


class WeightsPanel(QWidget):
    statsReady = Signal(object)  # StatsResult shown (cancelled ones too)
    histogramReady = Signal(object)  # Histogram shown

    def __init__(self, workspace: Workspace | None = None, devices: DeviceSource | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace if workspace is not None else Workspace(self)
        self.doc: Document | None = None
        self.program: str | None = None
        self.result: StatsResult | None = None
        self._stats_task: Task | None = None
        self._hist_task: Task | None = None
        self._build()
        ws = self.workspace
        ws.currentChanged.connect(lambda doc: self._follow(doc))
        ws.programLoaded.connect(self._program_loaded)
        ws.documentClosed.connect(self._closed)
        self._follow(ws.current)  # built late (a lazy panel): the archive already open

    # -- layout --
    def _build(self) -> None:
        self.programs = QComboBox()
        self.programs.setObjectName("weightsProgram")
        self.programs.setToolTip("the program whose weights are shown")
        self.programs.currentTextChanged.connect(self._program_picked)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter names")
        self.filter.setClearButtonEnabled(True)
        self.filter.setMaximumWidth(240)
        self.compute_button = QPushButton("Compute statistics")
        self.compute_button.setToolTip("read every weight's values (numpy over the raw "
                                       "records; nothing from the archive is executed)")
        self.compute_button.clicked.connect(self.compute)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(160)
        self.progress.setMaximumHeight(16)
        self.progress.hide()
        self.summary = QLabel("Open an archive to see its weights.")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        top = QHBoxLayout()
        top.addWidget(QLabel("Program"))
        top.addWidget(self.programs)
        top.addWidget(self.filter)
        top.addWidget(self.compute_button)
        top.addWidget(self.cancel_button)
        top.addWidget(self.progress)
        top.addWidget(self.summary, 1)

        self.model = WeightsModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setFilterKeyColumn(0)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.table = QTableView()
        self.table.setObjectName("weightsStatsTable")
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # the configs' order first
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        # a name's end tells weights apart (…h.0.attn.c_attn.weight): cut its middle
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for col, width in enumerate((240, 66, 92, 70, 70, 72, 66, 40, 40, 50, 82, 64, 56, 120, 100)):
            self.table.setColumnWidth(col, width)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._row_selected(cur))
        self.table.doubleClicked.connect(lambda index: self.jump_to_placeholder())

        self.histogram = HistogramView()
        # One line under the histogram (the bottom dock is short): the weight's graph
        # input with its jump, and the nodes that read it (usually one or two).
        self.weight_label = QLabel("")
        self.weight_label.setTextFormat(Qt.TextFormat.PlainText)
        self.weight_label.setMinimumWidth(40)
        self.jump_button = QPushButton("Show")
        self.jump_button.setToolTip("select the weight's graph input (placeholder) in the listing "
                                    "(or double-click its row)")
        self.jump_button.setEnabled(False)
        self.jump_button.setMaximumWidth(self.jump_button.fontMetrics().horizontalAdvance("Show") + 24)
        self.jump_button.clicked.connect(self.jump_to_placeholder)
        self.users = QComboBox()
        self.users.setObjectName("weightUsers")
        self.users.setToolTip("nodes that read this weight: pick one to show it in the listing")
        self.users.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.users.setMinimumContentsLength(6)
        self.users.activated.connect(self._user_activated)
        self.users_label = QLabel("used by")
        side = QWidget()
        side_lay = QVBoxLayout(side)
        side_lay.setContentsMargins(4, 0, 0, 0)
        side_lay.setSpacing(2)
        side_lay.addWidget(self.histogram, 1)
        row = QHBoxLayout()
        row.addWidget(self.weight_label, 1)
        row.addWidget(self.jump_button)
        row.addSpacing(8)
        row.addWidget(self.users_label)
        row.addWidget(self.users)
        side_lay.addLayout(row)
        side.setMinimumWidth(260)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.setObjectName("weightsSplit")
        split.addWidget(self.table)
        split.addWidget(side)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([640, 320])  # the table first: its statistics should stay in view
        split.setChildrenCollapsible(False)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(split, 1)

    def changeEvent(self, event: Any) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # light/dark: the marked rows' colours
            self.model.refresh_theme()

    # -- following the workspace --
    def _follow(self, doc: Document | None) -> None:
        if doc is self.doc and doc is not None:
            return
        self.doc = doc
        self.programs.blockSignals(True)
        self.programs.clear()
        if doc is not None:
            self.programs.addItems(doc.program_names)
        self.programs.blockSignals(False)
        if doc is None:
            self._show(None)
            return
        name = doc.shown_program or next(iter(doc.views), None)
        if name is not None:
            self.programs.blockSignals(True)
            self.programs.setCurrentText(name)
            self.programs.blockSignals(False)
        self._show(name)

    def _program_loaded(self, doc: Document, view: Any) -> None:
        if self.doc is None and doc is self.workspace.current:
            self._follow(doc)
        elif doc is self.doc and view.name in (self.program, doc.shown_program):
            # the program asked for here, or the one the window now shows
            # (a window shows what it loaded before this signal reaches panels)
            self.programs.blockSignals(True)
            self.programs.setCurrentText(view.name)
            self.programs.blockSignals(False)
            self._show(view.name)

    def _closed(self, doc: Document) -> None:
        if doc is self.doc:
            self._follow(self.workspace.current)

    def _program_picked(self, name: str) -> None:
        if not name or self.doc is None:
            return
        if name not in self.doc.views:
            self.program = name
            self._clear("Reading program " + name + "…")
            self.workspace.load_program(self.doc, name)
            return
        self._show(name)

    def _clear(self, message: str) -> None:
        self._stop_tasks()
        self.model.set_entries([])
        self.result = None
        self.summary.setText(message)
        self.histogram.show_message("Select a weight to see its histogram.")
        self._set_selected(None)

    def _show(self, name: str | None) -> None:
        """Show the weights of program `name` of the current document (if built)."""
        doc = self.doc
        view = doc.views.get(name) if doc is not None and name else None
        if view is None:
            self.program = name
            self._clear("Open an archive to see its weights." if doc is None else "Reading…")
            return
        if name == self.program and self.model.entries and self.result is not None:
            return  # already shown
        self._stop_tasks()
        self.program = name
        self.result = None
        try:
            entries = weight_entries(doc.archive, name, view.program)
        except InspectorError as exc:  # the configs cannot be read: say so in the panel
            self._clear(f"error: {exc}")
            return
        self.model.set_entries(entries, view.weights)
        self._set_selected(None)
        self.histogram.show_message("Select a weight to see its histogram.")
        self.summary.setText(f"{len(entries)} weights")
        if entries:
            self.compute()

    # -- statistics --
    def compute(self) -> None:
        """Compute every shown weight's statistics in the background."""
        doc, name = self.doc, self.program
        if doc is None or name is None or not self.model.entries:
            return
        infos = [e.info for e in self.model.entries]
        entries = self.model.entries
        self.progress.setValue(0)
        self.progress.show()
        self.cancel_button.setEnabled(True)
        self.compute_button.setEnabled(False)
        self.summary.setText(f"Computing statistics of {len(infos)} weights…")
        started: list[Task] = []
        self._stats_task = doc.tasks.start(
            _stats_task, doc.archive, infos, context=True, key="weights:stats",
            on_progress=lambda f: self.progress.setValue(int(f * 1000)),
            on_done=lambda result: self._stats_done(doc, entries, result),
            on_fail=lambda msg, _det: self.summary.setText(f"error: {msg}"),
            on_end=lambda: self._stats_ended(started[0]))
        started.append(self._stats_task)

    def cancel(self) -> None:
        """Stop the statistics pass; the weights done so far stay shown."""
        if self._stats_task is not None:
            self._stats_task.stop()

    def busy(self) -> bool:
        return self._stats_task is not None or self._hist_task is not None

    def _stats_ended(self, task: Task) -> None:
        if task is not self._stats_task:
            return  # an older pass, replaced (its outcome was dropped)
        self._stats_task = None
        self.progress.hide()
        self.cancel_button.setEnabled(False)
        self.compute_button.setEnabled(self.doc is not None and bool(self.model.entries))

    def _stats_done(self, doc: Document, entries: list[WeightEntry], result: StatsResult) -> None:
        if doc is not self.doc or entries is not self.model.entries:
            return  # another program is shown now
        self.result = result
        self.model.set_rows(result.rows)
        rows = result.rows
        done = sum(r["stats"] is not None for r in rows)
        flagged = sum(1 for i in range(len(rows)) if self.model.flag(i) == "nonfinite")
        errors = sum(1 for r in rows if (r.get("note") or "").startswith("error"))
        parts = [f"{len(rows)} weights", f"{done} with statistics"]
        if flagged:
            parts.append(f"{flagged} with NaN/Inf")
        if errors:
            parts.append(f"{errors} unreadable")
        if result.cancelled:
            parts.append("cancelled")
        self.summary.setText(", ".join(parts))
        self.statsReady.emit(result)
        current = self.selected_entry()
        if current is not None:
            self._histogram_for(current)  # its range is known now

    # -- the selected weight --
    def selected_row(self) -> int | None:
        index = self.table.currentIndex()
        if not index.isValid():
            return None
        return self.proxy.mapToSource(index).row()

    def selected_entry(self) -> WeightEntry | None:
        row = self.selected_row()
        return self.model.entries[row] if row is not None else None

    def select_weight(self, name: str) -> bool:
        for r, e in enumerate(self.model.entries):
            if e.info.name == name:
                index = self.proxy.mapFromSource(self.model.index(r, 0))
                if not index.isValid():  # filtered out
                    self.filter.clear()
                    index = self.proxy.mapFromSource(self.model.index(r, 0))
                self.table.setCurrentIndex(index)
                self.table.scrollTo(index)
                return True
        return False

    def _row_selected(self, index: Any) -> None:
        entry = self.selected_entry() if index.isValid() else None
        self._set_selected(entry)
        if entry is not None:
            self._histogram_for(entry)

    def _set_selected(self, entry: WeightEntry | None) -> None:
        self.users.clear()
        if entry is None:
            self.weight_label.setText("")
            self.jump_button.setEnabled(False)
            self.users_label.setText("used by")
            self.users.setEnabled(False)
            return
        ph = entry.placeholder
        self.weight_label.setText(ph if ph else "no graph input")
        self.weight_label.setToolTip(plain_tip(
            f"{entry.info.name} is the graph input {ph}" if ph else
            f"no graph input carries {entry.info.name}"))
        self.jump_button.setEnabled(ph is not None)
        self.users_label.setText("used by" if len(entry.users) < 2 else f"used by {len(entry.users)}")
        self.users.addItems(entry.users)  # item text is painted as plain text
        self.users.setEnabled(bool(entry.users))

    def _histogram_for(self, entry: WeightEntry) -> None:
        doc = self.doc
        if doc is None:
            return
        info = entry.info
        row = self.model.rows[self.model.entries.index(entry)]
        note = row.get("note") if row is not None else info.note
        if not info.readable or (row is not None and row.get("stats") is None):
            self.histogram.show_message(f"{info.name}: {note or 'no values'}")
            return
        stats = stats_of_row(row) if row is not None else None
        self.histogram.show_message(f"{info.name}: computing the histogram…")
        started: list[Task] = []
        self._hist_task = doc.tasks.start(
            _histogram_task, doc.archive, info, stats, context=True, key="weights:histogram",
            on_done=lambda h: self._histogram_done(entry, h),
            on_fail=lambda msg, _det: self.histogram.show_message(f"{info.name}: {msg}"),
            on_end=lambda: self._histogram_ended(started[0]))
        started.append(self._hist_task)

    def _histogram_ended(self, task: Task) -> None:
        if task is self._hist_task:
            self._hist_task = None

    def _histogram_done(self, entry: WeightEntry, hist: Any) -> None:
        if entry is not self.selected_entry():
            return
        row = self.model.rows[self.model.entries.index(entry)]
        s = row.get("stats") if row is not None else None
        excluded = (s.get("nan", 0) + s.get("inf", 0)) if s else 0
        self.histogram.set_histogram(entry.info.name, hist.edges, hist.counts, hist.of, excluded)
        self.histogramReady.emit(hist)

    # -- jumps --
    def jump_to_placeholder(self) -> bool:
        """Select the weight's placeholder in the listing (Workspace.select_node)."""
        entry = self.selected_entry()
        if entry is None or entry.placeholder is None or self.program is None:
            return False
        self.workspace.select_node(self.program, entry.placeholder, self.doc)
        return True

    def _user_activated(self, index: int) -> None:
        """Show user `index` of the selected weight in the listing."""
        entry = self.selected_entry()
        if entry is not None and self.program is not None and 0 <= index < len(entry.users):
            self.workspace.select_node(self.program, entry.users[index], self.doc)

    # -- lifetime --
    def _stop_tasks(self) -> None:
        for task in (self._stats_task, self._hist_task):
            if task is not None:
                task.cancel()  # its outcome is dropped; on_end still clears the handle
        if self.doc is not None and not self.doc.closed:
            self.doc.tasks.cancel("weights:stats")
            self.doc.tasks.cancel("weights:histogram")

    def shutdown(self) -> None:
        self._stop_tasks()
