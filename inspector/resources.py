"""Find the files pt2-inspector ships (icons, .desktop, AppStream, MIME, demo archive).

The files live in the top-level `resources/` folder of the source tree. The wheel
carries them as `inspector/_resources/` (hatchling `force-include` in
pyproject.toml), and the PyInstaller bundles put them at the same place, so an
installed copy finds them through the package with `importlib.resources`. A source
checkout or an editable install has no `inspector/_resources/`; there the package
sits next to `resources/`, which we accept only if it really is ours (it holds
our .desktop file), so a stray `site-packages/resources/` of some other project is
never taken for it.

No Qt and no torch here: the CLI (`--demo`), the UI and the tests all use it.
"""

from __future__ import annotations

import importlib.resources
from functools import lru_cache
from pathlib import Path

from inspector.core.errors import InspectorError

APP_ID = "io.github.pt2inspector.Pt2Inspector"
"""Reverse-DNS application id: .desktop and metainfo names, icon name, MIME package."""
APP_NAME = "PT2 Inspector"
MIME_TYPE = "application/x-pytorch-pt2"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
"""PNG sizes rendered from the SVG (freedesktop hicolor theme sizes)."""

_SHIPPED_DIR = "_resources"  # inside the package: wheel and bundles
_CHECKOUT_DIR = "resources"  # next to the package: source checkout, editable install


class ResourceMissingError(InspectorError):
    """A file that should ship with pt2-inspector is not there (a broken install)."""


def _is_ours(folder: Path) -> bool:
    return (folder / f"{APP_ID}.desktop").is_file()


def locate(package_dir: Path) -> Path:
    """The resources folder for a package installed at `package_dir`."""
    candidates = (package_dir / _SHIPPED_DIR, package_dir.parent / _CHECKOUT_DIR)
    for folder in candidates:
        if _is_ours(folder):
            return folder
    looked = " or ".join(str(c) for c in candidates)
    raise ResourceMissingError(
        f"pt2-inspector's resource files are missing (looked in {looked}); "
        "reinstall pt2-inspector"
    )


@lru_cache(maxsize=1)
def resources_dir() -> Path:
    """The folder holding the shipped resources, as a real path on disk."""
    # Both layouts keep plain files on disk (wheels install unzipped, PyInstaller
    # collects data files as files), so a Path is safe to hand to Qt and to users.
    return locate(Path(str(importlib.resources.files("inspector"))))


def resource_path(*parts: str) -> Path:
    """A shipped file, e.g. `resource_path("demo", "toy-tiny.pt2")`; raises if absent."""
    path = resources_dir().joinpath(*parts)
    if not path.is_file():
        raise ResourceMissingError(
            f"pt2-inspector's resource file {'/'.join(parts)} is missing "
            f"(not in {resources_dir()}); reinstall pt2-inspector"
        )
    return path


def demo_archive() -> Path:
    """The bundled demo archive opened by `pt2-inspector --demo`."""
    return resource_path("demo", "toy-tiny.pt2")


def icon_svg() -> Path:
    return resource_path("icons", "hicolor", "scalable", "apps", f"{APP_ID}.svg")


def icon_png(size: int) -> Path:
    if size not in ICON_SIZES:
        raise ValueError(f"no {size}px icon; sizes are {ICON_SIZES}")
    return resource_path("icons", "hicolor", f"{size}x{size}", "apps", f"{APP_ID}.png")


def desktop_file() -> Path:
    return resource_path(f"{APP_ID}.desktop")


def metainfo_file() -> Path:
    return resource_path(f"{APP_ID}.metainfo.xml")


def mime_file() -> Path:
    return resource_path("mime", f"{APP_ID}.xml")
