"""A scroll area's viewport made in Python.

The first time Python is handed a widget that Qt made itself as a plain QWidget (a
QAbstractScrollArea's default viewport, on `viewport()`), shiboken looks for its
most derived type through every QWidget subclass of QtWidgets, which initializes
each of them and makes their Python enums: about 70 enums and 20-50 ms, once per
process. The window's first screen (listing, Source pane) would pay it on its way
to the screen; a viewport made here is known to Python from the start.
"""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractScrollArea, QWidget


def own_viewport(area: QAbstractScrollArea) -> QWidget:
    """Give `area` a new viewport made in Python (before anything is drawn in it)."""
    viewport = QWidget(area)
    area.setViewport(viewport)
    return viewport
