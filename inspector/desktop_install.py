"""Put pt2-inspector in the desktop's launcher and make it the app for .pt2 files.

    python -m inspector.desktop_install             # for this user (~/.local/share)
    python -m inspector.desktop_install --uninstall
    DIST/pt2-inspector-viewer -m inspector.desktop_install   # from a bundle

A wheel cannot do this itself: pip installs into a virtual environment the desktop
never looks at. This copies the shipped .desktop entry, icons, AppStream metadata and
MIME package into the freedesktop data folder (XDG_DATA_HOME, else ~/.local/share) and
refreshes the caches whose tools are installed. When the `pt2-inspector` found next
to this Python (or the bundle's program) is not on PATH, the launcher gets its
absolute path. Each file is written to a temporary name and renamed into place.
No Qt, no torch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from inspector import resources
from inspector.resources import APP_ID, ICON_SIZES

COMMAND = "pt2-inspector"


def default_data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def find_command() -> str:
    """What the launcher runs: the bare name if PATH finds this install, else a path."""
    if getattr(sys, "frozen", False):  # a PyInstaller bundle: its own program
        return sys.executable
    script_dir = Path(sys.executable).parent
    candidates = [script_dir / COMMAND, script_dir / f"{COMMAND}.exe"]
    ours = next((c for c in candidates if c.is_file()), None)
    on_path = shutil.which(COMMAND)
    if ours is None:
        return on_path or COMMAND
    if on_path and Path(on_path).resolve() == ours.resolve():
        return COMMAND
    return str(ours)


def quote_exec(program: str) -> str:
    """Quote a program path for a .desktop Exec key (Desktop Entry spec, 'Exec key')."""
    if not any(c in program for c in ' \t\n"\'\\><~|&;$*?#()`'):
        return program
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in program)
    # A .desktop value also unescapes backslashes once: double them again.
    return '"' + escaped.replace("\\", "\\\\") + '"'


def _desktop_text(command: str) -> str:
    lines = []
    for line in resources.desktop_file().read_text(encoding="utf-8").splitlines():
        if line.startswith("Exec="):
            args = line.split(None, 1)[1] if " " in line else ""
            line = f"Exec={quote_exec(command)} {args}".rstrip()
        elif line.startswith("TryExec="):
            # TryExec takes a plain path or name, never quoted.
            line = f"TryExec={command}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _targets() -> dict[str, Path]:
    """Destination (relative to the data folder) -> shipped source file."""
    targets = {
        f"applications/{APP_ID}.desktop": resources.desktop_file(),
        f"metainfo/{APP_ID}.metainfo.xml": resources.metainfo_file(),
        f"mime/packages/{APP_ID}.xml": resources.mime_file(),
        f"icons/hicolor/scalable/apps/{APP_ID}.svg": resources.icon_svg(),
    }
    for size in ICON_SIZES:
        targets[f"icons/hicolor/{size}x{size}/apps/{APP_ID}.png"] = resources.icon_png(size)
    return targets


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _refresh_caches(data_home: Path) -> list[str]:
    """Run the cache tools that exist; return what ran (for the user's information)."""
    jobs = [
        ("update-mime-database", [str(data_home / "mime")]),
        ("update-desktop-database", [str(data_home / "applications")]),
        ("gtk-update-icon-cache", ["-f", "-t", "-q", str(data_home / "icons" / "hicolor")]),
    ]
    ran = []
    for tool, args in jobs:
        exe = shutil.which(tool)
        if exe is None:
            continue
        subprocess.run([exe, *args], capture_output=True, timeout=120, check=False)
        ran.append(tool)
    return ran


def install(data_home: Path, command: str | None = None) -> list[Path]:
    """Copy the desktop files into `data_home`; returns the files written."""
    command = command or find_command()
    written = []
    for relative, source in _targets().items():
        target = data_home / relative
        data = source.read_bytes()
        if relative.startswith("applications/"):
            data = _desktop_text(command).encode("utf-8")
        _write(target, data)
        written.append(target)
    _refresh_caches(data_home)
    return written


def uninstall(data_home: Path) -> list[Path]:
    removed = []
    for relative in _targets():
        target = data_home / relative
        if target.exists():
            target.unlink()
            removed.append(target)
    _refresh_caches(data_home)
    return removed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m inspector.desktop_install",
        description="Add pt2-inspector to the desktop launcher and open .pt2 files with it.")
    parser.add_argument("--data-home", type=Path, default=None,
                        help="freedesktop data folder (default: $XDG_DATA_HOME or ~/.local/share)")
    parser.add_argument("--uninstall", action="store_true", help="remove what install added")
    args = parser.parse_args(argv)
    data_home = args.data_home or default_data_home()
    try:
        if args.uninstall:
            files = uninstall(data_home)
            print(f"removed {len(files)} files from {data_home}")
        else:
            command = find_command()
            files = install(data_home, command)
            print(f"installed {len(files)} files into {data_home}; the launcher runs {command}")
    except (OSError, resources.ResourceMissingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
