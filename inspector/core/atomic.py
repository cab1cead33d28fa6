"""Write a file so that nothing is left behind, whatever kills the writer.

On Linux the data goes into an *unnamed* file (`O_TMPFILE` in the target's
folder): it has no name until the very end, so a SIGKILL, a crash or a power cut
mid-write leaves nothing to clean up; the kernel frees it with the last file
descriptor. At the end it is given a name with `linkat` (through
`/proc/self/fd/N`) and renamed onto the target, so the target is either the old
file or the complete new one.

Elsewhere (or where the filesystem refuses `O_TMPFILE`: some network and FUSE
filesystems), a named partial file `.NAME.PID.HEX.partial` beside the target is
used; error and signal paths remove it, and `remove_stale_partials` removes the
ones of writers that are gone (by pid) before the next write to that target.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
# The mode a plain open() gives (0o666 & umask); mkstemp's 0600 would surprise.
_MODE = 0o666


def partial_name(target: Path, pid: int | None = None) -> Path:
    """A named partial file beside `target` for the writer `pid` (default: us)."""
    pid = os.getpid() if pid is None else pid
    return target.with_name(f".{target.name}.{pid}.{secrets.token_hex(4)}.partial")


def _partial_pattern(target: Path) -> re.Pattern[str]:
    # .NAME.PID.HEX.partial (files) and .NAME.PID.partial (export's folders)
    return re.compile(re.escape(f".{target.name}.") + r"([0-9]{1,10})(?:\.[0-9a-f]{8})?\.partial")


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process: leave its files alone
    return True


def remove_stale_partials(target: str | os.PathLike[str]) -> list[Path]:
    """Remove partial files and folders beside `target` whose writer is gone.
    Returns what was removed. A partial of a live process is never touched."""
    target = Path(target)
    pattern = _partial_pattern(target)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent if str(target.parent) else "."))
    except OSError:
        return removed
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if not m or pid_alive(int(m.group(1))):
            continue
        path = Path(entry.path)
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed


class AtomicWriter:
    """`with AtomicWriter(target) as fp: fp.write(...)`; call `commit()` inside the
    block to publish the file. Leaving the block without commit (an exception, a
    cancel) discards it. `unnamed` says whether the O_TMPFILE path was taken."""

    def __init__(self, target: str | os.PathLike[str], *, unnamed: bool = True) -> None:
        self.target = Path(target)
        self.unnamed = False
        self._partial: Path | None = None
        self._fp: BinaryIO | None = None
        self._try_unnamed = unnamed and bool(_O_TMPFILE) and os.path.isdir("/proc/self/fd")

    def __enter__(self) -> BinaryIO:
        remove_stale_partials(self.target)
        folder = str(self.target.parent) or "."
        fd = -1
        if self._try_unnamed:
            try:
                fd = os.open(folder, _O_TMPFILE | os.O_RDWR, _MODE)
                self.unnamed = True
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                    raise  # a real problem with the folder (EACCES, ENOSPC, ...)
        if fd < 0:
            self._partial = partial_name(self.target)
            # O_EXCL: never follow or reuse something already there.
            fd = os.open(self._partial, os.O_RDWR | os.O_CREAT | os.O_EXCL
                         | getattr(os, "O_BINARY", 0), _MODE)
        self._fp = os.fdopen(fd, "w+b")
        return self._fp

    def commit(self) -> None:
        """Flush to disk and give the file its name (atomically replacing the target)."""
        assert self._fp is not None
        self._fp.flush()
        os.fsync(self._fp.fileno())
        if self.unnamed:
            # linkat cannot replace a name, so link under a fresh partial name and
            # rename that onto the target: the name exists for the two calls only
            # (and is a stale partial, removed next time, if we die between them).
            named = partial_name(self.target)
            _link_fd(self._fp.fileno(), named)
            try:
                os.replace(named, self.target)
            except BaseException:
                with contextlib.suppress(OSError):
                    named.unlink()
                raise
        else:
            assert self._partial is not None
            os.replace(self._partial, self.target)
            self._partial = None

    def __exit__(self, *exc: object) -> None:
        if self._fp is not None:
            with contextlib.suppress(OSError):
                self._fp.close()
        if self._partial is not None:
            with contextlib.suppress(OSError):
                self._partial.unlink()
            self._partial = None


def _link_fd(fd: int, name: Path) -> None:
    """linkat(AT_FDCWD, "/proc/self/fd/N", ..., AT_SYMLINK_FOLLOW): the unprivileged
    way to name an O_TMPFILE file. os.link calls plain link() (which would link the
    /proc symlink itself, EXDEV) unless a dir_fd is given, so pass one; the path
    being absolute, it is otherwise ignored."""
    root = os.open("/", os.O_RDONLY)
    try:
        os.link(f"/proc/self/fd/{fd}", name, src_dir_fd=root, follow_symlinks=True)
    finally:
        os.close(root)


@contextlib.contextmanager
def atomic_file(target: str | os.PathLike[str]) -> Iterator[tuple[BinaryIO, AtomicWriter]]:
    writer = AtomicWriter(target)
    with writer as fp:
        yield fp, writer
