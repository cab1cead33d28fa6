"""The application icon and desktop identity, read from the shipped resources."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QGuiApplication, QIcon

from inspector import resources


def app_icon() -> QIcon:
    """All rendered PNG sizes (crisp at 16 px), plus the SVG for anything bigger."""
    icon = QIcon()
    for size in resources.ICON_SIZES:
        icon.addFile(str(resources.icon_png(size)), QSize(size, size))
    # The SVG needs Qt's svg icon engine plugin; the PNGs above cover its absence.
    icon.addFile(str(resources.icon_svg()))
    return icon


def set_desktop_identity(app: QGuiApplication) -> None:
    """Window icon, and the .desktop id so Wayland/X11 docks group our windows
    under the launcher entry (and show its icon) instead of a generic one."""
    app.setWindowIcon(app_icon())
    app.setDesktopFileName(resources.APP_ID)
