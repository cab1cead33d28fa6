"""The one GC pause: nested pauses agree, the collector comes back as it was,
and a freezing pause freezes only when the outermost pause ends."""

from __future__ import annotations

import gc

from inspector.core.gcpause import gc_paused, release_frozen


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
