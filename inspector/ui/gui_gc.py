"""Python's cycle collector, run on the GUI thread only.

Python collects in whichever thread happens to allocate past a threshold. In a
window whose tasks run Python on a thread pool (ui/tasks.py), that can be a worker
thread, and a collection there frees whatever Qt wrappers sit in unreachable
cycles: a closed panel's widgets, a finished task's signal object. Qt objects must
die on their own thread, and the process segfaults ("Garbage-collecting" on a
worker's stack, seen in CI). So once the first task starts, the automatic
collector is switched off and a GUI-thread timer collects instead, generation by
generation with Python's own thresholds (the scheme of pyqtgraph's
GarbageCollector, which cannot be stopped or told to wait while a builder has
collection paused: core/gcpause.py).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QObject, QTimer

from inspector.core import gcpause

INTERVAL_MS = 500


class GuiThreadCollector(QObject):
    """Collects on a timer of the thread it was made on (the GUI thread)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thresholds = gc.get_threshold()
        self._timer = QTimer(self)
        self._timer.setInterval(INTERVAL_MS)
        self._timer.timeout.connect(self.collect_due)
        gcpause.collect_manually(True)
        self._timer.start()

    def collect_due(self) -> int:
        """One step of what the automatic collector would have done by now; waits
        while a builder has collection paused (its millions of new objects would
        be rescanned for nothing). The number of unreachable objects found."""
        if gcpause.paused():
            return 0
        counts = gc.get_count()
        found = 0
        for generation in range(3):
            if counts[generation] <= self._thresholds[generation]:
                break
            found += gc.collect(generation)
        return found

    def stop(self) -> None:
        """Collect what is left here, on the GUI thread, then give collection back."""
        self._timer.stop()
        gc.collect()
        gcpause.collect_manually(False)


_collector: GuiThreadCollector | None = None


def collect_on_gui_thread() -> None:
    """From the GUI thread, before Python first runs on a worker thread (idempotent)."""
    global _collector
    if _collector is None:
        _collector = GuiThreadCollector(QCoreApplication.instance())


def give_back_collection() -> None:
    """Undo collect_on_gui_thread (tests, between windows: the next test's code may
    run without an event loop to drive the timer)."""
    global _collector
    if _collector is not None:
        collector, _collector = _collector, None
        collector.stop()
        collector.deleteLater()
