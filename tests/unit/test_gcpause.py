"""The one GC pause: nested pauses agree, the collector comes back as it was,
and a freezing pause freezes only when the outermost pause ends."""

from __future__ import annotations

import gc

import pytest

from inspector.core.gcpause import collect_manually, collecting_manually, gc_paused, release_frozen


@pytest.fixture(autouse=True)
def python_collects():
    """Each test starts with collection Python's own (an xdist worker that ran the
    window's tests before has handed it to the GUI thread: ui/gui_gc.py), and leaves
    it as it found it."""
    manual, enabled = collecting_manually(), gc.isenabled()
    collect_manually(False)
    yield
    collect_manually(manual)
    if not manual and not enabled:
        gc.disable()


def test_nested_pauses_restore_the_collector():
    assert gc.isenabled()
    with gc_paused():
        with gc_paused(freeze=True):
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_freeze_when_the_outermost_pause_ends():
    release_frozen()
    gc.unfreeze()
    try:
        with gc_paused():
            with gc_paused(freeze=True):
                built = [[i] for i in range(1000)]
            assert gc.get_freeze_count() == 0  # not yet: the outer pause is open
        assert gc.get_freeze_count() >= len(built)
        with gc_paused():
            pass
        before = gc.get_freeze_count()
        gc.unfreeze()
        with gc_paused():  # no freeze asked: nothing frozen
            pass
        assert gc.get_freeze_count() == 0 < before
    finally:
        gc.unfreeze()


def test_manual_collection_is_never_turned_back_on_by_a_pause():
    from inspector.core.gcpause import collect_manually, paused

    collect_manually(True)
    try:
        assert not gc.isenabled()
        with gc_paused():
            assert paused()
        assert not paused()
        assert not gc.isenabled()  # a worker's pause must not hand collection back
    finally:
        collect_manually(False)
    assert gc.isenabled()


def test_giving_collection_back_inside_a_pause_waits_for_it():
    from inspector.core.gcpause import collect_manually

    collect_manually(True)
    with gc_paused():
        collect_manually(False)
        assert not gc.isenabled()  # the pause still holds
    assert gc.isenabled()
