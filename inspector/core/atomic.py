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

`check_output_path` is the one rule every command that writes a file applies to
its output before doing any work (retarget, report, export; the window's Export
and Retarget through them): never an input of the same command, never a folder,
a symbolic link, a device, a FIFO or a socket (the final rename would replace the
node itself: as root, `-o /dev/null` would replace /dev/null), in a folder that
exists and is writable. `AtomicWriter.commit` checks the target again right
before the rename.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from inspector.core.errors import InspectorError

_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
# The mode a plain open() gives (0o666 & umask); mkstemp's 0600 would surprise.
_MODE = 0o666


class OutputPathError(InspectorError):
    """An output path a command must not write (an input, a device, a link...)."""


_KINDS = ((stat.S_ISLNK, "a symbolic link (the write would replace the link, not the "
           "file it names; give that file's own path)"),
          (stat.S_ISDIR, "a folder"),
          (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"))


def _not_a_file(out: Path) -> str | None:
    """What `out` is when it exists and is not a regular file (lstat: a link is a link)."""
    try:
        mode = os.lstat(out).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be examined: {exc.strerror or exc}"
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop
        return False


def check_output_path(output: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str] | None] = (),
                      suffix: str | None = None, suffix_why: str = "",
                      error: type[Exception] = OutputPathError) -> Path:
    """`output` as a Path when a command may write it, else raises `error(message)`.
    `inputs`: the files the command reads (the output may be none of them, by
    name, by link or by hard link); `suffix`: the ending the output must have."""
    out = Path(output)
    shown = repr(str(out))
    if suffix is not None and out.suffix != suffix:
        raise error(f"output {shown} must end in {suffix}" + (f" ({suffix_why})" if suffix_why else ""))
    kind = _not_a_file(out)
    if kind == "a folder":
        raise error(f"output {shown} is a folder (give a file name, e.g. "
                    f"{str(out / ('out' + (suffix or '.html')))!r})")
    if kind is not None:
        raise error(f"output {shown} is {kind}: only a regular file is replaced; "
                    "choose another output name")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise error(f"cannot write {shown} (folder {str(parent)!r} does not exist)")
    if not os.access(parent, os.W_OK):
        raise error(f"cannot write {shown} (folder {str(parent)!r} is not writable)")
    for given in inputs:
        if given is not None and _same_file(out, Path(given)):
            raise error(f"output {shown} is the input {str(given)!r}: a command never "
                        "overwrites its input; choose another output name")
    return out


def refuse_unreplaceable(target: Path) -> None:
    """Right before a rename onto `target`: it must still be absent or a regular file
    (something may have put a link or a FIFO there since the command started)."""
    kind = _not_a_file(target)
    if kind is not None:
        raise OutputPathError(f"output {str(target)!r} is now {kind}: nothing was written")


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
            refuse_unreplaceable(self.target)
            _link_fd(self._fp.fileno(), named)
            try:
                os.replace(named, self.target)
            except BaseException:
                with contextlib.suppress(OSError):
                    named.unlink()
                raise
        else:
            assert self._partial is not None
            refuse_unreplaceable(self.target)
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


def write_bytes(target: str | os.PathLike[str], data: bytes, *,
                inputs: Iterable[str | os.PathLike[str] | None] = (),
                error: type[Exception] = OutputPathError) -> Path:
    """`data` as the whole of `target`, after `check_output_path`, through an
    AtomicWriter: the old file or the complete new one, nothing else, ever (and a
    FIFO at `target` is refused, not opened: that open would block forever)."""
    out = check_output_path(target, inputs=inputs, error=error)
    writer = AtomicWriter(out)
    with writer as fp:
        fp.write(data)
        writer.commit()
    return out
