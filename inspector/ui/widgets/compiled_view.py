"""The compiled models of an AOTInductor package: what each was built for, its
files (the `.so` flagged: native code pt2-inspector never loads), its kernels
with the FX nodes and ATen ops the wrapper's comments name, and the wrapper and
kernel C++ (highlighted, read only, never compiled).

Everything is read off the GUI thread on the document's tasks (closing the tab
cancels it): describe_package at first, then each source on demand, its text
first and its colours after. A click on a kernel's source node asks for that
node in the listing (nodeRequested) when the package holds the program too.
Text from the package is plain text everywhere.
"""

from __future__ import annotations

import posixpath
from html import escape

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.aoti import (
    AOTI_PREFIX,
    Kernel,
    PackageModel,
    describe_file,
    describe_package,
    kernel_lines,
    read_source,
)
from inspector.core.source_spans import MAX_HIGHLIGHT_CHARS, lexer_for, line_spans
from inspector.ui.widgets.code_view import CodeView, build_document
from inspector.ui.widgets.theme import Theme, current_theme
from inspector.ui.workspace import Document

# Characters put in the code view: setPlainText lays out on the GUI thread
# (~0.3 s per 8 MB here); a bigger generated file shows its head, said so.
MAX_SHOWN_CHARS = 8 * 1024 * 1024
_ROLE = Qt.ItemDataRole.UserRole


def plain_tip(text: str) -> str:
    """A tooltip that is never read as markup (QToolTip guesses otherwise)."""
    return "<p style='white-space:pre'>" + escape(text) + "</p>"


def _plain_label(text: str = "", parent: QWidget | None = None) -> QLabel:
    label = QLabel(text, parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _size(n: int) -> str:
    for unit, step in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= step:
            return f"{n / step:.1f} {unit}"
    return f"{n} B"


def short_file(rel: str) -> str:
    """A record's file name with inductor's 52-letter hash cut short:
    `cycwvok7….wrapper.cpp`."""
    base = posixpath.basename(rel)
    stem, dot, rest = base.partition(".")
    return f"{stem[:8]}…{dot}{rest}" if len(stem) > 16 else base


def describe_file_kind(rel: str) -> str:
    if rel.endswith(".wrapper.cpp"):
        return "wrapper C++"
    if rel.endswith(".kernel.cpp"):
        return "kernel C++"
    return "source"


def _load_source(archive, rel: str, font) -> tuple[str, int, object]:
    """(text shown, full length, its document): the head of a huge file, never
    all of it; the document is filled here, off the GUI thread."""
    text = read_source(archive, rel)
    shown = text[:MAX_SHOWN_CHARS]
    return shown, len(text), build_document(shown, font)


def _rebuild(got: tuple[str, int], font) -> tuple[str, int, object]:
    return got[0], got[1], build_document(got[0], font)


def _spans(ctx, rel: str, text: str):
    return line_spans(text, lexer_for(rel), MAX_HIGHLIGHT_CHARS, cancelled=ctx.cancelled)


class CompiledModelView(QWidget):
    nodeRequested = Signal(str, str)  # program, node (its name in the file)
    described = Signal()  # the models are shown (or could not be read)
    sourceShown = Signal(str)  # record path; its colours follow (sourceColoured)
    sourceColoured = Signal(str)

    def __init__(self, doc: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("compiledModelView")
        self.doc = doc
        self.theme: Theme = current_theme()
        self.models: list[PackageModel] = []
        self.model: PackageModel | None = None
        self.source_path = ""
        self.error = ""
        self._texts: dict[str, tuple[str, int]] = {}
        self._reading = False  # source_path is being read / its document built
        self._want_line = -1
        self._spans: dict[str, dict] = {}

        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.setSpacing(6)
        head = QHBoxLayout()
        self.title = _plain_label("Compiled model:", self)
        self.picker = QComboBox(self)
        self.picker.setObjectName("compiledModelPicker")
        self.picker.setToolTip("Compiled model of this package (data/aotinductor/<model>/)")
        self.picker.currentIndexChanged.connect(self.show_model)
        # the header's second half: reading / the error / where the program is
        self.target = _plain_label("Reading the compiled models…", self)
        self.target.setObjectName("compiledTarget")
        self.target.setWordWrap(True)
        head.addWidget(self.title)
        head.addWidget(self.picker)
        head.addSpacing(10)
        head.addWidget(self.target, 1)
        lay.addLayout(head)

        # what it was built for, compact: the code view gets the height
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(2)
        self.fields: dict[str, QLabel] = {"program": self.target}
        self._field_labels: dict[str, QLabel] = {}
        places = (("device", "Device", 0, 0, 1), ("platform", "Platform", 0, 2, 1),
                  ("machine", "Machine", 0, 4, 1), ("compute_capability", "Compute capability", 0, 6, 1),
                  ("cpu_isa", "CPU ISA", 1, 0, 7), ("problems", "Problems", 2, 0, 7))
        for key, label, row, col, span in places:
            name = QLabel(label + ":", self)
            value = _plain_label("", self)
            value.setObjectName(f"compiled_{key}")
            value.setWordWrap(span > 1)
            self.fields[key] = value
            self._field_labels[key] = name
            grid.addWidget(name, row, col)
            grid.addWidget(value, row, col + 1, 1, span)
        for col in (1, 3, 5, 7):
            grid.setColumnStretch(col, 1)
        lay.addLayout(grid)

        self.split = QSplitter(Qt.Orientation.Vertical, self)
        self.split.setObjectName("compiledSplit")
        self.lists = QTabWidget(self.split)
        self.lists.setObjectName("compiledLists")
        self.kernels = QTreeWidget(self.lists)
        self.kernels.setObjectName("kernelTree")
        self.kernels.setHeaderLabels(["Kernel", "FX source nodes", "Original ATen", "Where"])
        self.kernels.setUniformRowHeights(True)
        self.kernels.setAlternatingRowColors(True)
        self.kernels.itemClicked.connect(self._kernel_clicked)
        self.kernels.itemActivated.connect(self._kernel_clicked)
        self.files = QTreeWidget(self.lists)
        self.files.setObjectName("fileTree")
        self.files.setHeaderLabels(["File", "Size", "What"])
        self.files.setRootIsDecorated(False)
        self.files.setUniformRowHeights(True)
        self.files.itemClicked.connect(self._file_clicked)
        self.files.itemActivated.connect(self._file_clicked)
        self.lists.addTab(self.kernels, "Kernels")
        self.lists.addTab(self.files, "Files")

        code = QWidget(self.split)
        code_lay = QVBoxLayout(code)
        code_lay.setContentsMargins(0, 0, 0, 0)
        code_lay.setSpacing(2)
        row = QHBoxLayout()
        self.sources = QComboBox(code)
        self.sources.setObjectName("sourcePicker")
        self.sources.setToolTip("C++ of the compiled model: shown read only, never compiled")
        self.sources.currentIndexChanged.connect(self._source_picked)
        self.source_note = _plain_label("", code)
        self.source_note.setObjectName("sourceNote")
        row.addWidget(self.sources, 1)
        row.addWidget(self.source_note)
        code_lay.addLayout(row)
        self.code = CodeView(code)
        code_lay.addWidget(self.code, 1)
        self.split.addWidget(self.lists)
        self.split.addWidget(code)
        self.split.setStretchFactor(0, 2)
        self.split.setStretchFactor(1, 3)
        self.split.setChildrenCollapsible(False)
        lay.addWidget(self.split, 1)

        doc.tasks.start(describe_package, doc.archive, key="aoti:describe",
                        on_done=self._described, on_fail=self._failed)

    # -- models --
    def is_coloured(self, rel: str) -> bool:
        """Whether the source `rel`'s colours were computed (in the background)."""
        return rel in self._spans

    def _described(self, models: list[PackageModel]) -> None:
        self.models = models
        self.picker.blockSignals(True)
        self.picker.clear()
        self.picker.addItems([m.model.name for m in models])
        self.picker.blockSignals(False)
        self.title.setText("Compiled models:" if len(models) > 1 else "Compiled model:")
        if models:
            self.show_model(0)
        else:
            self.target.setText("No compiled model in this package.")
        self.described.emit()

    def _failed(self, message: str, _details: str) -> None:
        self.error = message
        self.target.setText(f"Could not read the compiled models: {message}")
        self.described.emit()

    def show_model(self, index: int) -> None:
        if not 0 <= index < len(self.models):
            return
        pm = self.models[index]
        self.model = pm
        m = pm.model
        if self.picker.currentIndex() != index:
            self.picker.setCurrentIndex(index)
        none = "—"
        for key in ("device", "platform", "machine", "cpu_isa"):
            self.fields[key].setText(getattr(m, key) or none)
        self.fields["compute_capability"].setText(
            m.compute_capability or ("none (a CPU build)" if m.device == "cpu" else none))
        if pm.program is not None:
            self.fields["program"].setText(
                f"program {pm.program} is in the package: click a source node to see it"
                " in the listing")
        else:
            self.fields["program"].setText("no program in the package (compiled code only)")
        self.fields["problems"].setText("; ".join(m.problems))
        self.fields["problems"].setVisible(bool(m.problems))
        self._field_labels["problems"].setVisible(bool(m.problems))
        self._fill_kernels(pm)
        self._fill_files(pm)
        self.sources.blockSignals(True)
        self.sources.clear()
        for rel in m.sources:
            self.sources.addItem(f"{describe_file_kind(rel)}: {short_file(rel)}", rel)
        self.sources.blockSignals(False)
        if m.sources:
            self.open_source(m.sources[0])
        else:
            self.code.set_text("")
            self.source_note.setText("no source in the package")

    def _short(self, rel: str) -> str:
        prefix = AOTI_PREFIX + (self.model.model.name + "/" if self.model else "")
        return rel[len(prefix):] if rel.startswith(prefix) else rel

    def _listing(self, pm: PackageModel):
        view = self.doc.view(pm.program) if pm.program else None
        return view.listing if view is not None and not view.streaming else None

    def _fill_kernels(self, pm: PackageModel) -> None:
        tree = self.kernels
        tree.clear()
        listing = self._listing(pm)
        items = []
        for i, k in enumerate(pm.kernels):
            item = QTreeWidgetItem([k.name, ", ".join(k.source_nodes) or "—",
                                    ", ".join(k.aten_ops) or "—",
                                    f"{short_file(k.source)}:{k.line}"])
            item.setData(0, _ROLE, ("kernel", i))
            item.setToolTip(0, plain_tip(f"{k.name}\n{self._short(k.source)} line {k.line}"))
            lines = kernel_lines(k, listing) if listing is not None else {}
            for node in k.source_nodes:
                if pm.program is None:
                    where = "program not in the package"
                elif listing is None:
                    where = "in the listing (click to open)"
                elif node in lines:
                    where = f"listing line {lines[node] + 1}"
                else:
                    where = "not in the listing"
                child = QTreeWidgetItem([node, where])
                # the statement itself: in the tooltip (the column stays narrow)
                child.setToolTip(1, plain_tip(
                    f"{where}: {listing.lines[lines[node]].strip()}" if node in lines else where))
                child.setData(0, _ROLE, ("node", node))
                if pm.program is not None:
                    child.setForeground(0, self.theme.link)
                    child.setToolTip(0, plain_tip(f"show {node} in the listing of {pm.program}"))
                else:
                    child.setToolTip(0, plain_tip(f"FX node {node} (its program is not in the package)"))
                item.addChild(child)
            items.append(item)
        tree.addTopLevelItems(items)
        self.lists.setTabText(0, f"Kernels ({len(pm.kernels)})")
        header = tree.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for col in range(4):
            tree.resizeColumnToContents(col)
        tree.setColumnWidth(0, min(tree.columnWidth(0), 300))

    def _fill_files(self, pm: PackageModel) -> None:
        tree = self.files
        tree.clear()
        danger = self.theme.severity["error"]
        # native code first: the one file that matters for safety stays in sight
        for rec in sorted(pm.model.files, key=lambda r: not r.risk):
            what = describe_file(rec)
            item = QTreeWidgetItem([("! " if rec.risk else "") + short_file(rec.path),
                                    _size(rec.size), what])
            item.setData(0, _ROLE, rec.path)
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if rec.risk:
                for col in range(3):
                    item.setForeground(col, danger)
                item.setToolTip(0, plain_tip(
                    f"{rec.path}\nnative code: torch dlopens it when it loads the package;"
                    " pt2-inspector never loads it" + (f"\n{rec.why}" if rec.why else "")))
            else:
                item.setToolTip(0, plain_tip(rec.path))
            tree.addTopLevelItem(item)
        self.lists.setTabText(1, f"Files ({len(pm.model.files)})")
        for col in range(3):
            tree.resizeColumnToContents(col)

    # -- clicks --
    def _kernel_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        data = item.data(0, _ROLE)
        pm = self.model
        if not data or pm is None:
            return
        if data[0] == "node":
            kernel = pm.kernels[item.parent().data(0, _ROLE)[1]]
            self.show_kernel(kernel)
            if pm.program is not None:
                listing = self._listing(pm)
                node = listing.value_name("", data[1]) if listing is not None else data[1]
                self.nodeRequested.emit(pm.program, node)
        else:
            self.show_kernel(pm.kernels[data[1]])

    def show_kernel(self, kernel: Kernel) -> None:
        self.open_source(kernel.source, kernel.line - 1)

    def _file_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        rel = item.data(0, _ROLE)
        if self.model is not None and rel in self.model.model.sources:
            self.open_source(rel)

    def _source_picked(self, index: int) -> None:
        rel = self.sources.itemData(index)
        if rel:
            self.open_source(rel)

    # -- sources --
    def open_source(self, rel: str, line: int = -1) -> None:
        """Show source record `rel` (read off the GUI thread), at `line` (0-based)."""
        i = self.sources.findData(rel)
        if i >= 0 and i != self.sources.currentIndex():
            self.sources.blockSignals(True)
            self.sources.setCurrentIndex(i)
            self.sources.blockSignals(False)
        if rel == self.source_path and (self._reading or rel in self._texts):
            if self._reading:  # shown once read
                self._want_line = line if line >= 0 else self._want_line
            elif line >= 0:
                self.code.show_line(line)
            return
        self.source_path = rel
        self._reading, self._want_line = True, line
        got = self._texts.get(rel)
        # read (or shown before: rebuilt from the kept text) off the GUI thread
        font = QFont(self.code.font())
        fn, args = ((_rebuild, (got, font)) if got is not None
                    else (_load_source, (self.doc.archive, rel, font)))
        self.code.set_text("")
        self.source_note.setText("reading…")
        self.doc.tasks.start(fn, *args, key="aoti:source",
                             on_done=lambda got, r=rel, ln=line: self._loaded(r, got, ln),
                             on_fail=lambda msg, _det, r=rel: self._source_failed(r, msg))

    def _loaded(self, rel: str, got: tuple[str, int, object], line: int) -> None:
        text, total, doc = got
        self._texts[rel] = (text, total)
        if rel == self.source_path:
            self._reading = False
            self._show_text(rel, (text, total), self._want_line, doc)
        else:
            doc.deleteLater()

    def _source_failed(self, rel: str, message: str) -> None:
        if rel == self.source_path:
            self._reading = False
            self.code.set_text("")
            self.source_note.setText(f"cannot show it: {message}")

    def _show_text(self, rel: str, got: tuple[str, int], line: int, doc) -> None:
        text, total = got
        self.code.set_document(doc)
        if line >= 0:
            self.code.show_line(line)
        note = "read only · never compiled"
        if total > len(text):
            note = f"first {_size(len(text))} of {_size(total)} shown · " + note
        spans = self._spans.get(rel)
        if spans is not None:
            self.code.set_spans(spans)
        else:
            note = "colouring… · " + note
            self.doc.tasks.start(_spans, rel, text, key="aoti:spans", context=True,
                                 on_done=lambda s, r=rel: self._coloured(r, s))
        self.source_note.setText(note)
        self.sourceShown.emit(rel)
        if spans is not None:
            self.sourceColoured.emit(rel)

    def _coloured(self, rel: str, spans: dict) -> None:
        self._spans[rel] = spans
        if rel == self.source_path:
            self.code.set_spans(spans)
            self.source_note.setText(self.source_note.text().removeprefix("colouring… · "))
            self.sourceColoured.emit(rel)

    # -- look --
    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.code.set_theme(theme)
        if self.model is not None:
            self._fill_kernels(self.model)
            self._fill_files(self.model)

    def shutdown(self) -> None:
        """(Tab protocol) its reads run on the document's tasks, which closing the
        document cancels: nothing of its own to stop."""

    def summary(self) -> str:
        """One line for the status bar."""
        if self.error:
            return f"compiled models unreadable: {self.error}"
        if not self.models:
            return "reading compiled models…"
        n = len(self.models)
        k = sum(len(m.kernels) for m in self.models)
        return (f"{n} compiled model{'s' if n != 1 else ''} (AOTInductor), {k} kernel"
                f"{'s' if k != 1 else ''}: " + "; ".join(f"{m.model.name} built for {m.model.target}"
                                                         for m in self.models))
