"""Pausing Python's cyclic garbage collector while a big structure is built.

Parsing and listing a program allocate millions of small containers and free
almost none: the cycle collector would rescan them over and over for nothing to
collect (measured: orjson on 200 MB took 22 s with it, 5 s without; about half
the parse time of a 100k-node program). One helper for every such builder, so
nested and concurrent pauses (the window's tasks and the audit share an
archive) agree on when the collector comes back.

A Qt process hands collection to its GUI thread (collect_manually, ui/gui_gc.py):
a collection that starts in a worker thread can free a Qt wrapper there and crash
the process. Then no pause ever turns the automatic collector back on.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = True
_freeze = False
_manual = False  # collection belongs to one thread's timer (ui/gui_gc.py)


@contextmanager
def gc_paused(*, freeze: bool = False) -> Iterator[None]:
    """Disable the cyclic GC until the outermost pause ends, then restore it as
    it was. freeze=True (the window) also freezes what was built when the last
    pause ends, so later collections skip it and scrolling never hits a
    multi-second collection; release_frozen undoes that after a tab closes."""
    global _depth, _was_enabled, _freeze
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
        _depth += 1
        _freeze = _freeze or freeze
        gc.disable()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                if _freeze:
                    gc.freeze()
                    _freeze = False
                if _was_enabled and not _manual:
                    gc.enable()


def paused() -> bool:
    """Whether some builder has the collector paused right now."""
    return _depth > 0


def collect_manually(on: bool) -> None:
    """on=True: the automatic collector stays off for good and the caller collects
    (from its own thread, ui/gui_gc.py); off=False gives collection back to Python
    (once no pause is open)."""
    global _manual, _was_enabled
    with _lock:
        _manual = on
        if on:
            gc.disable()
        elif _depth == 0:
            gc.enable()
        else:
            _was_enabled = True  # the outermost pause turns it back on


def collecting_manually() -> bool:
    """Whether collection belongs to one thread's timer (collect_manually(True))."""
    return _manual


def release_frozen() -> None:
    """After closing a tab: let the collector see (and free) what was frozen."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
