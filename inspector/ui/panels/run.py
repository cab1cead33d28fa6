"""The Run panel: time the archive's generator on a chosen device, charted live.

The run job (`python -m inspector.jobs run`, inspector/jobs/timed_generation.py) does the torch
work in a child; this panel only turns its `sample` events (one per token) into a
chart. Several runs stay overlaid with a legend, so eager vs export vs compiled read at
a glance; results save as CSV/JSON and the chart as PNG.

The window process never imports torch: whether it is installed is asked of
importlib (find_spec), and the devices come from the devices job.

The options fit the archive: its batch and seq_len ranges (read from its JSON by
inspector/core/run_ranges.py, the same functions the CLI uses) set the Batch and
Max tokens boxes' ranges and defaults; a remembered or typed value is kept, clamped
into them. What the archive cannot run is said under the options, naming the
window's controls, before any child starts.

In the window it is a mode of its own (registry area "central"): options on the left,
the chart over the stats table on the right, a traceback below them at full width.
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from inspector.core.archive import open_archive
from inspector.core.atomic import OutputPathError, write_bytes
from inspector.core.job_words import window_terms
from inspector.core.run_ranges import (
    DEFAULT_BATCH,
    DEFAULT_MAX_TOKENS,
    GeneratorRanges,
    run_boxes,
    run_problems,
)
from inspector.core.run_results import RunRecord, results_csv, results_json, run_label
from inspector.ui.device_list import DeviceSource, fill_combo
from inspector.ui.job_runner import (
    DEFAULT_THREADS,
    MODES,
    PRECISIONS,
    SEQ_LEN_LIMIT,
    JobRunner,
    RunSpec,
    RunSpecError,
)
from inspector.ui.panels.saved_options import SavedOptions
from inspector.ui.tasks import TaskGroup
from inspector.ui.widgets.job_chrome import JobChrome, confirm_trust
from inspector.ui.widgets.latency_chart import LatencyChart
from inspector.ui.plain import plain_tip
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.widgets.theme import current_theme
from inspector.ui.workspace import Workspace

STAT_COLUMNS = ("Run", "p50 ms", "p90 ms", "p99 ms", "tokens/s", "total ms", "encoder ms",
                "tokens")
RUN_OPTIONS_KEY = "run/last_options"  # QSettings: the options of the last run, as JSON
LIVE_ROW_EVERY = 8  # chart frames between live stats updates (~4 Hz)
BATCH_BOX_MAX = 4096  # RunSpec.validate's limit, when the archive sets none
OPTIONS_WIDTH = 300  # the options column; the chart takes the rest
COMPILING = "compiling (first call)…"  # what the bar says while torch.compile compiles
COMPILING_TICK_MS = 1000  # its elapsed time counts up once a second

def read_ranges(path: str) -> GeneratorRanges:
    """The generator's ranges of an archive no document holds (JSON only)."""
    with open_archive(path) as archive:
        from inspector.core.run_ranges import generator_ranges

        return generator_ranges(archive)


def torch_available() -> bool:
    """Whether a run can work here, without importing torch into the window."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a broken or blocked install: cannot run either
        return False


class RunPanel(QWidget):
    runFinished = Signal(object)  # the RunRecord of a run that ended with a result

    def __init__(self, workspace: Workspace | None = None, devices: DeviceSource | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workspace = workspace if workspace is not None else Workspace(self)
        self.devices = devices
        self.runner = JobRunner(self)
        self.records: list[RunRecord] = []
        self.archive: str | None = None
        self.tasks = TaskGroup(self.workspace.pool, self)  # reads an archive's ranges
        self.ranges: GeneratorRanges | None = None  # of self.archive, once read
        self._chosen: dict[str, int] = {}  # Batch / Max tokens as the user set them
        self._applying = False  # the panel itself is setting the boxes
        self._current: RunRecord | None = None
        self._build()
        if devices is not None:
            fill_combo(self.device, devices.devices)
            devices.changed.connect(lambda devs: fill_combo(self.device, devs))
        self.runner.sample.connect(self._on_sample)
        self.runner.result.connect(self._on_result)
        self.runner.error.connect(self._on_error)
        self.runner.log.connect(self._on_log)
        self.runner.finished.connect(self._on_finished)
        # torch.compile compiles inside the first call, for tens of seconds without an
        # event: the bar says so, with the time it has taken so far
        self._compiling: tuple[str, float] | None = None  # (stage, since: monotonic)
        self._compile_timer = QTimer(self)
        self._compile_timer.setInterval(COMPILING_TICK_MS)
        self._compile_timer.timeout.connect(self._show_compiling)
        self.runner.progress.connect(self._on_progress)
        self.runner.sample.connect(lambda _event: self._stop_compiling())
        self.runner.finished.connect(self._stop_compiling)
        self.chart.redrawn.connect(self._refresh_live_row)
        self.workspace.documentOpened.connect(lambda doc: self.set_archive(str(doc.path)))
        self.workspace.currentChanged.connect(lambda _doc: self._follow_current())
        self.workspace.documentClosed.connect(self._document_closed)
        self.has_torch = torch_available()
        self._restore()
        self._update_enabled()
        if self.workspace.documents:  # built after archives opened (a lazy mode)
            self._follow_current()

    # -- layout --
    def _build(self) -> None:
        self.archive_box = QComboBox()
        self.archive_box.setObjectName("runArchive")
        self.archive_box.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.archive_box.setMinimumContentsLength(12)
        self.archive_box.setPlaceholderText("open an archive exported by pt2-inspector")
        self.archive_box.setToolTip("the archive to run (one exported by pt2-inspector: it "
                                    "carries the encoder and decoder programs)")
        self.torch_banner = QLabel(
            "Running needs torch, which is not installed in this Python: the viewer, audit "
            "and retarget work without it. Install it with <code>pip install torch</code> "
            "and restart to time generation.")
        self.torch_banner.setWordWrap(True)
        self.torch_banner.setTextFormat(Qt.RichText)
        self.torch_banner.setStyleSheet(
            "QLabel { background: rgba(255, 193, 7, 0.18); border: 1px solid #d4a000; "
            "border-radius: 3px; padding: 6px; }")
        self.torch_banner.hide()

        self.device = QComboBox()
        self.device.addItem("cpu", "cpu")
        self.device.setToolTip("where to run (listed by torch in a child process)")
        self.refresh_devices = QToolButton()
        self.refresh_devices.setText("↻")
        self.refresh_devices.setToolTip("list the devices torch sees again")
        self.refresh_devices.clicked.connect(self._ask_devices)
        self.mode = QComboBox()
        for m in MODES:
            self.mode.addItem(m, m)
        self.mode.setToolTip("export: the archive's programs; eager: the toy model rebuilt "
                             "from the archive's config, with its weights")
        self.compile = QCheckBox("torch.compile")
        self.precision = QComboBox()
        for p in PRECISIONS:
            self.precision.addItem(p, p)
        self.precision.setToolTip("fp32, or bf16 autocast")
        self.batch = self._spin(1, BATCH_BOX_MAX, DEFAULT_BATCH, "images per generation")
        self.max_tokens = self._spin(1, SEQ_LEN_LIMIT, DEFAULT_MAX_TOKENS,
                                     "stop after this many tokens")
        for key, spin in (("batch", self.batch), ("max_tokens", self.max_tokens)):
            spin.valueChanged.connect(lambda v, k=key: self._chose(k, v))
        # What the archive cannot run, under the options (plain text, error colour).
        self.problem = QLabel()
        self.problem.setObjectName("runProblem")
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        self.problem.setWordWrap(True)
        self.problem.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.problem.hide()
        self.warmup = self._spin(0, 100, 1, "untimed generations first (compile happens here)")
        self.repeats = self._spin(1, 1000, RunSpec.repeats, "timed generations (each figure's "
                                  "spread is over these)")
        self.threads = self._spin(0, 4096, DEFAULT_THREADS,
                                  "CPU threads torch may use; 0: torch's own choice, one per "
                                  "core (1, the default, is the steadiest: more threads spin "
                                  "against any other load)")
        self.run_button = QPushButton("Run")
        self.run_button.setDefault(True)
        self.run_button.setToolTip("time generation with these options (Ctrl+R)")
        self.run_button.setShortcut("Ctrl+R")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.chrome = JobChrome(self.runner, self)  # progress bar, trusted rerun
        self.progress = self.chrome.progress

        self.chart = LatencyChart(orientation=Qt.Orientation.Horizontal)
        self.stats = QTableWidget(0, len(STAT_COLUMNS))
        self.stats.setHorizontalHeaderLabels(STAT_COLUMNS)
        self.stats.verticalHeader().hide()
        self.stats.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.stats.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.stats.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.stats.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
        self.status_area = StatusArea(details_height=16777215)
        self.status = self.status_area.label  # the status line (plain text)
        self.details_button = self.status_area.details_button
        self.details = self.status_area.details
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("remove every run from the chart")
        self.save_results_button = QPushButton("Save results…")
        self.save_results_button.setToolTip("per-token times and summaries as CSV or JSON")
        self.save_chart_button = QPushButton("Save chart…")
        self.save_chart_button.setToolTip("the latency chart as PNG")
        # Left: a column of options; right: the chart over the stats, and a failure's
        # details below them at full width (a traceback wants the width).
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        form.addRow("Archive", self.archive_box)
        form.addRow("Device", self._pair(self.device, self.refresh_devices))
        form.addRow("Mode", self._pair(self.mode, self.compile))
        form.addRow("Precision", self.precision)
        form.addRow("Batch", self.batch)
        form.addRow("Max tokens", self.max_tokens)
        form.addRow("Warm-up", self.warmup)
        form.addRow("Repeats", self.repeats)
        form.addRow("Threads", self.threads)
        run_row = QHBoxLayout()
        run_row.addWidget(self.run_button)
        run_row.addWidget(self.stop_button)
        save_row = QHBoxLayout()
        save_row.addWidget(self.clear_button)
        save_row.addWidget(self.save_results_button)
        save_row.addWidget(self.save_chart_button)
        left = QWidget()
        left.setObjectName("runOptions")
        left.setFixedWidth(OPTIONS_WIDTH)
        col = QVBoxLayout(left)
        col.setContentsMargins(0, 0, 0, 0)
        col.addWidget(self.torch_banner)
        col.addLayout(form)
        col.addWidget(self.problem)
        col.addLayout(run_row)
        col.addWidget(self.progress)
        col.addWidget(self.status_area)
        col.addStretch(1)
        col.addLayout(save_row)

        self.right = QSplitter(Qt.Orientation.Vertical)
        self.right.setObjectName("runSplit")
        self.right.addWidget(self.chart)
        self.right.addWidget(self.stats)
        # the Details part of the status area lives here, wide (StatusArea toggles it)
        self.details.setMaximumHeight(16777215)
        self.details.setMinimumHeight(80)
        self.right.addWidget(self.details)
        self.right.setStretchFactor(0, 3)
        self.right.setStretchFactor(1, 1)
        self.right.setStretchFactor(2, 1)
        self.right.setChildrenCollapsible(False)
        self.chart.setMinimumHeight(180)
        self.stats.setMinimumHeight(90)
        self.chart.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        body = QHBoxLayout()
        body.addWidget(left)
        body.addWidget(self.right, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(body, 1)

        self.archive_box.activated.connect(self._archive_picked)
        self.details_button.toggled.connect(self._details_toggled)
        self.run_button.clicked.connect(self.start_run)
        self.stop_button.clicked.connect(self.stop)
        self.clear_button.clicked.connect(self.clear)
        self.save_results_button.clicked.connect(self._save_results_dialog)
        self.save_chart_button.clicked.connect(self._save_chart_dialog)

    @staticmethod
    def _spin(lo: int, hi: int, value: int, tip: str) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(lo, hi)
        spin.setValue(value)
        spin.setToolTip(tip)
        return spin

    @staticmethod
    def _pair(a: QWidget, b: QWidget) -> QWidget:
        w = QWidget()
        row = QHBoxLayout(w)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(a, 1)
        row.addWidget(b)
        return w

    # -- archive and devices --
    def set_archive(self, path: str | None) -> None:
        path = str(path) if path else None
        changed = path != self.archive
        self.archive = path
        self._fill_archives()
        if changed and not self.runner.is_running():
            # what was said about the previous archive (a failure, its traceback) is stale
            self._clear_message()
            self.progress.setTextVisible(True)
            self.progress.setValue(0)
            self.progress.setFormat("idle")
        if changed:
            self.ranges = None
            self._apply_ranges()
            if path:
                self._read_ranges(path)
        self._update_enabled()

    def _follow_current(self) -> None:
        path = self.workspace.current_path()
        if path:
            self.set_archive(path)
        else:
            self._fill_archives()

    def _document_closed(self, doc) -> None:
        if self.archive and doc.is_file(self.archive):
            self.set_archive(self.workspace.current_path())  # None: nothing to run
        else:
            self._fill_archives()

    def _fill_archives(self) -> None:
        """The open documents (and a standalone archive), the one to run selected."""
        paths = [str(d.path) for d in self.workspace.documents]
        if self.archive and self.archive not in paths:
            paths.append(self.archive)
        box = self.archive_box
        box.blockSignals(True)
        box.clear()
        for p in paths:
            box.addItem(Path(p).name, p)
            box.setItemData(box.count() - 1, plain_tip(p), Qt.ToolTipRole)
        box.setCurrentIndex(paths.index(self.archive) if self.archive in paths else -1)
        box.blockSignals(False)

    def _archive_picked(self, index: int) -> None:
        path = self.archive_box.itemData(index)
        doc = self.workspace.find(path) if path else None
        if doc is not None:
            self.workspace.set_current(doc)  # the window shows its tab: one current archive
        self.set_archive(path)

    # -- the archive's ranges --
    def _read_ranges(self, path: str) -> None:
        from inspector.core.run_ranges import generator_ranges

        doc = self.workspace.find(path)
        done = lambda ranges, p=path: self._ranges_read(p, ranges)  # noqa: E731
        failed = lambda _msg, _det: None  # noqa: E731  (the run job says why, if run)
        if doc is not None:  # its archive is open already: programs parsed once
            doc.tasks.start(generator_ranges, doc.archive, on_done=done, on_fail=failed,
                            key="run-ranges")
        else:
            self.tasks.start(read_ranges, path, on_done=done, on_fail=failed, key="run-ranges")

    def _ranges_read(self, path: str, ranges: GeneratorRanges) -> None:
        if path != self.archive:
            return  # another archive was chosen meanwhile
        self.ranges = ranges
        self._apply_ranges()
        self._update_enabled()

    def _chose(self, key: str, value: int) -> None:
        if not self._applying:
            self._chosen[key] = value

    def _apply_ranges(self) -> None:
        """Batch and Max tokens: the archive's ranges, its defaults where the user
        chose nothing, the user's choice (remembered or typed) clamped into them."""
        batch, tokens = run_boxes(self.ranges, BATCH_BOX_MAX, SEQ_LEN_LIMIT)
        self._applying = True
        try:
            for key, spin, box in (("batch", self.batch, batch),
                                   ("max_tokens", self.max_tokens, tokens)):
                spin.setRange(box.low, box.high)
                spin.setValue(box.clamp(self._chosen.get(key)))
                spin.setToolTip(box.tip)
        finally:
            self._applying = False
        self._show_problems()

    def problems(self) -> list[str]:
        """Why the archive cannot run with these options, in the window's words."""
        r = self.ranges
        if r is None:
            return []
        out = [f"Batch: {m}" for m in run_problems(GeneratorRanges(r.batch, None),
                                                     self.batch.value())]
        out += [f"This archive cannot be run: {m} (Export panel)"
                for m in run_problems(GeneratorRanges(None, r.seq), None)]
        return out

    def _show_problems(self) -> None:
        found = self.problems()
        self.problem.setText("\n".join(found))
        self.problem.setStyleSheet(f"color: {current_theme().severity['error'].name()};")
        self.problem.setVisible(bool(found))

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if not getattr(self, "_split_set", False):
            QTimer.singleShot(0, self, self._initial_split)  # once laid out

    def _details_toggled(self, on: bool) -> None:
        """The traceback opens under the stats at full width, with room to read it."""
        if on:
            h = max(self.right.height(), 300)
            self.right.setSizes([int(h * 0.5), int(h * 0.18), int(h * 0.32)])

    def _initial_split(self) -> None:
        h = self.right.height()
        if getattr(self, "_split_set", False) or h < 300:
            return
        # the chart is what one watches: most of the height, the table the rest
        self._split_set = True
        self.right.setSizes([int(h * 0.68), int(h * 0.32), int(h * 0.25)])
        # The devices job imports torch (seconds of CPU): only once someone looks.
        if self.devices is not None and self.has_torch:
            self.devices.ensure()

    def _ask_devices(self) -> None:
        if self.devices is not None and self.has_torch:
            self.devices.refresh()

    def _update_enabled(self) -> None:
        running = self.runner.is_running()
        self.torch_banner.setVisible(not self.has_torch)
        self.run_button.setEnabled(self.has_torch and bool(self.archive) and not running
                                   and not self.problems())
        self.stop_button.setEnabled(running)
        for w in (self.archive_box, self.device, self.mode, self.compile, self.precision,
                  self.batch, self.max_tokens, self.warmup, self.repeats, self.threads):
            w.setEnabled(not running and self.has_torch)
        has_data = any(r.series.n for r in self.records)
        self.save_results_button.setEnabled(has_data and not running)
        self.save_chart_button.setEnabled(has_data)
        self.clear_button.setEnabled(bool(self.records) and not running)

    def _restore(self) -> None:
        """The last run's options; Batch and Max tokens as choices that the next
        archive's ranges clamp (_apply_ranges)."""
        self.options = SavedOptions(RUN_OPTIONS_KEY)
        for name, widget in (("device", self.device), ("mode", self.mode),
                             ("compile", self.compile), ("precision", self.precision),
                             ("batch", self.batch), ("max_tokens", self.max_tokens),
                             ("warmup", self.warmup), ("repeats", self.repeats),
                             ("threads", self.threads)):
            self.options.bind(name, widget)
        self.options.restore()

    # -- running --
    def spec(self, trust: bool = False) -> RunSpec:
        return RunSpec(file=self.archive or "", device=self.device.currentData() or "cpu",
                       mode=self.mode.currentData(), compile=self.compile.isChecked(),
                       precision=self.precision.currentData(), batch=self.batch.value(),
                       max_tokens=self.max_tokens.value(), warmup=self.warmup.value(),
                       repeats=self.repeats.value(), threads=self.threads.value(),
                       trust=trust)

    def start_run(self, trust: bool = False) -> bool:
        if not self.has_torch or not self.archive or self.runner.is_running():
            return False  # (running: the Run button is disabled too)
        try:
            spec = self.spec(trust=bool(trust)).validate()
        except RunSpecError as exc:
            self._show_error(str(exc), "")
            return False
        problems = self.problems()
        if problems:
            self._show_problems()
            return False
        self._clear_message()
        self.options.save()
        label = run_label(spec)
        same = sum(1 for r in self.records if r.label.split("  #")[0] == label)
        if same:
            label += f"  #{same + 1}"
        series = self.chart.add_series(label, expected=spec.max_tokens * spec.repeats)
        record = RunRecord(spec, series)
        self.records.append(record)
        self._current = record
        self._add_row(record)
        self.runner.start("run", spec.to_argv())
        self.chrome.starting()
        self._update_enabled()
        return True

    def stop(self) -> None:
        record = self._current
        if self.runner.cancel() and record is not None:
            record.state = "stopped"
            self.status_area.set_status(f"Stopped {record.label} after {record.series.n} tokens.")

    def shutdown(self) -> None:
        self._stop_compiling()
        self.runner.shutdown()
        self.chart.timer.stop()
        self.tasks.cancel()
        self.tasks.wait(5000)

    def clear(self) -> None:
        if self.runner.is_running():
            return
        self.chart.clear()
        self.records.clear()
        self.stats.setRowCount(0)
        self._update_enabled()

    def _on_sample(self, event: dict[str, Any]) -> None:
        record = self._current
        ms = event.get("ms")
        if record is None or not isinstance(ms, (int, float)):
            return
        record.series.append(float(ms))
        record.repeats.append(int(event.get("repeat", 0)))
        record.steps.append(int(event.get("step", record.series.n - 1)))

    def _on_progress(self, stage: str, _fraction: float) -> None:
        """The first call of a compiled run (the first warm-up, or the first timed run
        with no warm-up) compiles: say so on the bar, elapsed time counting."""
        self._stop_compiling()
        record = self._current
        if record is None or not record.spec.compile:
            return
        first = "warm-up 1/" if record.spec.warmup else "run 1/"
        if stage.startswith(first):
            self._compiling = (stage, time.monotonic())
            self._show_compiling()
            self._compile_timer.start()

    def _show_compiling(self) -> None:
        if self._compiling is None:
            return
        stage, since = self._compiling
        self.progress.setFormat(f"{stage}: {COMPILING} {int(time.monotonic() - since)} s")

    def _stop_compiling(self) -> None:
        self._compiling = None
        self._compile_timer.stop()

    def compiling_text(self) -> str:
        """What the bar says while a compiled run compiles ("" otherwise)."""
        return self.progress.format() if self._compiling is not None else ""

    def _on_log(self, level: str, message: str) -> None:
        if level == "note":
            self.status_area.set_status(message)
        elif level != "info":
            self.status_area.set_status(f"{level}: {message}")

    def _on_result(self, event: dict[str, Any]) -> None:
        record = self._current
        if record is None:
            return
        record.result = {k: v for k, v in event.items() if k != "event"}
        record.state = "done"
        self.chart.redraw(force_hist=True)
        self._fill_row(self.records.index(record), record)
        tps = record.result.get("tokens_per_s")
        self.chrome.done()
        self.status_area.set_status(
            f"{record.label}: {record.result.get('tokens', '?')} tokens, "
            f"p50 {_num(record.result.get('p50_ms'))} ms, {_num(tps)} tokens/s "
            f"on {record.result.get('device_name') or record.spec.device}."
            + "".join(f"\nWarning: {w}" for w in record.result.get("warnings") or []))
        self.runFinished.emit(record)

    def _on_error(self, message: str, details: str) -> None:
        record = self._current
        if record is not None:
            record.state = "failed"
            if not record.series.n:  # nothing to compare: do not leave an empty legend entry
                self._drop(record)
        if self.chrome.offer_trust(message, record is None or record.spec.trust,
                                   self.confirm_trust, lambda: self.start_run(trust=True)):
            self._current = None
            return
        self._show_error(message, details)

    def confirm_trust(self, message: str) -> bool:
        return confirm_trust(self, message)

    def _on_finished(self) -> None:
        record, self._current = self._current, None
        if record is not None and record.state == "running":
            record.state = "stopped"
        if self.progress.isTextVisible() and not self.progress.format().startswith("done"):
            self.progress.setFormat("idle" if record is None else record.state)
        if record is not None and record in self.records:
            self._fill_row(self.records.index(record), record)
        if not self.runner.is_running():
            self.chart.stop()
        self._update_enabled()
        self.chrome.finished()

    def _drop(self, record: RunRecord) -> None:
        if record in self.records:
            row = self.records.index(record)
            self.records.remove(record)
            self.stats.removeRow(row)
        self.chart.remove_series(record.series)

    # -- stats table --
    def _add_row(self, record: RunRecord) -> None:
        row = self.stats.rowCount()
        self.stats.insertRow(row)
        self._fill_row(row, record)

    def _fill_row(self, row: int, record: RunRecord) -> None:
        r = record.result
        if r:
            values = [r.get("p50_ms"), r.get("p90_ms"), r.get("p99_ms"), r.get("tokens_per_s"),
                      r.get("total_ms"), r.get("encoder_ms"), r.get("tokens")]
        else:  # live estimates from the samples so far
            p50, p90, p99 = record.series.percentiles()
            values = [p50, p90, p99, None, None, None, record.series.n or None]
        label = record.label + ("" if record.state in ("done", "running")
                                else f"  ({record.state})")
        cells = [label] + [_num(v) for v in values]
        for col, text in enumerate(cells):
            item = self.stats.item(row, col)
            if item is None:
                item = QTableWidgetItem()
                self.stats.setItem(row, col, item)
            item.setText(text)
            if col == 0:
                item.setForeground(_qcolor(record.series.color))
            else:
                item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)

    def _refresh_live_row(self) -> None:
        # Percentiles and a table repaint: a few times a second is plenty to read.
        if self.chart.frames % LIVE_ROW_EVERY:
            return
        record = self._current
        if record is not None and record in self.records:
            self._fill_row(self.records.index(record), record)

    def stats_rows(self) -> list[list[str]]:
        return [[self.stats.item(r, c).text() for c in range(self.stats.columnCount())]
                for r in range(self.stats.rowCount())]

    # -- saving --
    def save_results(self, path: str | Path) -> Path:
        """Written as every command writes (core/atomic.py): never onto a link, a
        FIFO (opening one would freeze the window) or a device, nothing half-written."""
        path = Path(path)
        records = self.records
        data = results_csv(records) if path.suffix.lower() == ".csv" else results_json(records)
        return write_bytes(path, data)

    def save_chart(self, path: str | Path) -> Path:
        return write_bytes(path, self.chart.png_bytes())

    def _save_results_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save results", "latency.csv",
                                              "CSV (*.csv);;JSON (*.json)")
        if path:
            self._saved(self.save_results, path)

    def _save_chart_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save chart", "latency.png", "PNG (*.png)")
        if path:
            self._saved(self.save_chart, path if path.lower().endswith(".png") else path + ".png")

    def _saved(self, fn, path: str) -> None:
        try:
            fn(path)
        except OutputPathError as exc:
            self._show_error(f"cannot save {path} ({exc})", "")
        except OSError as exc:
            self._show_error(f"cannot save {path} ({exc.strerror or exc})", "")
        else:
            self.status_area.set_status(f"Saved {path}.")

    # -- messages --
    def _show_error(self, message: str, details: str) -> None:
        # The bar empties and says nothing: the failure is the red line under it
        # (text drawn over a half-filled bar is hard to read).
        self.progress.setValue(0)
        self.progress.setTextVisible(False)
        self.status_area.set_status(f"Run failed: {window_terms(message)}", error=True)
        self.status_area.details.setPlainText(details or message)
        self.details_button.setVisible(bool(details))

    def _clear_message(self) -> None:
        self.status_area.clear()


def _num(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"
    return str(v)


def _qcolor(color: str):
    from PySide6.QtGui import QBrush, QColor

    return QBrush(QColor(color))
