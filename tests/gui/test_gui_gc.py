"""Cycle collection happens on the GUI thread only (ui/gui_gc.py).

CI crashed with "Fatal Python error: Segmentation fault ... Garbage-collecting" on
a task's worker thread: a collection that starts there frees Qt wrappers on the
wrong thread. Objects in garbage cycles record the thread that freed them."""

from __future__ import annotations

import gc
import threading

from inspector.core.gcpause import gc_paused
from inspector.ui.tasks import TaskGroup


class Cyclic:
    freed_on: list[str] = []

    def __init__(self) -> None:
        self.me = self  # only the cycle collector can free it

    def __del__(self) -> None:
        Cyclic.freed_on.append(threading.current_thread().name)


def churn(cycles: int) -> list[list[int]]:
    """Garbage cycles, then allocations far past every collection threshold (the
    point where Python would collect, in this thread), kept (a parse's result)."""
    for _ in range(cycles):
        Cyclic()
    with gc_paused():  # a builder's pause ends on the worker, as a parse's does
        pass
    kept = [[] for _ in range(300_000)]
    return kept


def test_cycles_made_on_a_worker_are_freed_on_the_gui_thread(qtbot):
    Cyclic.freed_on = []
    gc.collect()
    group = TaskGroup()
    results: list[list[list[int]]] = []
    group.start(churn, 50, on_done=results.append)
    assert not gc.isenabled()  # collection left to the GUI thread's timer
    qtbot.waitUntil(lambda: bool(results) and len(Cyclic.freed_on) == 50, timeout=15000)
    assert set(Cyclic.freed_on) == {threading.main_thread().name}


def test_collection_waits_while_a_builder_has_it_paused(qtbot):
    from inspector.ui.gui_gc import GuiThreadCollector, give_back_collection

    collector = GuiThreadCollector()
    try:
        Cyclic.freed_on = []
        for _ in range(2000):  # past generation 0's threshold
            Cyclic()
        with gc_paused():
            assert collector.collect_due() == 0
            assert Cyclic.freed_on == []
        assert collector.collect_due() > 0
        assert len(Cyclic.freed_on) == 2000
    finally:
        collector.stop()
        give_back_collection()
    assert gc.isenabled()
