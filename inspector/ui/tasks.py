"""The one mechanism for in-process background work (parsing, indexing, audit, retarget,
reading range tables): pure-Python functions run on a thread pool, their outcome comes
back on the GUI thread.

    group = TaskGroup(pool, parent)        # a Document's, or a panel's own
    group.start(fn, *args, on_done=..., on_fail=..., key="audit")

- `on_done(value)` / `on_fail(message, details)` run on the GUI thread; `on_end()`
  after either, and also when the outcome was dropped. An
  InspectorError arrives as its message; anything else as "internal error: ..."; the
  traceback is the details.
- `key`: starting a task with the key of a live one cancels the older one; its
  result is dropped (stale results never reach the screen).
- `context=True`: fn gets a TaskContext first, to report progress (`on_progress`),
  to hand over what can be shown before the outcome (`on_partial`), and to ask
  whether it should stop (cooperative: a parse cannot be interrupted midway).
  `task.stop()` asks it to stop and still delivers its outcome (a Cancel button);
  `task.cancel()` also drops the outcome.
- `cancel()` drops every pending outcome; queued tasks never start. `close(then)`
  cancels and runs `then` once no task of the group is running any more: a Document
  closes its archive only after the last task that reads it has returned.
- `gated=True`: the task waits for the group's gate (`gate_until(signal, max_ms)`)
  to open before it is handed to the pool; a group without a gate starts it at
  once. A Document gates work for what its first screen does not show (the audit's
  marks, the memory plan) until its listing has painted: a Python task holds the GIL
  against the GUI thread that paints.

A thin layer of superqt's `create_worker` shape on QThreadPool/QRunnable: the group
knows exactly which of its tasks are still running (superqt's workers run on the global
pool and cannot be waited for per owner).
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, QTimer, Signal

from inspector.core.errors import InspectorError
from inspector.ui.gui_gc import collect_on_gui_thread

Done = Callable[[Any], Any]
Failed = Callable[[str, str], Any]


class TaskContext:
    """What a task function may ask of its task (when started with context=True)."""

    def __init__(self, task: Task) -> None:
        self._task = task

    def progress(self, fraction: float) -> None:
        """Report progress 0..1 (delivered to on_progress on the GUI thread)."""
        self._task._emit(self._task.signals.progress, float(fraction))

    def partial(self, value: Any) -> None:
        """Hand over what can be shown before the outcome (delivered to on_partial on
        the GUI thread; never after the outcome, nor once cancelled)."""
        self._task._emit(self._task.signals.partial, value)

    def cancelled(self) -> bool:
        """Whether the task was asked to stop (Task.stop) or cancelled."""
        return self._task.stopping


class _Signals(QObject):
    # the outcome: ("done", value) or ("failed", message, details); always exactly one
    ended = Signal(object)
    progress = Signal(float)
    partial = Signal(object)


class Task(QRunnable):
    """One piece of work. Made by TaskGroup.start; keep it only to cancel it."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], context: bool,
                 key: str | None) -> None:
        super().__init__()
        self.fn, self.args, self.key = fn, args, key
        self.context = context
        self.connected: list[Any] = []  # its signals beside `ended` something listens to
        self.signals = _Signals()
        self._cancel = threading.Event()  # outcome dropped
        self._stop = threading.Event()  # asked to stop early; outcome still delivered
        self.finished = threading.Event()  # set when run() has returned (or never will)
        # Python owns the task (its group keeps it until its outcome arrives): a C++
        # auto-delete would free it under the Python wrapper.
        self.setAutoDelete(False)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set() or self._cancel.is_set()

    def stop(self) -> None:
        """Ask a task function that takes a context to stop early (a user's Cancel
        button): its outcome, usually a "cancelled" error, is still delivered."""
        self._stop.set()

    def cancel(self) -> None:
        """Drop the outcome (stale or closed); a context task may also stop early."""
        self._cancel.set()

    def run(self) -> None:
        try:
            if self.cancelled:
                outcome: tuple[Any, ...] = ("failed", "cancelled", "")
            else:
                args = (TaskContext(self), *self.args) if self.context else self.args
                outcome = ("done", self.fn(*args))
        except InspectorError as exc:
            outcome = ("failed", str(exc), traceback.format_exc())
        except Exception as exc:  # a bug of ours: still a message, never a crash
            outcome = ("failed", f"internal error: {type(exc).__name__}: {exc}",
                       traceback.format_exc())
        # drop what the task read (a view, an archive) now: the group may keep the
        # task a while, and a connection's closure keeps it longer still
        self.fn, self.args = None, ()
        self.finished.set()
        self._emit(self.signals.ended, outcome)

    @staticmethod
    def _emit(signal: Any, *args: Any) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the receiving side is gone (window closed meanwhile)
            pass


class TaskGroup(QObject):
    """The tasks of one owner (a document, a panel) on a shared pool."""

    busyChanged = Signal(bool)

    def __init__(self, pool: QThreadPool | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        if pool is None:  # standalone (a panel without a workspace): a small pool of its own
            pool = QThreadPool(self)
            pool.setMaxThreadCount(1)
        self.pool = pool
        self._live: dict[Task, tuple[Done | None, Failed | None, Callable[[], Any] | None]] = {}
        self._closing: list[Callable[[], Any]] = []
        self._gated: list[Task] | None = None  # None: the gate is open (or there is none)
        self._gate_signal: Any = None
        self._gate_timer: QTimer | None = None

    def gate_until(self, signal: Any, max_ms: int) -> None:
        """Hold the tasks started with gated=True until `signal` fires or `max_ms`
        have passed, whichever comes first; then the gate stays open until the next
        gate_until (a Document closes it again for each program it shows)."""
        if self._gated is not None:
            return  # closed already: the first signal or deadline opens it
        self._gated = []
        self._gate_signal = signal
        # queued: the held tasks start once what the signal's emitter is doing (a paint)
        # is over, and after every other slot of that signal
        signal.connect(self.open_gate, Qt.ConnectionType.QueuedConnection)
        if self._gate_timer is None:
            self._gate_timer = QTimer(self)
            self._gate_timer.setSingleShot(True)
            self._gate_timer.timeout.connect(self.open_gate)
        self._gate_timer.start(max_ms)

    def open_gate(self) -> None:
        """Start the held tasks (in the order they were started) and every later one."""
        if self._gated is None:
            return
        held, self._gated = self._gated, None
        signal, self._gate_signal = self._gate_signal, None
        try:
            signal.disconnect(self.open_gate)
        except (RuntimeError, TypeError):  # its sender is gone already
            pass
        self._gate_timer.stop()
        for task in held:
            self.pool.start(task)

    def start(self, fn: Callable[..., Any], *args: Any, on_done: Done | None = None,
              on_fail: Failed | None = None, on_progress: Callable[[float], Any] | None = None,
              on_partial: Callable[[Any], Any] | None = None,
              on_end: Callable[[], Any] | None = None, key: str | None = None,
              context: bool = False, gated: bool = False) -> Task:
        if key is not None:
            self.cancel(key)
        collect_on_gui_thread()  # no cycle collection on the worker: see gui_gc.py
        task = Task(fn, args, context, key)
        was_busy = self.busy()
        self._live[task] = (on_done, on_fail, on_end)
        # a method of the group, not a closure: Qt drops the connection when the group
        # is deleted (a closed tab, a closed pane), and nothing holds the task in C++
        task.signals.ended.connect(self._on_ended)
        for signal, slot in ((task.signals.progress, on_progress),
                             (task.signals.partial, on_partial)):
            if slot is not None:
                task.connected.append(signal)
                signal.connect(lambda v, t=task, slot=slot: None if t.cancelled else slot(v))
        if not was_busy:
            self.busyChanged.emit(True)
        if gated and self._gated is not None:
            self._gated.append(task)
        else:
            self.pool.start(task)
        return task

    def _on_ended(self, outcome: tuple[Any, ...]) -> None:
        signals = self.sender()
        task = next((t for t in self._live if t.signals is signals), None)
        if task is not None:  # else dropped already (cancelled before it started)
            self._ended(task, outcome)

    def _ended(self, task: Task, outcome: tuple[Any, ...]) -> None:
        callbacks = self._live.pop(task, None)
        _release(task)
        if callbacks is not None:
            on_done, on_fail, on_end = callbacks
            try:
                if task.cancelled:
                    pass  # stale or closed: the outcome is dropped
                elif outcome[0] == "done":
                    if on_done is not None:
                        on_done(outcome[1])
                elif on_fail is not None:
                    on_fail(outcome[1], outcome[2])
            finally:
                if on_end is not None:
                    on_end()
        if not self._live:
            self.busyChanged.emit(False)
            closing, self._closing = self._closing, []
            for then in closing:
                then()

    def busy(self, key: str | None = None) -> bool:
        if key is None:
            return bool(self._live)
        return any(t.key == key for t in self._live)

    def cancel(self, key: str | None = None) -> None:
        """Cancel the live tasks with `key` (all when None); queued ones never start."""
        for task in list(self._live):
            if key is None or task.key == key:
                task.cancel()
                held = self._gated is not None and any(t is task for t in self._gated)
                if held:
                    self._gated = [t for t in self._gated if t is not task]
                if held or self.pool.tryTake(task):  # never started: it ends here
                    task.finished.set()
                    self._ended(task, ("failed", "cancelled", ""))

    def close(self, then: Callable[[], Any] | None = None) -> None:
        """Cancel everything; run `then` once no task of this group is running."""
        self.cancel()
        if then is None:
            return
        if self._live:
            self._closing.append(then)
        else:
            then()

    def wait(self, timeout_ms: int = 5000) -> bool:
        """Block until every running task of this group has returned (shutdown only:
        their outcomes are delivered by the event loop later, or dropped)."""
        import time

        deadline = time.monotonic() + timeout_ms / 1000
        for task in list(self._live):
            if not task.finished.wait(max(0.0, deadline - time.monotonic())):
                return False
        return True


def _release(task: Task) -> None:
    """Cut the task loose once its outcome arrived: the closures connected to its
    signals hold the task, its group and the callbacks' captures (a closed
    document's views) in C++, where Python's collector cannot see the cycle."""
    task.fn, task.args = None, ()
    for signal in [task.signals.ended, *task.connected]:
        try:
            signal.disconnect()
        except (RuntimeError, TypeError):  # the signals object is gone already
            pass
