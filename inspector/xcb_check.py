"""Before the window starts on X11: are the system libraries of Qt's xcb plugin here?

Qt's xcb platform plugin needs a dozen X client libraries that a stock desktop
install may lack (Debian 12: `libxcb-cursor0`, `libxcb-icccm4`,
`libxcb-keysyms1`). Without one, Qt aborts (exit 134) naming only the first
library it missed, so a user installs one package per attempt. This module
asks the dynamic linker (`ldd` on the plugin, which follows the plugin's own
dependencies) which of them are missing, all at once, before QApplication
exists, so the CLI can print one line naming every library and its package.

Qt-free and cheap: nothing here imports Qt (PySide6 is only located).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from inspector.core.errors import InspectorError

# soname -> Debian/Ubuntu package, for the message's apt line (the libraries
# Qt 6's xcb plugin links, directly or through libQt6XcbQpa).
DEBIAN_PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-glx.so.0": "libxcb-glx0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libICE.so.6": "libice6",
    "libSM.so.6": "libsm6",
}
# The one apt line the README gives for a desktop without them.
APT_LINE = ("apt-get install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 "
            "libxcb-render-util0 libxkbcommon-x11-0")
_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$")


class PlatformError(InspectorError):
    """The window cannot start on this display platform."""


def platform_name(environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """The platform Qt will try first: QT_QPA_PLATFORM's first entry, else
    Qt's Linux default (wayland in a Wayland session, xcb otherwise)."""
    value = environ.get("QT_QPA_PLATFORM", "").strip()
    if value:
        return value.split(";")[0].split(":")[0].strip().lower()
    if not sys.platform.startswith("linux"):
        return ""
    if environ.get("XDG_SESSION_TYPE") == "wayland" and environ.get("WAYLAND_DISPLAY"):
        return "wayland"
    return "xcb"


def xcb_plugin(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path | None:
    """The libqxcb.so Qt would load: from QT_QPA_PLATFORM_PLUGIN_PATH when set
    (Qt looks there first), else PySide6's own plugins folder."""
    override = environ.get("QT_QPA_PLATFORM_PLUGIN_PATH")
    if override:
        candidate = Path(override) / "libqxcb.so"
        if candidate.is_file():
            return candidate
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = Path(root) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
        if candidate.is_file():
            return candidate
    return None


def missing_libraries(library: Path) -> list[str] | None:
    """Sonames `library` (or what it links) needs that the dynamic linker cannot
    find, in ldd's order; None when this cannot be told (no ldd here)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return None
    try:
        done = subprocess.run([ldd, str(library)], capture_output=True, text=True, timeout=20,
                              env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    missing: list[str] = []
    for line in done.stdout.splitlines():
        m = _NOT_FOUND.match(line)
        if m and m.group(1) not in missing:
            missing.append(m.group(1))
    return missing


def message(missing: list[str]) -> str:
    """One line: what cannot start, every missing library, and the apt line."""
    packages = [DEBIAN_PACKAGES[s] for s in missing if s in DEBIAN_PACKAGES]
    unknown = [s for s in missing if s not in DEBIAN_PACKAGES]
    if packages:
        fix = "on Debian/Ubuntu: sudo apt-get install " + " ".join(packages)
        if unknown:
            fix += ", and what provides " + ", ".join(unknown)
    else:
        fix = "install the packages that provide them"
    return (f"cannot start the window on X11 (Qt's xcb platform plugin needs "
            f"{', '.join(missing)}, missing on this system; {fix}; "
            "headless: QT_QPA_PLATFORM=offscreen)")


def check_xcb(environ: dict[str, str] | os._Environ[str] = os.environ) -> None:
    """Raise PlatformError, naming every missing library, when the window would
    start on xcb and Qt's xcb plugin cannot be loaded; or when no X display is
    set. Does nothing on other platforms, or where it cannot tell."""
    if platform_name(environ) != "xcb":
        return
    plugin = xcb_plugin(environ)
    if plugin is not None:
        missing = missing_libraries(plugin)
        if missing:
            raise PlatformError(message(missing))
    if not environ.get("DISPLAY"):
        raise PlatformError("cannot start the window on X11 (DISPLAY is not set: no X server "
                            "to show it on; start from a desktop session, or set "
                            "QT_QPA_PLATFORM=offscreen for headless use)")
