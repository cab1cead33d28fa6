"""Pure-Python work (audit, retarget, reading range tables) off the GUI thread.

`Work` runs fn(*args) in a QThreadPool thread; the result or the error comes back to
the GUI thread as a queued signal. Errors a user can cause (InspectorError) arrive as
their message; anything else as "internal error: ..." with the traceback as details.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from inspector.core.errors import InspectorError


class WorkSignals(QObject):
    done = Signal(object)
    failed = Signal(str, str)
    progress = Signal(float)


class Work(QRunnable):
    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        super().__init__()
        self.fn, self.args = fn, args
        self.signals = WorkSignals()
        self.setAutoDelete(False)  # we keep it until its signal has been delivered

    def run(self) -> None:
        try:
            value = self.fn(*self.args)
        except InspectorError as exc:
            self._emit(self.signals.failed, str(exc), traceback.format_exc())
        except Exception as exc:  # a bug of ours: still a message, never a crash
            self._emit(self.signals.failed, f"internal error: {type(exc).__name__}: {exc}",
                       traceback.format_exc())
        else:
            self._emit(self.signals.done, value)

    @staticmethod
    def _emit(signal: Any, *args: Any) -> None:
        try:
            signal.emit(*args)
        except RuntimeError:  # the receiver's side is gone (window closed meanwhile)
            pass


class WorkQueue(QObject):
    """A panel's own pool (one thread): closing the panel waits for exactly its work."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._live: set[Work] = set()

    def submit(self, work: Work, on_done: Callable[[Any], Any],
               on_fail: Callable[[str, str], Any]) -> Work:
        self._live.add(work)
        work.signals.done.connect(on_done)
        work.signals.failed.connect(on_fail)
        work.signals.done.connect(lambda _v: self._live.discard(work))
        work.signals.failed.connect(lambda *_: self._live.discard(work))
        self.pool.start(work)
        return work

    def busy(self) -> bool:
        return bool(self._live)

    def wait(self, timeout_ms: int = 5000) -> bool:
        return self.pool.waitForDone(timeout_ms)
