"""The compare view: a central tab showing two archives side by side.

File > Compare with…, a Shift-drop on a tab, and Workspace.compare (the Audit
panel's "Compare listings" after a retarget) open one. The comparison
(inspector.core.diff.diff_files: both archives, every program, their aligned
rows) runs off the GUI thread on the tab's own TaskGroup, with progress and
Cancel; the rows are painted by widgets/diff_view.DiffView (virtualized), and
a summary tree below lists what `pt2-inspector diff --json` counts, from the
same ProgramDiff methods, so the two never disagree. F7 / Shift+F7 step
through the changes and wrap around at either end (the counter says so).
Every text from the files is shown as plain text.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QThreadPool, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from inspector.core.diff import ArchiveDiff, FindingsDiff, ProgramDiff, diff_files
from inspector.core.document import ListedArchive, ProgramView, listed_view
from inspector.core.diff_align import one_sided
from inspector.core.node_match import SAME, qualified_name
from inspector.ui.plain import plain_tip
from inspector.ui.tasks import Task, TaskGroup
from inspector.ui.widgets.diff_view import DiffView
from inspector.ui.widgets.status_area import StatusArea
from inspector.ui.widgets.theme import Theme, current_theme

ROW_ROLE = Qt.ItemDataRole.UserRole  # a summary item's row in the view (int), if any
_ITEM_LIMIT = 500  # names listed under one summary entry (the rest: "… N more")
ARROW = "\u2194"  # ↔
# as main_window's (not imported from it: the window imports this module)
FILE_FILTER = "PyTorch export archives (*.pt2);;All files (*)"


def compare_title(path_a: str | Path, path_b: str | Path) -> str:
    return f"{Path(path_a).name} {ARROW} {Path(path_b).name}"


def _plain(label: QLabel) -> QLabel:
    label.setTextFormat(Qt.TextFormat.PlainText)  # file names and program names are data
    return label


def _compare(ctx, path_a: str, path_b: str) -> ArchiveDiff:
    return diff_files(path_a, path_b, progress=ctx.progress, cancelled=ctx.cancelled)


class CompareTab(QWidget):
    ready = Signal(object)  # ArchiveDiff, once shown
    failed = Signal(str, str)  # message, details (also "cancelled")
    changeShown = Signal(int, int)  # 1-based index, count

    def __init__(self, path_a: str | Path, path_b: str | Path,
                 pool: QThreadPool | None = None, parent: QWidget | None = None,
                 selection=None) -> None:
        """`selection`: the window's selection model (workspace.selection), which the
        tab's cursor drives while it is the current tab: the node under it (B's
        line, or A's where B has none) is the one the Details and Source panels show."""
        super().__init__(parent)
        self.setObjectName("compareTab")
        self.path_a, self.path_b = Path(path_a), Path(path_b)
        self.selection = selection
        # the two sides as the panels read a document (their programs viewed as asked)
        self.side_a = ListedArchive(self.path_a, [])
        self.side_b = ListedArchive(self.path_b, [])
        self.tasks = TaskGroup(pool, self)
        self.diff: ArchiveDiff | None = None
        self.program: ProgramDiff | None = None
        self._alignment = None
        self._task: Task | None = None
        self._build()

    # -- layout --
    def _build(self) -> None:
        self.title_a = _plain(QLabel(f"A: {self.path_a.name}"))
        self.title_b = _plain(QLabel(f"B: {self.path_b.name}"))
        self.title_a.setToolTip(plain_tip(str(self.path_a)))
        self.title_b.setToolTip(plain_tip(str(self.path_b)))
        for t in (self.title_a, self.title_b):
            t.setObjectName("compareSide")
            f = t.font()
            f.setBold(True)
            t.setFont(f)
        self.programs = QComboBox()
        self.programs.setObjectName("compareProgram")
        self.programs.setToolTip("Program compared (matched by name)")
        self.programs.setMinimumContentsLength(14)
        self.programs.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.programs.currentIndexChanged.connect(self._program_picked)
        self.prev_button = QToolButton()
        self.prev_button.setObjectName("prevChange")
        self.next_button = QToolButton()
        self.next_button.setObjectName("nextChange")
        self.counter = _plain(QLabel(""))
        self.counter.setObjectName("changeCounter")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setMaximumWidth(180)
        self.progress.setFormat("comparing %p%")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("compareCancel")
        self.cancel_button.clicked.connect(self.cancel)

        self.act_next = QAction("Next Change", self)
        self.act_next.setShortcut(QKeySequence("F7"))
        self.act_next.setToolTip("Next change (F7)")
        self.act_prev = QAction("Previous Change", self)
        self.act_prev.setShortcut(QKeySequence("Shift+F7"))
        self.act_prev.setToolTip("Previous change (Shift+F7)")
        for act in (self.act_next, self.act_prev):
            act.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            self.addAction(act)
        self.act_next.triggered.connect(lambda _c=False: self.next_change())
        self.act_prev.triggered.connect(lambda _c=False: self.prev_change())
        self.prev_button.setDefaultAction(self.act_prev)
        self.next_button.setDefaultAction(self.act_next)
        self.prev_button.setText("\u25b2 Previous")
        self.next_button.setText("Next \u25bc")
        for b in (self.prev_button, self.next_button):
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)

        bar = QHBoxLayout()
        bar.setContentsMargins(6, 4, 6, 2)
        bar.addWidget(_plain(QLabel("Program:")))
        bar.addWidget(self.programs)
        bar.addSpacing(8)
        bar.addWidget(self.prev_button)
        bar.addWidget(self.next_button)
        bar.addWidget(self.counter, 1)
        bar.addWidget(self.progress)
        bar.addWidget(self.cancel_button)

        sides = QHBoxLayout()
        sides.setContentsMargins(6, 0, 22, 2)  # the right margin: the view's scroll bar
        sides.addWidget(self.title_a, 1)
        sides.addSpacing(14)
        sides.addWidget(self.title_b, 1)

        self.view = DiffView()
        self.view.currentRowChanged.connect(self._row_changed)
        self.summary = QTreeWidget()
        self.summary.setObjectName("compareSummary")
        self.summary.setHeaderLabels(["Summary", "Count"])
        self.summary.setUniformRowHeights(True)
        header = self.summary.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.summary.itemActivated.connect(self._summary_clicked)
        self.summary.itemClicked.connect(self._summary_clicked)
        self.status_area = StatusArea()

        top = QWidget()
        tv = QVBoxLayout(top)
        tv.setContentsMargins(0, 0, 0, 0)
        tv.setSpacing(0)
        tv.addLayout(sides)
        tv.addWidget(self.view, 1)
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(top)
        self.split.addWidget(self.summary)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 1)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(bar)
        lay.addWidget(self.status_area)
        lay.addWidget(self.split, 1)
        self.status_area.setContentsMargins(6, 0, 6, 0)
        self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        self.cancel_button.setEnabled(busy)
        has_changes = bool(self._alignment is not None and self._alignment.changes)
        self.act_next.setEnabled(not busy and has_changes)
        self.act_prev.setEnabled(not busy and has_changes)
        self.programs.setEnabled(not busy and self.programs.count() > 1)

    # -- computing --
    def start(self) -> None:
        """Compare the two files off the GUI thread (again, if already shown)."""
        self.progress.setValue(0)
        self.status_area.set_status(f"Comparing {self.path_a.name} with {self.path_b.name}…",
                                    details="")
        self._task = self.tasks.start(
            _compare, str(self.path_a), str(self.path_b), context=True, key="compare",
            on_progress=lambda f: self.progress.setValue(int(f * 1000)),
            on_done=self._done, on_fail=self._failed, on_end=self._ended)
        self._set_busy(True)

    def is_busy(self) -> bool:
        """Whether the comparison runs (a side's program being viewed is not it)."""
        return self.tasks.busy("compare")

    @property
    def comparison_task(self) -> Task | None:
        """The running comparison (None once it ended)."""
        return self._task

    def cancel(self) -> None:
        """Ask the comparison to stop at its next step (it says "cancelled")."""
        if self._task is not None:
            self._task.stop()
            self.status_area.set_status("Cancelling…")

    def shutdown(self) -> None:
        """Drop the pending outcome and wait for the worker (closing the tab); the
        selection forgets both sides."""
        self.tasks.cancel()
        self.tasks.wait(10000)
        for side in (self.side_a, self.side_b):
            side.closed = True
            side.views.clear()
            if self.selection is not None:
                self.selection.forget(side)

    # -- the selection model --
    def publish(self) -> None:
        """(Tab protocol) Tell the selection where this tab's cursor is: the node of
        the current row, B's (A's where B has no line there)."""
        sel, p, al = self.selection, self.program, self._alignment
        if sel is None or p is None or al is None or not len(al) or not self.isVisible():
            return
        row = min(max(self.view.current_row(), 0), len(al) - 1)
        if al.b[row] >= 0 and p.listing_b is not None:
            side, program, listing, line = self.side_b, p.name_b or p.name, p.listing_b, al.b[row]
            parsed = p.b
        elif al.a[row] >= 0 and p.listing_a is not None:
            side, program, listing, line = self.side_a, p.name, p.listing_a, al.a[row]
            parsed = p.a
        else:
            return
        if program not in side.views and parsed is not None:
            self._view(side, program, parsed, listing)
        node = listing.line_nodes[line] if line < len(listing.line_nodes) else None
        sel.move_to(side, program, line, node.name if node is not None else None)

    def _view(self, side: ListedArchive, program: str, parsed, listing) -> None:
        """Index that side's program off the GUI thread; the panels show it then."""
        def done(view: ProgramView) -> None:
            if not side.closed:
                side.views[program] = view
                if self.selection is not None and self.selection.document is side:
                    self.selection.touch()  # the same place, now viewed: read it again

        key = f"view:{'a' if side is self.side_a else 'b'}:{program}"
        if not self.tasks.busy(key):
            self.tasks.start(listed_view, program, parsed, listing, key=key, on_done=done)

    def _ended(self) -> None:
        self._task = None
        self._set_busy(False)

    def _failed(self, message: str, details: str) -> None:
        text = ("Comparison cancelled." if message == "cancelled"
                else f"Cannot compare: {message}")
        self.status_area.set_status(text, error=message != "cancelled",
                                    details="" if message == "cancelled" else details)
        self.counter.setText("")
        self.failed.emit(message, details)

    def _done(self, diff: ArchiveDiff) -> None:
        self.diff = diff
        self.side_a.program_names = [p.name for p in diff.programs if p.a is not None]
        self.side_b.program_names = [p.name_b or p.name for p in diff.programs if p.b is not None]
        self.programs.blockSignals(True)
        self.programs.clear()
        for p in diff.programs:
            name = p.name + (f" {ARROW} {p.name_b}" if p.name_b else "")
            self.programs.addItem(f"{name} ({p.status})", p.name)
        self.programs.blockSignals(False)
        first = next((k for k, p in enumerate(diff.programs) if p.status != SAME), 0)
        if diff.programs:
            self.programs.setCurrentIndex(first)
        self._show_program(first)
        different = diff.different
        n = len(diff.programs)
        self.status_area.set_status(
            f"{self.path_a.name} and {self.path_b.name} "
            + ("differ" if different else "are the same: no differences")
            + f" ({n} program{'s' if n != 1 else ''} compared).")
        self._set_busy(False)
        self.view.setFocus()
        self.ready.emit(diff)

    # -- programs --
    def _program_picked(self, index: int) -> None:
        if self.diff is not None and 0 <= index < len(self.diff.programs):
            self._show_program(index)

    def select_program(self, name: str) -> bool:
        index = self.programs.findData(name)
        if index >= 0:
            self.programs.setCurrentIndex(index)
        return index >= 0

    def _show_program(self, index: int) -> None:
        diff = self.diff
        if diff is None or not diff.programs:
            self.program, self._alignment = None, None
            self.view.clear()
            self._fill_summary()
            self._update_counter()
            return
        p = diff.programs[index]
        self.program = p
        la, lb = p.listing_a, p.listing_b
        if la is not None and lb is not None:
            al = p.alignment()
        else:  # a program only one archive has: all of it added or removed
            al = one_sided(len(la or lb), "a" if la is not None else "b")  # type: ignore[arg-type]
        self._alignment = al
        self.view.set_rows(al, la.lines if la else [], lb.lines if lb else [])
        self._fill_summary()
        if al.changes:
            self._go_to(0)
        else:
            self.view.set_change_span(None)
            self.view.set_current_row(0)
            self._update_counter()
        self._set_busy(False)

    # -- changes --
    def change_count(self) -> int:
        return len(self._alignment.changes) if self._alignment is not None else 0

    def current_change(self) -> int:
        """1-based index of the change the cursor is in or last passed (0: none)."""
        al = self._alignment
        if al is None or not al.changes:
            return 0
        return self.view.change_index(max(self.view.current_row(), 0))

    def next_change(self) -> int | None:
        """Go to the next change (F7); after the last, wrap to the first.
        Returns the row gone to, or None when there is no change."""
        al = self._alignment
        if al is None or not al.changes:
            self._update_counter()
            return None
        row = al.next_change(self.view.current_row())
        wrapped = row is None
        k = 0 if wrapped else self.view.change_index(row) - 1
        return self._go_to(k, "wrapped to the first change" if wrapped else "")

    def prev_change(self) -> int | None:
        """Go to the previous change (Shift+F7); before the first, wrap to the last."""
        al = self._alignment
        if al is None or not al.changes:
            self._update_counter()
            return None
        row = al.prev_change(self.view.current_row())
        wrapped = row is None
        k = len(al.changes) - 1 if wrapped else self.view.change_index(row) - 1
        return self._go_to(k, "wrapped to the last change" if wrapped else "")

    def _go_to(self, k: int, note: str = "") -> int:
        al = self._alignment
        start = al.changes[k]
        self.view.show_change(start, al.change_end(start))
        self._update_counter(note)
        self.changeShown.emit(k + 1, len(al.changes))
        return start

    def _row_changed(self, row: int) -> None:
        span = self.view.change_span()
        if span is not None and not span[0] <= row < span[1]:
            self.view.set_change_span(None)
        self._update_counter()
        self.publish()

    def _update_counter(self, note: str = "") -> None:
        al = self._alignment
        if al is None:
            self.counter.setText("")
            return
        n = len(al.changes)
        if n == 0:
            self.counter.setText("no differences in this program" if self.program is not None
                                 and self.program.status == SAME else "no listing differences")
            return
        k = self.current_change()
        inside = al.status[max(self.view.current_row(), 0)] != SAME
        text = (f"change {k} of {n}" if k and inside
                else f"{n} change{'s' if n != 1 else ''}" if not k
                else f"after change {k} of {n}")
        self.counter.setText(text + (f" ({note})" if note else ""))

    # -- summary --
    def _row_of(self, node, side: str) -> int | None:
        p, al = self.program, self._alignment
        if p is None or al is None:
            return None
        listing = p.listing_a if side == "a" else p.listing_b
        if listing is None:
            return None
        line = listing.line_of(node)
        if line is None:
            return None
        return al.row_of_a(line) if side == "a" else al.row_of_b(line)

    def _fill_summary(self) -> None:
        self.summary.clear()
        p, diff = self.program, self.diff
        if diff is None:
            return
        if p is not None:
            self._program_summary(p)
        if diff.records is not None:
            r = diff.records
            rec = self._section("Records", "same" if not r.differs else "differ")
            self._count(rec, "same", r.same)
            for label, names in (("changed", r.changed), ("added", r.added),
                                 ("removed", r.removed)):
                self._names(self._count(rec, label, len(names)), names)
        if diff.findings.new or diff.findings.resolved:
            self._findings(self._section("Archive findings", ""), diff.findings)

    def _section(self, title: str, value: str) -> QTreeWidgetItem:
        item = QTreeWidgetItem([title, value])
        f = item.font(0)
        f.setBold(True)
        item.setFont(0, f)
        self.summary.addTopLevelItem(item)
        item.setExpanded(True)
        return item

    @staticmethod
    def _count(parent: QTreeWidgetItem, label: str, n: int) -> QTreeWidgetItem:
        item = QTreeWidgetItem(parent, [label, str(n)])
        item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight)
        return item

    @staticmethod
    def _names(parent: QTreeWidgetItem, names: list[str],
               rows: list[int | None] | None = None) -> None:
        for k, name in enumerate(names[:_ITEM_LIMIT]):
            child = QTreeWidgetItem(parent, [name, ""])
            if rows is not None and rows[k] is not None:
                child.setData(0, ROW_ROLE, rows[k])
                child.setToolTip(0, "click to show it")
        if len(names) > _ITEM_LIMIT:
            QTreeWidgetItem(parent, [f"… {len(names) - _ITEM_LIMIT} more "
                                     "(pt2-inspector diff --json lists all)", ""])

    def _program_summary(self, p: ProgramDiff) -> None:
        name = p.name + (f" {ARROW} {p.name_b}" if p.name_b else "")
        head = self._section(f"Program {name}", p.status)
        if p.a is None or p.b is None:
            program = p.a or p.b
            self._count(head, f"only in {'B' if p.a is None else 'A'}: nodes",
                        program.node_count if program else 0)
            return
        nodes = self._section("Nodes", f"A {p.a.node_count:,} · B {p.b.node_count:,}")
        self._count(nodes, "same", p.nodes_same)
        changed_names, changed_rows = [], []
        added_names, added_rows = [], []
        removed_names, removed_rows = [], []
        for g in p.match.graphs if p.match is not None else ():
            for pair in g.pairs:
                if pair.fields:
                    a, b = qualified_name(pair.a, g.path), qualified_name(pair.b, g.path)
                    fields = ", ".join(pair.fields + pair.meta)
                    changed_names.append(f"{a}" + (f" {ARROW} {b}" if a != b else "") + f": {fields}")
                    changed_rows.append(self._row_of(pair.a, "a"))
            for n in g.added:
                added_names.append(qualified_name(n, g.path))
                added_rows.append(self._row_of(n, "b"))
            for n in g.removed:
                removed_names.append(qualified_name(n, g.path))
                removed_rows.append(self._row_of(n, "a"))
        self._names(self._count(nodes, "changed", len(changed_names)), changed_names, changed_rows)
        self._names(self._count(nodes, "added", len(added_names)), added_names, added_rows)
        self._names(self._count(nodes, "removed", len(removed_names)), removed_names, removed_rows)
        meta = self._count(nodes, "metadata only", p.meta_changed)
        self._names(meta, [f"{k.replace('_', ' ')}: {v}" for k, v in sorted(p.meta_fields().items())])

        sig = p.signature()
        sig_item = self._section("Signature", "changed" if p.signature_differs else "same")
        for side in ("inputs", "outputs"):
            s = sig[side]
            lines = [f"{c['a']}" + (f" {ARROW} {c['b']}" if c["a"] != c["b"] else "")
                     + f" ({c['kind']}): {', '.join(c['fields'])}" for c in s["changed"]]
            lines += [f"added: {n}" for n in s["added"]] + [f"removed: {n}" for n in s["removed"]]
            self._names(self._count(sig_item, f"{side} changed", len(lines)), lines)

        r = p.ranges
        ranges = self._section("Ranges", "changed" if r.differs else "same")
        self._names(self._count(ranges, "changed", len(r.changed)),
                    [f"{s}: {x.text()} \u2192 {y.text()}" for s, (x, y) in r.changed.items()])
        self._names(self._count(ranges, "added", len(r.added)),
                    [f"{s}: {x.text()}" for s, x in r.added.items()])
        self._names(self._count(ranges, "removed", len(r.removed)),
                    [f"{s}: {x.text()}" for s, x in r.removed.items()])

        w = p.weights
        weights = self._section("Weights", "changed" if w.differs else "same")
        self._count(weights, "same", w.same)
        self._names(self._count(weights, "changed", len(w.changed)),
                    [f"{x.name}: {', '.join(f)}" for x, _y, f in w.changed])
        self._names(self._count(weights, "added", len(w.added)), [x.name for x in w.added])
        self._names(self._count(weights, "removed", len(w.removed)), [x.name for x in w.removed])
        if p.versions:
            self._section("Exported with torch", f"{p.versions[0]} \u2192 {p.versions[1]}")
        self._findings(self._section("Findings", ""), p.findings)

    def _findings(self, parent: QTreeWidgetItem, f: FindingsDiff) -> None:
        for label, items in (("new", f.new), ("resolved", f.resolved)):
            texts = [f"{x.severity} {x.rule}" + (f" {x.node}" if x.node else "") + f": {x.message}"
                     for x in items]
            self._names(self._count(parent, label, len(items)), texts)
        parent.setText(1, f"{len(f.new)} new · {len(f.resolved)} resolved")

    def summary_count(self, *path: str) -> int:
        """The number the summary shows at `path` ("Nodes", "changed"), for tests
        and for the status line."""
        items = [self.summary.topLevelItem(i) for i in range(self.summary.topLevelItemCount())]
        item = None
        for k, label in enumerate(path):
            item = next((x for x in items if x.text(0) == label), None)
            if item is None:
                raise KeyError(path)
            items = [item.child(i) for i in range(item.childCount())]
        assert item is not None
        return int(item.text(1).replace(",", ""))

    def _summary_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        row = item.data(0, ROW_ROLE)
        if isinstance(row, int):
            self.view.set_current_row(row, center=True)
            al = self._alignment
            if al is not None and al.status[row] != SAME:
                start = row
                while start > 0 and al.status[start - 1] != SAME:
                    start -= 1
                self.view.set_change_span((start, al.change_end(start)))
            self._update_counter()

    # -- look --
    def set_theme(self, theme: Theme | None = None) -> None:
        self.view.set_theme(theme or current_theme())


def open_compare(window, path_a: str | Path, path_b: str | Path) -> CompareTab:
    """Add a compare tab for the two files to the main window and start it."""
    tab = CompareTab(path_a, path_b, window.pool, window, window.workspace.selection)
    index = window.tabs.addTab(tab, compare_title(path_a, path_b))
    window.tabs.setTabToolTip(index, plain_tip(f"{path_a}\n{ARROW} {path_b}"))
    window.tabs.setCurrentIndex(index)
    window._update_empty()
    tab.start()
    return tab


def compare_dialog(window) -> CompareTab | None:
    """File > Compare with…: the current archive against a file the user picks
    (or two files when no archive is open)."""
    from PySide6.QtWidgets import QFileDialog

    from inspector.ui import settings as keys

    start = str(keys.settings().value(keys.LAST_DIRECTORY, str(Path.home())))
    current = window.current_archive_path()
    if current is not None:
        other, _ = QFileDialog.getOpenFileName(
            window, f"Compare {Path(current).name} with", start, FILE_FILTER)
        return open_compare(window, current, other) if other else None
    paths, _ = QFileDialog.getOpenFileNames(window, "Compare two archives (pick A and B)",
                                            start, FILE_FILTER)
    if len(paths) != 2:
        if paths:
            window.status_label.setText("Compare: pick exactly two archives (A, then B).")
        return None
    return open_compare(window, paths[0], paths[1])
