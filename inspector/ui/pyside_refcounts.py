"""Work around PySide6 builds that drop references to None, True and False.

PySide6 6.12.0's abi3 wheels, run on Python 3.11, hand back None from void methods
(QPainter.setPen, QLabel.setText, ...) without taking a reference to it - measured
here: -1 on sys.getrefcount(None) per call - and lose references to True the same way
on pyqtgraph's paint paths. On Python 3.12+ these singletons are immortal and nothing
happens; on 3.11 their counts (a few thousand at start) reach zero after a few thousand
calls and the interpreter aborts ("Fatal Python error: none_dealloc" / "bool_dealloc"),
within seconds once a live chart paints. When the probe below sees the leak, we do
what 3.12 does: give those singletons a count so large it can never reach zero. They
are statically allocated and never freed anyway, so nothing else changes.
"""

from __future__ import annotations

import ctypes
import sys

_SINGLETONS = (None, True, False, NotImplemented, Ellipsis)
_BOOST = 1 << 40  # ~10^12 lost references: centuries of painting
_applied = False


def leaks_none() -> bool:
    """Whether void Qt calls lose references to None in this process."""
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(16):
        probe.setObjectName("probe")
    return before - sys.getrefcount(None) >= 16


def apply() -> bool:
    """Make the singletons effectively immortal when needed; True when applied."""
    global _applied
    if _applied or sys.version_info >= (3, 12) or hasattr(sys, "gettotalrefcount"):
        return _applied  # immortal already (3.12+), or a debug build (other layout)
    if not leaks_none():
        return False
    for obj in _SINGLETONS:
        # ob_refcnt is the first field of every object in release builds of CPython.
        ctypes.c_ssize_t.from_address(id(obj)).value += _BOOST
    _applied = True
    return True
