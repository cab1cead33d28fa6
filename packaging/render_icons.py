"""Render the app icon SVG to the PNG sizes desktops and bundles ask for.

    .venv/bin/python packaging/render_icons.py

Writes resources/icons/hicolor/NxN/apps/<app id>.png (the freedesktop icon theme
layout, so the tree can be copied to ~/.local/share/icons as it is). The PNGs
are committed: run this again only after editing the SVG.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QRectF, Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inspector.resources import APP_ID, ICON_SIZES  # noqa: E402

ICONS = ROOT / "resources" / "icons" / "hicolor"


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    return image


def main() -> int:
    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 (QImage needs it)
    svg = ICONS / "scalable" / "apps" / f"{APP_ID}.svg"
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        print(f"error: {svg} is not a valid SVG for QtSvg", file=sys.stderr)
        return 2
    for size in ICON_SIZES:
        out = ICONS / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        out.parent.mkdir(parents=True, exist_ok=True)
        if not render(renderer, size).save(str(out), "PNG"):
            print(f"error: could not write {out}", file=sys.stderr)
            return 2
        print(out.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
