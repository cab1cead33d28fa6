"""The model between the window and the panels: the open documents and the current one.

Panels depend on a Workspace (and widgets), never on the window: a panel's test builds
`Panel(Workspace())`. The window is one client among others: it shows a tab for each
document, follows `currentChanged` and paints `marksChanged`. Where the user is (the
current node and line, highlighted lines and why, the selected module, Back/Forward,
a node asked for) is `ws.selection` (inspector/ui/selection.py): every view follows it.

    ws.open(path)                  # read off the GUI thread -> documentOpened(doc); a big
                                   #    program's first lines before -> firstScreenReady
    ws.current                     # the Document of the current tab (or None)
    ws.selection                   # the selection model: .changed, .node, .select_node(...)
    ws.select_node(program, node)  # = ws.selection.select_node (and nodeRequested)
    ws.selected_view()             # (Document, ProgramView) the selection is in
    ws.show_frame(frame)           # -> frameRequested: the Source panel shows the frame
    ws.annotate(doc, program, AnnotationLayer("profile", heat={...}))  # -> marksChanged
    ws.compare(path_a, path_b)     # -> compareRequested: the window shows them side by side
    ws.close(doc)                  # -> documentClosed(doc); its tasks are cancelled and
                                   #    its archive closes once the last one returned

Background work that reads a document's archive is started on `doc.tasks` (a
TaskGroup, inspector/ui/tasks.py) so closing the document cancels it first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal

from inspector.core.annotations import AnnotationLayer, AnnotationStore
from inspector.core.document import (
    ArchiveDoc,
    ProgramView,
    ViewIndex,
    build_program_view,
    index_view,
    open_document,
    stream_listing,
)
from inspector.core.first_screen import first_screen_of
from inspector.core.gcpause import release_frozen
from inspector.core.heap import give_back_freed
from inspector.core.shapes import ProgramShapes, archive_shapes
from inspector.ui.selection import Selection
from inspector.ui.tasks import Task, TaskContext, TaskGroup

# Threads for all in-process work of a window: two parse/index tasks at once (each
# holds the GIL most of the time, more would not go faster) plus room for a panel's.
POOL_THREADS = 4
# How long a big program's background listing waits for its first screen to be
# painted (Document.listingPainted) before it starts anyway (a tab off screen).
PAINT_WAIT_MS = 400


@runtime_checkable
class Viewed(Protocol):
    """What the selection model's `document` is to a panel: a Document, or one side
    of a comparison (inspector.core.document.ListedArchive)."""

    closed: bool
    program_names: list[str]
    annotations: AnnotationStore
    views: dict[str, ProgramView]


def file_stamp(path: Path) -> tuple[int, int] | None:
    """(size, mtime in ns) of `path`, None when it is not a readable file."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


class Document(QObject):
    """One open archive: the Qt-free model (inspector.core.document.ArchiveDoc), the
    background tasks that read it, and the annotations panels put on its programs."""

    programShown = Signal(str)  # the window now shows this program of the document
    shapesReady = Signal()  # shapes() of every program is ready (request_shapes)
    shapesFailed = Signal(str, str)  # message, details
    listingPainted = Signal()  # its tab painted the lines of a program just shown

    def __init__(self, model: ArchiveDoc, pool: QThreadPool, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.tasks = TaskGroup(pool, self)
        self.annotations = AnnotationStore()
        self._shown_program: str | None = None
        self._shapes: dict[str, ProgramShapes] | None = None
        self.closed = False
        # (size, mtime) of the file when it was read: reopening a changed file
        # reads it again (what you inspect is what the Run panel loads)
        self.stamp: tuple[int, int] | None = None

    @property
    def shown_program(self) -> str | None:
        """The program the window shows for this document."""
        return self._shown_program

    @shown_program.setter
    def shown_program(self, name: str | None) -> None:
        if name != self._shown_program:
            self._shown_program = name
            if name is not None:
                self.programShown.emit(name)

    # -- shapes (inspector/core/shapes.py), shared by the Shapes panel and the listing --
    def shapes(self, program: str) -> ProgramShapes | None:
        """The shapes of `program`, once request_shapes has computed them."""
        return self._shapes.get(program) if self._shapes is not None else None

    def shapes_known(self) -> bool:
        return self._shapes is not None

    def request_shapes(self) -> None:
        """Compute the shapes of every program off the GUI thread (once; all of them,
        as `shapes` does: a dim constant here and symbolic in another program is a
        specialization) -> shapesReady, or shapesFailed."""
        if self._shapes is not None or self.closed or self.tasks.busy("shapes"):
            return
        self.tasks.start(archive_shapes, self.archive, key="shapes",
                         on_done=self._shapes_done, on_fail=self.shapesFailed.emit)

    def _shapes_done(self, shapes: list[ProgramShapes]) -> None:
        self._shapes = {s.name: s for s in shapes}
        self.shapesReady.emit()

    @property
    def path(self) -> Path:
        return self.model.path

    @property
    def archive(self):  # inspector.core.archive.Archive
        return self.model.archive

    @property
    def views(self) -> dict[str, ProgramView]:
        return self.model.views

    @property
    def program_names(self) -> list[str]:
        return self.model.program_names

    @property
    def workspace(self) -> Workspace | None:
        """The workspace that opened it (what a widget asks to show a node)."""
        ws = self.parent()
        return ws if isinstance(ws, Workspace) else None

    def view(self, program: str | None = None) -> ProgramView | None:
        """The built view of `program` (default: the one shown), if built."""
        name = program or self.shown_program
        return self.model.views.get(name) if name else None

    def is_file(self, path: str | Path) -> bool:
        try:
            return Path(path).resolve() == self.path.resolve()
        except OSError:
            return False


@dataclass
class FirstScreen:
    """The first listing lines of a big program, made from the head of its text
    while the archive is still read (Workspace.firstScreenReady). The reader
    waits until `painted()` (or PAINT_WAIT_MS) before it parses the program,
    which holds the GIL against the painting GUI thread."""

    path: Path
    program: str
    lines: list[str]
    _painted: threading.Event = field(default_factory=threading.Event, repr=False)

    def painted(self) -> None:
        self._painted.set()

    def wait_painted(self) -> None:
        self._painted.wait(PAINT_WAIT_MS / 1000)


def _show_first_screen(ctx: TaskContext, path: Path, name: str, lines: list[str]) -> None:
    """Worker side: hand a big program's first screen over (ctx.partial), then wait
    until it is painted (or PAINT_WAIT_MS) before the parse goes on."""
    screen = FirstScreen(path, name, lines)
    ctx.partial(screen)
    screen.wait_painted()


def _open_showing_first_screen(ctx: TaskContext, path: Path, program: str | None
                               ) -> tuple[ArchiveDoc, ProgramView | None]:
    """Workspace.open's task: open_document, showing a big program's first screen."""
    return open_document(path, program, first_screen=lambda name, lines: _show_first_screen(
        ctx, path, name, lines))


def _load_showing_first_screen(ctx: TaskContext, doc: ArchiveDoc, name: str) -> ProgramView:
    """Workspace.load_program's task: build_program_view, showing a big program's
    first screen first."""
    lines = first_screen_of(doc.archive, name)
    if lines:
        _show_first_screen(ctx, doc.path, name, lines)
    return build_program_view(doc.archive, name)


def _release_memory() -> None:
    """After a document closed: collect what its builders froze, then give the
    freed pages back to the system (core/heap.py: else the window stays at the
    closed program's peak)."""
    release_frozen()
    give_back_freed()


def _stream_and_index(ctx: TaskContext, view: ProgramView) -> ViewIndex | None:
    """Worker side: the rest of a streamed listing, a progress report after each
    chunk (the GUI thread reads view.listed then), then the search index."""
    total = max(1, view.node_count)
    if not stream_listing(view, grew=lambda lines: ctx.progress(min(1.0, lines / total)),
                          stop=ctx.cancelled):
        return None
    return index_view(view)


class Workspace(QObject):
    documentOpened = Signal(object)  # Document: read, its first program built
    firstScreenReady = Signal(object)  # FirstScreen: a big program's first lines, while read
    programFirstScreen = Signal(object, object)  # Document, FirstScreen: the same, load_program
    openFinished = Signal(str)  # path: its open ended (after documentOpened or openFailed)
    documentClosed = Signal(object)  # Document: removed; its archive closes when idle
    currentChanged = Signal(object)  # Document | None
    marksChanged = Signal(object, str)  # Document, program: its annotations changed
    # Document, program, node name: asked for through select_node (the selection
    # model's request; kept for those who only want to hear of the ask)
    nodeRequested = Signal(object, str, str)
    # Frame (inspector.core.frames): a stack frame picked (the Details pane's trace):
    # the Source panel shows it, the window raises its dock
    frameRequested = Signal(object)
    compareRequested = Signal(str, str)  # paths A, B: show them side by side
    programLoaded = Signal(object, object)  # Document, ProgramView: built, ready to show
    programIndexed = Signal(object, object)  # Document, ProgramView: search index attached
    programGrew = Signal(object, object)  # Document, ProgramView: more lines streamed (listed)
    openFailed = Signal(str, str, str)  # path, message, details
    loadFailed = Signal(object, str, str)  # Document, message, details
    status = Signal(str)  # what is being read ("Opening x.pt2 (4.1 MB)…")
    busyChanged = Signal(bool)  # whether any open/load/index task is running
    loadsFinished = Signal()  # queued after the last open/load/index task ended

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(POOL_THREADS)
        self.documents: list[Document] = []
        self._current: Document | None = None
        self._opening = TaskGroup(self.pool, self)  # opens: no document owns them yet
        self._open_tasks: dict[Path, Task] = {}
        self._loads = 0
        self.selection = Selection(self, self)  # where the user is; every view follows it

    # -- documents --
    @property
    def current(self) -> Document | None:
        return self._current

    def current_path(self) -> str | None:
        return str(self._current.path) if self._current is not None else None

    def find(self, path: str | Path) -> Document | None:
        return next((d for d in self.documents if d.is_file(path)), None)

    def set_current(self, doc: Document | None) -> None:
        if doc is not None and doc not in self.documents:
            return
        if doc is not self._current:
            self._current = doc
            self.currentChanged.emit(doc)

    def open(self, path: str | Path, program: str | None = None) -> Document | None:
        """Show `path` if open (returns its Document), else read it off the GUI thread
        (documentOpened or openFailed follows; returns None)."""
        path = Path(path)
        doc = self.find(path)
        if doc is not None and doc.stamp == file_stamp(path):
            self.set_current(doc)
            return doc
        if doc is not None:  # changed on disk since it was read: the tab would be stale
            self.close(doc)
        stamp = file_stamp(path)  # before reading: a change while reading shows next time
        size = stamp[0] if stamp else 0

        def done(result: tuple[ArchiveDoc, ProgramView | None]) -> None:
            self._opened(path, result, stamp)
            self._open_ended(path)

        def failed(msg: str, det: str) -> None:
            self.openFailed.emit(str(path), msg, det)
            self._open_ended(path)

        task = self._run(self._opening, f"Opening {path.name} ({size / 1e6:.1f} MB)…",
                         _open_showing_first_screen, path, program, context=True,
                         on_partial=self.firstScreenReady.emit, on_done=done, on_fail=failed)
        self._open_tasks[path] = task
        return None

    def cancel_open(self, path: str | Path) -> None:
        """Drop the outcome of `path`'s open, if it is being read (its first-screen
        tab was closed): no document is made of it."""
        task = self._open_tasks.get(Path(path))
        if task is not None:
            task.cancel()
            self._open_ended(Path(path))

    def _open_ended(self, path: Path) -> None:
        if self._open_tasks.pop(path, None) is not None:
            self.openFinished.emit(str(path))

    def _opened(self, path: Path, result: tuple[ArchiveDoc, ProgramView | None],
                stamp: tuple[int, int] | None = None) -> None:
        model, view = result
        again = self.find(path)
        if again is not None:  # opened twice meanwhile: keep the first
            model.archive.close()
            self.set_current(again)
            return
        doc = Document(model, self.pool, self)
        doc.stamp = stamp
        # what panels start for the parts off the first screen waits for its paint
        doc.tasks.gate_until(doc.listingPainted, PAINT_WAIT_MS)
        if view is not None:
            doc.shown_program = view.name
        self.documents.append(doc)
        self.documentOpened.emit(doc)
        self.set_current(doc)
        if view is not None:
            self._index(doc, view)

    def close(self, doc: Document) -> None:
        if doc not in self.documents:
            return
        self.documents.remove(doc)
        doc.closed = True
        if self._current is doc:
            self._current = None
            self.currentChanged.emit(None)
        self.documentClosed.emit(doc)
        self.selection.forget(doc)

        def release() -> None:
            doc.archive.close()
            doc.views.clear()
            doc.deleteLater()
            QTimer.singleShot(0, _release_memory)

        # Cancel first; the archive closes once no task of the document reads it.
        doc.tasks.close(release)

    # -- programs --
    def load_program(self, doc: Document, name: str) -> None:
        """Build program `name` of `doc` off the GUI thread -> programLoaded (a big
        one's first lines before -> programFirstScreen)."""
        self._run(doc.tasks, f"Reading program {name}…", _load_showing_first_screen, doc.model,
                  name, key=f"load:{name}", context=True,
                  on_partial=lambda screen: self.programFirstScreen.emit(doc, screen),
                  on_done=lambda view: self._loaded(doc, view),
                  on_fail=lambda msg, det: self.loadFailed.emit(doc, msg, det))

    def _loaded(self, doc: Document, view: ProgramView) -> None:
        doc.views[view.name] = view
        doc.tasks.gate_until(doc.listingPainted, PAINT_WAIT_MS)  # as _opened, for its lines
        self.programLoaded.emit(doc, view)
        self._index(doc, view)

    def _index(self, doc: Document, view: ProgramView) -> None:
        """Big programs paint their first chunk of lines; the rest of the listing
        (programGrew after each chunk) and the search index follow in the background.
        Closing the document cancels the stream between two chunks."""
        if view.complete or doc.closed:  # closed by what documentOpened started
            return

        def grew(_fraction: float) -> None:
            if not doc.closed:
                self.programGrew.emit(doc, view)

        def indexed(idx: ViewIndex | None) -> None:
            if idx is not None:  # None: stopped (the document closed)
                self.programIndexed.emit(doc, idx.apply(view))

        # gated: started once the listing has painted its first screen (or after
        # PAINT_WAIT_MS, for a tab not on screen); until then it would hold the GIL
        # against the painting GUI thread. Closing the document cancels it there too.
        self._run(doc.tasks, f"Listing and indexing {view.name} ({view.node_count:,} nodes)…",
                  _stream_and_index, view, key=f"index:{view.name}", context=True,
                  on_progress=grew, on_done=indexed,
                  on_fail=lambda msg, det: self.loadFailed.emit(doc, msg, det), gated=True)

    def _run(self, group: TaskGroup, message: str, fn, *args, on_done, on_fail,
             **options) -> Task:
        """`group.start(...)` of a load counted by busyChanged/loadsFinished
        (cancelled ones included), from now on: gated ones while they wait too."""
        self._loads += 1
        if self._loads == 1:
            self.busyChanged.emit(True)
        self.status.emit(message)

        counted = [True]

        def ended() -> None:
            if counted[0]:
                counted[0] = False
                self._loads -= 1
                if self._loads == 0:
                    self.busyChanged.emit(False)
                    # queued with the workspace as context (never after it is gone), and
                    # only if what the finished load started (its index) is not running
                    QTimer.singleShot(0, self, self._maybe_loads_finished)

        def done(value) -> None:
            ended()  # first: what on_done shows may ask is_busy()
            on_done(value)

        def failed(msg: str, det: str) -> None:
            ended()
            on_fail(msg, det)

        return group.start(fn, *args, on_done=done, on_fail=failed, on_end=ended, **options)

    def _maybe_loads_finished(self) -> None:
        if self._loads == 0:
            self.loadsFinished.emit()

    def is_busy(self) -> bool:
        return self._loads > 0

    # -- nodes and annotations --
    def select_node(self, program: str, node: str, doc: Document | None = None) -> None:
        """Show `node` of `program` (default: in the current document): the selection
        model's request, which the document's listing answers."""
        doc = doc or self._current
        if doc is not None:
            self.selection.select_node(program, node, doc)
            self.nodeRequested.emit(doc, program, node)

    def selected_view(self) -> tuple[Viewed | None, ProgramView | None]:
        """The document the selection is in (a Document, or a compared side: Viewed)
        and its view of the selected program (None where that program is not built
        yet, or nothing is selected)."""
        sel = self.selection
        doc = sel.document if isinstance(sel.document, Viewed) else None
        if doc is None or doc.closed or sel.program is None:
            return doc, None
        return doc, doc.views.get(sel.program)

    def show_frame(self, frame) -> None:
        """Show stack frame `frame` in the Source panel (frameRequested)."""
        self.frameRequested.emit(frame)

    def compare(self, path_a: str | Path, path_b: str | Path) -> None:
        """Ask the window to compare two archives (its compare view)."""
        self.compareRequested.emit(str(path_a), str(path_b))

    def annotate(self, doc: Document, program: str, layer: AnnotationLayer) -> None:
        """Publish `layer` (replacing the previous one of `layer.source`) on `program`."""
        doc.annotations.set(program, layer)
        self.marksChanged.emit(doc, program)

    def clear_annotations(self, doc: Document, source: str, program: str | None = None) -> None:
        programs = [program] if program is not None else doc.annotations.programs()
        doc.annotations.clear(program, source)
        for name in programs:
            self.marksChanged.emit(doc, name)

    # -- lifetime --
    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Cancel everything and wait for running tasks (the window is closing)."""
        self._opening.cancel()
        for doc in self.documents:
            doc.tasks.cancel()
        self.pool.waitForDone(timeout_ms)
