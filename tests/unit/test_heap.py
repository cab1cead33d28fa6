"""core/heap.py: freed memory goes back to the system when asked.

What a closed program's model freed stays in glibc's arenas (the window's tasks
build models on worker threads, whose arenas are trimmed only on request): the
same here, with a real worker thread and a few hundred MB of model-sized blocks.
"""

from __future__ import annotations

import sys
import threading

import pytest

from inspector.core.heap import give_back_freed


def _resident_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_memory_a_worker_freed_goes_back_to_the_system() -> None:
    blocks: list[bytes] = []

    def build() -> None:  # as a task builds a model: many blocks past pymalloc's 512 bytes
        blocks.extend(bytes([i % 251]) * 1000 + str(i).encode() for i in range(300_000))

    worker = threading.Thread(target=build)
    worker.start()
    worker.join()
    built = _resident_mb()
    kept = blocks[::64]  # what outlives a closed model here and there (caches, the
    blocks.clear()       # window's own objects): the arena cannot shrink from its top
    held = _resident_mb()
    assert held > built - 50, (built, held)  # freeing alone gave little back
    assert give_back_freed()
    after = _resident_mb()
    assert after < held - 200, f"resident {held:.0f} MB before the trim, {after:.0f} MB after"
    assert len(kept) == 300_000 // 64 + 1
