"""The Dim editor: re-export the toy model with chosen dynamic-shape ranges.

Everything the user sets is an `ExportSpec` (inspector/jobs/spec.py, no torch), checked
as they type: a bad range is marked on its row and Export stays disabled, so torch never
starts on a spec that cannot work. Export runs the export job in a child process
(JobRunner): progress bar, Cancel (the child's partial folder is removed), torch's own
error text one click away. On success the new archive opens in a tab and the range
constraints of the archive that was open before and the new one are compared.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from PySide6.QtCore import QStandardPaths, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from superqt import QLabeledRangeSlider

from inspector.core.errors import InspectorError
from inspector.core.range_compare import compare_files
from inspector.ui.device_list import DeviceSource, fill_combo
from inspector.ui.job_runner import (
    BATCH_LIMIT,
    PRESETS,
    SEQ_LEN_LIMIT,
    ExportSpec,
    ExportSpecError,
    JobRunner,
    check_export_output,
    cleanup_partial,
)
from inspector.ui.panels.saved_options import SavedOptions
from inspector.ui.tasks import TaskGroup
from inspector.ui.widgets.range_table import RangeCompareTable
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.widgets.theme import current_theme
from inspector.ui.workspace import Workspace

# Last options (QSettings, inspector/ui/panels/saved_options.py): {"spec":
# ExportSpec.to_json(), "output": the path last written}.
EXPORT_OPTIONS_KEY = "export/last_options"


def _error_color() -> str:
    return current_theme().severity["error"].name()


def _invalid_style() -> str:
    c = current_theme().severity["error"]
    return (f"QSpinBox {{ border: 1px solid {c.name()}; "
            f"background: rgba({c.red()}, {c.green()}, {c.blue()}, 0.12); }}")
PRESET_NOTES = {
    "tiny": "hidden 64, 2 layers: exports in seconds",
    "seed": "the blog's ViT-base + GPT-2 (201M parameters): about 15 s and 2 GB of memory",
}


class DimEditor(QWidget):
    """One dynamic dimension: a range slider plus min / max / example spin boxes.

    The spin boxes accept out-of-range numbers on purpose: a typed 300 stays 300 and is
    marked, rather than being clamped silently to something the user did not ask for."""

    changed = Signal()

    def __init__(self, name: str, slider_max: int, spin_max: int, parent=None) -> None:
        super().__init__(parent)
        self.name = name
        self.slider = QLabeledRangeSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, slider_max)
        self.slider.setHandleLabelPosition(QLabeledRangeSlider.LabelPosition.NoLabel)
        self.slider.setEdgeLabelMode(QLabeledRangeSlider.EdgeLabelMode.LabelIsRange)
        self.slider.setToolTip(f"{name} range the exported program accepts")
        self.min_spin = self._spin(spin_max, f"smallest {name} the program accepts")
        self.max_spin = self._spin(spin_max, f"largest {name} the program accepts")
        self.example_spin = self._spin(spin_max, f"{name} of the example input export traces "
                                       "with (0 and 1 get specialized: use 2 or more)")
        # The slider, then the three boxes under their names: the panel lives in a
        # narrow dock (it reflows down to about 300 px), and the slider needs the width.
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.slider)
        row = QGridLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setVerticalSpacing(0)
        for col, (label, spin) in enumerate((("min", self.min_spin), ("max", self.max_spin),
                                             ("example", self.example_spin))):
            text = QLabel(label)
            text.setBuddy(spin)
            text.setStyleSheet("color: palette(placeholder-text);")
            row.addWidget(text, 0, col)
            row.addWidget(spin, 1, col)
            row.setColumnStretch(col, 1)
        box.addLayout(row)
        self.slider.valueChanged.connect(self._from_slider)
        for spin in (self.min_spin, self.max_spin, self.example_spin):
            spin.valueChanged.connect(self._from_spins)

    def _spin(self, spin_max: int, tip: str) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(-999, spin_max)
        spin.setToolTip(tip)
        spin.setKeyboardTracking(True)
        spin.setMinimumWidth(56)
        spin.setMaximumWidth(120)
        return spin

    def values(self) -> tuple[int, int, int]:
        return self.min_spin.value(), self.max_spin.value(), self.example_spin.value()

    def set_values(self, lo: int, hi: int, example: int) -> None:
        for spin, v in ((self.min_spin, lo), (self.max_spin, hi), (self.example_spin, example)):
            spin.blockSignals(True)
            spin.setValue(v)
            spin.blockSignals(False)
        self._sync_slider()
        self.changed.emit()

    def set_problem(self, error: ExportSpecError | None) -> None:
        """Mark the spin box the error's field names (the whole range when it names
        no one box of this row)."""
        message = str(error) if error is not None else None
        bad = set()
        if error is not None:
            part = (error.field or "").rpartition(".")[2]
            bad = ({"min": {self.min_spin}, "max": {self.max_spin},
                    "example": {self.example_spin}}.get(part)
                   or {self.min_spin, self.max_spin})
        for spin in (self.min_spin, self.max_spin, self.example_spin):
            spin.setStyleSheet(_invalid_style() if spin in bad else "")
            spin.setProperty("invalid", spin in bad)
        self.setToolTip(message or "")

    def _from_slider(self, value: tuple[float, float]) -> None:
        lo, hi = (int(round(v)) for v in value)
        for spin, v in ((self.min_spin, lo), (self.max_spin, hi)):
            spin.blockSignals(True)
            spin.setValue(v)
            spin.blockSignals(False)
        self.changed.emit()

    def _from_spins(self) -> None:
        self._sync_slider()
        self.changed.emit()

    def _sync_slider(self) -> None:
        lo, hi, _ = self.values()
        top = self.slider.maximum()
        self.slider.blockSignals(True)
        self.slider.setValue((max(0, min(lo, top)), max(0, min(hi, top))))
        self.slider.blockSignals(False)


class ExportPanel(QWidget):
    """Dim editor + export job. The new archive opens in the Workspace (a tab in the
    window) and `archiveExported` is emitted."""

    archiveExported = Signal(str, object)  # path, the job's result event
    exportFailed = Signal(str, str)  # message, details
    compared = Signal()  # the before/after range table is shown

    def __init__(self, workspace: Workspace | None = None, devices: DeviceSource | None = None,
                 parent=None) -> None:
        super().__init__(parent)
        self.workspace = workspace if workspace is not None else Workspace(self)
        self.runner = JobRunner(self)
        self.tasks = TaskGroup(self.workspace.pool, self)  # reads the range tables
        self._before: str | None = None  # archive open when the export started
        # Compared with the new archive when no document is open (standalone use).
        self.base_archive: str | None = None
        self._output: str | None = None
        self._build()
        self.devices = devices
        if devices is not None:
            fill_combo(self.device, devices.devices)
            devices.changed.connect(lambda devs: fill_combo(self.device, devs))
        self.runner.progress.connect(self._on_progress)
        self.runner.result.connect(self._on_result)
        self.runner.error.connect(self._on_error)
        self.runner.finished.connect(self._on_finished)
        self.set_spec(ExportSpec())
        self.output.setText(str(default_output_dir() / "toy-tiny.pt2"))
        self._restore()
        self.validate()

    # -- layout --
    def _build(self) -> None:
        self.preset = QComboBox()
        for name in PRESETS:
            self.preset.addItem(name, name)
            self.preset.setItemData(self.preset.count() - 1, PRESET_NOTES.get(name, ""),
                                    Qt.ToolTipRole)
        self.preset_note = QLabel()
        self.preset_note.setWordWrap(True)
        self.preset_note.setStyleSheet("color: palette(placeholder-text);")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip("seed of the random weights")
        self.seed.setMaximumWidth(110)
        self.batch = DimEditor("batch", 256, BATCH_LIMIT * 2)
        self.seq = DimEditor("seq_len", SEQ_LEN_LIMIT, 9999)
        self.device = QComboBox()
        self.device.addItem("cpu", "cpu")
        self.device.setToolTip("export on the device you will run on: exporting on cpu "
                               "bakes device='cpu' into the graph (see the Audit panel)")
        self.cache_position = QCheckBox("cache_position input")
        self.cache_position.setToolTip("feed token positions as a decoder input "
                                       "(the blog's fix for the baked arange)")
        self.strict = QCheckBox("strict")
        self.strict.setToolTip("strict (TorchDynamo) export")
        self.decompose = QCheckBox("decompositions")
        self.decompose.setToolTip("run_decompositions(): core ATen ops only")
        self.output = QLineEdit()
        self.output.setPlaceholderText("where to write the new .pt2")
        browse = QToolButton()
        browse.setText("…")
        browse.setToolTip("choose where to save")
        browse.clicked.connect(self._browse)

        model_row = QVBoxLayout()
        model_row.setSpacing(2)
        model_line = QHBoxLayout()
        model_line.addWidget(self.preset)
        model_line.addWidget(QLabel("seed"))
        model_line.addWidget(self.seed)
        model_line.addStretch(1)
        model_row.addLayout(model_line)
        model_row.addWidget(self.preset_note)
        options = QVBoxLayout()
        options.setContentsMargins(0, 0, 0, 0)
        options.setSpacing(2)
        for box in (self.cache_position, self.strict, self.decompose):
            options.addWidget(box)
        out_row = QHBoxLayout()
        out_row.addWidget(self.output, 1)
        out_row.addWidget(browse)

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        form.addRow("Model", model_row)
        form.addRow("Batch", self.batch)
        form.addRow("Seq len", self.seq)
        form.addRow("Device", self.device)
        form.addRow("Options", options)
        form.addRow("Output", out_row)

        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(f"color: {_error_color()};")
        self.problem.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        # What will go wrong later although the spec is valid (ExportSpec.warnings():
        # an example size torch specializes, ranges the generator cannot run): said,
        # never blocking the export.
        self.warning = QLabel()
        self.warning.setObjectName("exportWarning")
        self.warning.setWordWrap(True)
        self.warning.setTextFormat(Qt.TextFormat.PlainText)
        self.warning.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.warning.setStyleSheet(f"color: {current_theme().severity['warning'].name()};")
        self.warning.hide()

        self.export_button = QPushButton("Export")
        self.export_button.setDefault(True)
        self.export_button.setToolTip("export the toy model with these ranges (Ctrl+Return)")
        self.export_button.setShortcut("Ctrl+Return")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(True)
        self.progress.setFormat("idle")
        self.progress.setValue(0)
        actions = QHBoxLayout()
        actions.addWidget(self.export_button)
        actions.addWidget(self.cancel_button)
        actions.addWidget(self.progress, 1)
        self.progress.setMinimumWidth(80)

        self.status_area = StatusArea(details_height=180)
        self.status = self.status_area.label  # the status line (plain text)
        self.details_button = self.status_area.details_button
        self.details = self.status_area.details

        self.compare_box = QGroupBox("Range constraints: before / after")
        self.compare_table = RangeCompareTable()
        box = QVBoxLayout(self.compare_box)
        box.setContentsMargins(4, 4, 4, 4)
        box.addWidget(self.compare_table)
        self.compare_box.hide()

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(self.warning)
        layout.addLayout(actions)
        layout.addWidget(self.status_area)
        layout.addWidget(self.compare_box, 1)
        layout.addStretch(0)

        for dim in (self.batch, self.seq):
            dim.changed.connect(self.validate)
        self.output.textChanged.connect(self.validate)
        self.device.currentIndexChanged.connect(self.validate)
        self.preset.currentIndexChanged.connect(self._on_preset)
        self.export_button.clicked.connect(self.start_export)
        self.cancel_button.clicked.connect(self.cancel)

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        # The devices job imports torch (seconds of CPU): only once someone looks.
        if self.devices is not None:
            self.devices.ensure()

    # -- the spec --
    def set_spec(self, spec: ExportSpec) -> None:
        self.preset.setCurrentIndex(max(0, self.preset.findData(spec.preset)))
        self.seed.setValue(spec.seed)
        self.batch.set_values(spec.batch_min, spec.batch_max, spec.example_batch)
        self.seq.set_values(spec.seq_min, spec.seq_max, spec.example_seq)
        index = self.device.findData(spec.device)
        if index < 0:
            self.device.addItem(spec.device, spec.device)
            index = self.device.count() - 1
        self.device.setCurrentIndex(index)
        self.cache_position.setChecked(spec.cache_position)
        self.strict.setChecked(spec.strict)
        self.decompose.setChecked(spec.decompose)
        self._on_preset()

    def spec(self) -> ExportSpec:
        b_lo, b_hi, b_ex = self.batch.values()
        s_lo, s_hi, s_ex = self.seq.values()
        return ExportSpec(
            preset=self.preset.currentData(), seed=self.seed.value(),
            batch_min=b_lo, batch_max=b_hi, example_batch=b_ex,
            seq_min=s_lo, seq_max=s_hi, example_seq=s_ex,
            device=self.device.currentData() or "cpu",
            cache_position=self.cache_position.isChecked(),
            strict=self.strict.isChecked(), decompose=self.decompose.isChecked(),
        )

    def problems(self) -> dict[str, str]:
        """{"batch"|"seq_len"|"spec"|"output": message} for what cannot work."""
        return {key: str(exc) for key, exc in self._errors().items()}

    def _errors(self) -> dict[str, InspectorError]:
        """problems(), keeping the errors (a spec error's field marks its spin box)."""
        spec = self.spec()
        default = ExportSpec()
        found: dict[str, InspectorError] = {}
        # The spec's own checks, one dimension at a time (the other left at its
        # default), so each message lands on the row it is about.
        for key, fields in (("batch", ("batch_min", "batch_max", "example_batch")),
                            ("seq_len", ("seq_min", "seq_max", "example_seq"))):
            probe = dataclasses.replace(default, **{f: getattr(spec, f) for f in fields})
            try:
                probe.validate()
            except ExportSpecError as exc:
                found[key] = exc
        if not found:
            try:
                spec.validate()
            except ExportSpecError as exc:
                found["spec"] = exc
        try:
            out = check_output(self.output.text().strip())
        except InspectorError as exc:
            found["output"] = exc
        else:
            current = self.workspace.current_path()
            if current and _same_file(out, current):
                found["output"] = InspectorError(
                    f"{out.name} is the archive open in the current tab: "
                    "choose another file, so both can be compared")
        return found

    def warnings(self) -> list[str]:
        """ExportSpec.warnings() of the spec as set (valid ranges only)."""
        try:
            return self.spec().warnings()
        except (ExportSpecError, TypeError, ValueError):
            return []

    def validate(self) -> bool:
        errors = self._errors()
        found = {key: str(exc) for key, exc in errors.items()}
        batch, seq = errors.get("batch"), errors.get("seq_len")
        self.batch.set_problem(batch if isinstance(batch, ExportSpecError) else None)
        self.seq.set_problem(seq if isinstance(seq, ExportSpecError) else None)
        self.output.setStyleSheet("" if "output" not in found else
                                  f"QLineEdit {{ border: 1px solid {_error_color()}; }}")
        self.problem.setText("\n".join(found.values()))
        self.problem.setVisible(bool(found))
        warnings = self.warnings() if "batch" not in found and "seq_len" not in found else []
        self.warning.setText("\n".join(f"Warning: {w}" for w in warnings))
        self.warning.setVisible(bool(warnings))
        self.export_button.setEnabled(not found and not self.runner.is_running())
        return not found

    # -- running --
    def start_export(self) -> bool:
        if self.runner.is_running() or not self.validate():
            return False
        spec = self.spec()
        output = str(Path(self.output.text().strip()).expanduser().resolve())
        self._output = output
        self._remember(spec, output)
        self._before = self._current_archive()
        self._clear_outcome()
        self.compare_box.hide()
        self.runner.start("export", [*spec.to_argv(), "-o", output],
                          cleanup=lambda pid: cleanup_partial(output, pid))
        self._set_running(True)
        self.progress.setValue(0)
        self.progress.setFormat("starting…")
        return True

    def _restore(self) -> None:
        self.options = SavedOptions(EXPORT_OPTIONS_KEY)
        self.options.field("spec", (dict,), lambda: self.spec().to_json(),
                           lambda doc: self.set_spec(ExportSpec.from_json(doc)))
        self.options.bind("output", self.output, required=True)
        self.options.restore()

    def _remember(self, spec: ExportSpec, output: str) -> None:
        self.options.save(spec=spec.to_json(), output=output)

    def cancel(self) -> None:
        if self.runner.cancel():
            self.status_area.set_status("Export cancelled; nothing was written.")

    def shutdown(self) -> None:
        self.runner.shutdown()
        self.tasks.cancel()
        self.tasks.wait(5000)

    def _on_progress(self, stage: str, fraction: float) -> None:
        self.progress.setValue(int(fraction * 1000))
        self.progress.setFormat(f"{stage}  %p%")

    def _on_result(self, event: dict[str, Any]) -> None:
        paths = event.get("paths") or [self._output]
        path = str(paths[0])
        secs = event.get("seconds")
        size = event.get("bytes")
        parts = [f"Exported {Path(path).name}"]
        if isinstance(size, (int, float)):
            parts.append(f"{size / 1e6:.1f} MB")
        if isinstance(secs, (int, float)):
            parts.append(f"{secs:.1f} s")
        self.status_area.set_status(", ".join(parts) + ".")
        self.progress.setValue(1000)
        self.progress.setFormat("done")
        self._show_comparison(self._before, path)
        # The new archive is about to be the current tab: offer a fresh name for the
        # next export instead of one that would overwrite it.
        self.output.setText(str(next_free(Path(path))))
        self.workspace.open(path)
        self.archiveExported.emit(path, event)

    def _on_error(self, message: str, details: str) -> None:
        self.progress.setFormat("failed")
        head, fix = split_fix(message)
        text = f"Export failed: {head}"
        if fix:
            text += f"\nSuggested fix: {fix}"
        self.status_area.set_status(text, error=True, details=details or message)
        self.exportFailed.emit(message, details)

    def _on_finished(self) -> None:
        self._set_running(False)
        if self.progress.format() not in ("done", "failed"):
            self.progress.setValue(0)
            self.progress.setFormat("cancelled")

    def _set_running(self, running: bool) -> None:
        self.cancel_button.setEnabled(running)
        for w in (self.preset, self.seed, self.batch, self.seq, self.device, self.output,
                  self.cache_position, self.strict, self.decompose):
            w.setEnabled(not running)
        if running:
            self.export_button.setEnabled(False)
        else:
            self.validate()

    def _clear_outcome(self) -> None:
        self.status_area.clear()

    def _show_comparison(self, before: str | None, after: str) -> None:
        # Both programs are parsed to label the symbols: seconds on a big archive, so
        # in a worker; the table appears when it is ready.
        before = before if before and Path(before).exists() else None

        def show(rows: list[tuple[str, str, str, str, bool]]) -> None:
            self.compare_table.show_rows(rows)
            title = (f"Range constraints: {Path(before).name} → {Path(after).name}" if before
                     else f"Range constraints of {Path(after).name}")
            self.compare_box.setTitle(title)
            self.compare_box.show()
            self.compared.emit()

        def failed(message: str, _details: str) -> None:
            self.status_area.append(f" (cannot compare ranges: {message})")

        self.tasks.start(compare_files, before, after, on_done=show, on_fail=failed,
                         key="compare")

    def _current_archive(self) -> str | None:
        path = self.workspace.current_path() or self.base_archive
        return str(path) if path else None

    def _on_preset(self, *_: object) -> None:
        name = self.preset.currentData() or ""
        self.preset_note.setText(PRESET_NOTES.get(name, ""))
        text = self.output.text().strip()
        # Follow the preset in the default file name, but never rename a user's choice.
        for other in PRESETS:
            if text.endswith(f"toy-{other}.pt2") and other != name:
                self.output.setText(text[: -len(f"toy-{other}.pt2")] + f"toy-{name}.pt2")

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export to", self.output.text(),
                                              "PyTorch export archives (*.pt2)")
        if path:
            self.output.setText(path if path.endswith(".pt2") else path + ".pt2")


def check_output(text: str) -> Path:
    if not text:
        raise ExportSpecError("choose an output file (.pt2)")
    return check_export_output(Path(text).expanduser())


def next_free(path: Path) -> Path:
    """toy-tiny.pt2 -> toy-tiny-2.pt2 (or -3, ...): the first name not taken."""
    stem = path.stem
    head, _, tail = stem.rpartition("-")
    base, n = (head, int(tail)) if head and tail.isdigit() else (stem, 1)
    while True:
        n += 1
        candidate = path.with_name(f"{base}-{n}{path.suffix}")
        if not candidate.exists():
            return candidate


def _same_file(a: Path, b: str) -> bool:
    try:
        return a.expanduser().resolve() == Path(b).resolve()
    except OSError:
        return False


def split_fix(message: str) -> tuple[str, str | None]:
    """torch's "...; Suggested fixes: batch = Dim('batch', max=8)" -> (head, fix)."""
    head, sep, fix = message.partition("Suggested fixes:")
    if not sep:
        return message, None
    return head.rstrip(" ;"), fix.strip() or None


def default_output_dir() -> Path:
    docs = QStandardPaths.writableLocation(QStandardPaths.DocumentsLocation)
    path = Path(docs) if docs else Path.home()
    return path if path.is_dir() else Path.home()
