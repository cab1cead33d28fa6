"""Giving freed memory back to the system.

glibc's malloc keeps what a closed program's model freed in its arenas for reuse:
after a 100k-node program is closed the process stays ~400 MB above where it was
before it opened (measured: 450 MB resident with 0.5 MB of Python objects still
traced), until malloc_trim hands the free pages back (50 MB). Elsewhere (musl,
macOS, Windows) there is nothing to call, and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return libc.malloc_trim if libc is not None else None  # glibc only
    except (OSError, AttributeError):
        return None


def give_back_freed() -> bool:
    """Return the heap's free pages to the system; False where the C library
    has no way to (nothing was done)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
