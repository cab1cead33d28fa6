"""Find a stack frame's source file on this machine, and check its line.

An archive records the exporting machine's paths: absolute ones into that
machine's environment (`/home/a/.venv/lib/python3.11/site-packages/transformers/
models/gpt2/modeling_gpt2.py`), relative ones for torch's own frames
(`torch/fx/passes/runtime_assert.py`), and the user's own files. Opening only
the exact recorded path finds nothing on any other machine, so a recorded path
is tried, in order:

1. against the user's prefix mappings (recorded prefix -> local folder, as a
   debugger's source map), longest prefix first;
2. as recorded, when that file exists here;
3. below `site-packages/` / `dist-packages/`, or relative: as the same file of the
   package installed here (`importlib.util.find_spec` of its top-level package,
   which locates it without importing it);
4. below `/lib/pythonX.Y/` (the standard library): in this interpreter's stdlib.

The installed package may be another version than the exporting machine's, so
`check_line` compares the local line with the code the trace recorded and, when
they differ, looks a few lines around for it.

Pure Python: no Qt, no torch. Nothing from the archive is executed; a name
from it is only looked up on sys.path.
"""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import sysconfig
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from inspector.core.errors import InspectorError

# How far from the recorded line a moved line is still looked for.
NEARBY_LINES = 8
_PACKAGE_DIRS = ("site-packages/", "dist-packages/")
_STDLIB = re.compile(r"/lib/python3\.\d+/(?!site-packages/|dist-packages/)")
_TOP_NAME = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
# Pseudo-file systems: a path from the file could name /proc/kmsg (a "regular"
# file whose read blocks) or a device; no source code lives there.
_NOT_SOURCES = ("/proc/", "/sys/", "/dev/")
# Source files bigger than this are not read (a line check on a generated
# multi-MB file is not worth the memory).
MAX_SOURCE_BYTES = 8 * 1024 * 1024
# What a stack frame's file may be for its text to be read and shown: Python source.
# A trace from the file can name /etc/shadow, ~/.ssh/id_rsa, notes.txt, or `x.py`
# linking to any of them; the name and the file it resolves to must both say Python.
SOURCE_SUFFIXES = (".py", ".pyi", ".pyx")


class SourceMapError(InspectorError):
    """A path mapping the user typed cannot be used."""


@dataclass(frozen=True, slots=True)
class PathMapping:
    recorded: str  # prefix as the archive records it, e.g. /home/a/proj/
    local: str  # folder here that holds the same files

    @classmethod
    def parse(cls, text: str) -> PathMapping:
        """`RECORDED=LOCAL`, as `--map` takes it."""
        recorded, sep, local = text.partition("=")
        if not sep or not recorded or not local:
            raise SourceMapError(f"bad path mapping {text!r} (expected RECORDED_PREFIX=LOCAL_FOLDER)")
        if not os.path.isdir(local):
            raise SourceMapError(f"bad path mapping {text!r} ({local!r} is not a folder here)")
        return cls(recorded, local)

    def apply(self, path: str) -> str | None:
        prefix = self.recorded.rstrip("/")
        if path == prefix:
            return self.local
        if path.startswith(prefix + "/"):
            return os.path.join(self.local, path[len(prefix) + 1:])
        return None


@dataclass(frozen=True, slots=True)
class LineCheck:
    """The local line against the recorded code.

    status: "same" (the line reads as recorded), "moved" (found `line - recorded`
    lines away: another version of the file), "differs" (not found nearby),
    "unchecked" (the trace recorded no code, or the file cannot be read)."""

    status: str
    line: int  # where the code is in the local file (the recorded line unless moved)
    local_code: str  # the local file's text at `line` ("" when unreadable)

    @property
    def message(self) -> str:
        if self.status == "moved":
            return f"the local file has this code at line {self.line} (another version)"
        if self.status == "differs":
            return "the local line differs from the recorded code (another version of the file)"
        return ""

    @property
    def note(self) -> str:
        """What the `node` command and the window's Source pane say beside the
        local file (the same words in both): "" when the line reads as recorded."""
        return local_note(self.status, self.line)


def local_note(status: str, line: int | None) -> str:
    """The note about a local file whose line is not the recorded code (LineCheck)."""
    if status == "moved":
        return f"this code is at line {line} there: another version"
    if status == "differs":
        return "the local line differs: another version"
    return ""


def _default_find_top(name: str) -> str | None:
    """The folder (package) or file (module) of top-level `name` here, unimported."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        for where in spec.submodule_search_locations:
            return str(where)
    if spec.origin and os.path.isfile(spec.origin):
        return spec.origin
    return None


class SourceResolver:
    """Recorded path -> local file (or None). Results are cached per path."""

    def __init__(self, mappings: Iterable[PathMapping] = (), *,
                 find_top: Callable[[str], str | None] = _default_find_top,
                 stdlib: str | None = None) -> None:
        # longest recorded prefix first, so a mapping for a subfolder wins
        self.mappings = sorted(mappings, key=lambda m: len(m.recorded), reverse=True)
        self._find_top = find_top
        self._stdlib = stdlib if stdlib is not None else sysconfig.get_paths().get("stdlib", "")
        self._cache: dict[str, str | None] = {}

    def resolve(self, recorded: str) -> str | None:
        if recorded not in self._cache:
            self._cache[recorded] = self._resolve(recorded)
        return self._cache[recorded]

    def _resolve(self, recorded: str) -> str | None:
        path = recorded.replace("\\", "/")
        if not path or path.startswith("<") or "\x00" in path:
            return None  # <frozen ...>, <string>, <eval_with_key>: no file anywhere
        for mapping in self.mappings:
            mapped = mapping.apply(path)
            if mapped is not None and _existing(mapped):
                return mapped
        if os.path.isabs(path) and _existing(path):
            return path
        for marker in _PACKAGE_DIRS:
            at = path.rfind(marker)
            if at >= 0:
                return self._in_package(path[at + len(marker):])
        if not os.path.isabs(path):
            return self._in_package(path)
        m = _STDLIB.search(path)
        if m and self._stdlib:
            return _existing(os.path.join(self._stdlib, path[m.end():]))
        return None

    def _in_package(self, rel: str) -> str | None:
        """`transformers/models/gpt2/modeling_gpt2.py` -> that file of the
        transformers installed here; `six.py` -> the module file."""
        parts = [p for p in rel.split("/") if p]
        if not parts or ".." in parts:
            return None
        top = parts[0][:-3] if len(parts) == 1 and parts[0].endswith(".py") else parts[0]
        if not _TOP_NAME.match(top):
            return None
        where = self._find_top(top)
        if where is None:
            return None
        if len(parts) == 1:
            return _existing(where)
        return _existing(os.path.join(where, *parts[1:]))


def source_file(path: str) -> str | None:
    """The real path of `path` when it is a file whose text may be read and shown
    for a stack frame, else None. The one rule of the `node` command and the
    window's Source pane: the recorded name AND the file it resolves to (links
    followed) end in .py/.pyi/.pyx, it is a regular file, outside /proc, /sys and
    /dev, and at most MAX_SOURCE_BYTES."""
    try:
        real = os.path.realpath(path)
        if (not _is_source_name(path) or not _is_source_name(real)
                or real.startswith(_NOT_SOURCES)):
            return None
        st = os.stat(real)
    except (OSError, ValueError):  # ValueError: a NUL in the recorded path
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
        return None
    return real


def why_not_shown(path: str) -> str:
    """Why no text of `path` is shown, in words for a person (after `source_file`
    said None): it is absent, or it is there and not a Python source we read."""
    try:
        there = os.path.lexists(path)
    except (OSError, ValueError):
        there = False
    if not there:
        return "not found on this machine"
    return ("not shown: only Python source files (.py, .pyi, .pyx; a regular file of at most "
            f"{MAX_SOURCE_BYTES >> 20} MiB, its link target too) are read")


def _is_source_name(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in SOURCE_SUFFIXES


def read_source_text(path: str) -> str | None:
    """The text of `path` when `source_file` allows it (decoded leniently), else None.
    Opened without blocking and checked again on the open file: a name swapped for
    a FIFO or a device after the check is still not read."""
    real = source_file(path)
    if real is None:
        return None
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fp:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
                return None
            data = fp.read(MAX_SOURCE_BYTES + 1)  # a file that grew meanwhile stays bounded
        except OSError:
            return None
    if len(data) > MAX_SOURCE_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def _existing(path: str) -> str | None:
    return path if source_file(path) is not None else None


@lru_cache(maxsize=64)
def _read_lines(path: str, mtime_ns: int) -> tuple[str, ...] | None:
    del mtime_ns  # part of the cache key only: an edited file is read again
    text = read_source_text(path)
    return None if text is None else tuple(text.splitlines())


def source_lines(path: str) -> Sequence[str] | None:
    """The file's lines (cached until it changes), or None when `source_file`
    does not allow it."""
    real = source_file(path)
    if real is None:
        return None
    try:
        st = os.stat(real)
    except OSError:
        return None
    return _read_lines(real, st.st_mtime_ns)


def check_line(path: str, line: int, code: str, nearby: int = NEARBY_LINES) -> LineCheck:
    """Compare line `line` (1-based) of local `path` with the recorded `code`."""
    lines = source_lines(path)
    if lines is None:
        return LineCheck("unchecked", line, "")
    here = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    want = code.strip()
    if not want:
        return LineCheck("unchecked", line, here)
    if here == want:
        return LineCheck("same", line, here)
    # nearest first: line+1, line-1, line+2, ...
    for step in range(1, nearby + 1):
        for candidate in (line + step, line - step):
            if 0 < candidate <= len(lines) and lines[candidate - 1].strip() == want:
                return LineCheck("moved", candidate, want)
    return LineCheck("differs", line, here)
