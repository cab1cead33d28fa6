"""PySide6 widgets: the only package that imports Qt."""

from inspector.ui import pyside_refcounts as _pyside_refcounts

_pyside_refcounts.apply()  # before any widget runs: see pyside_refcounts.py
