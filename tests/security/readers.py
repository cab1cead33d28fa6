"""What torch's zip reader (miniz, `torch._C.PyTorchFileReader`) reads from a
file, next to what a zipfile-based reader reads: where the two disagree, what runs
is not what was vetted.

`disagreements(view, path)` lists the records on which torch and `view` differ:
a name one finds and the other does not, or other bytes under the same name
(torch's lookups are tried as written and case-swapped, as a config could
spell them). Two views: `ours` (inspector.core.archive: refuses, or must agree)
and `naive` (plain zipfile, top folder from the first archive_format: what the
core reader did before issue 18, and what each reader case defeats).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

from inspector.core.archive import ArchiveError, open_archive

MAX_COMPARED = 64 << 20  # never ask torch to allocate more for one record
View = dict[str, bytes | None]  # rel name -> bytes (None: listed, not readable)


def ours(path: Path) -> View | None:
    """None when the core reader refuses the file (nothing to compare)."""
    try:
        archive = open_archive(path)
    except ArchiveError:
        return None
    with archive:
        view: View = {}
        for rec in archive.records:
            try:
                view[rec.path] = archive.read_bytes(rec.path, max(rec.size, 1))
            except ArchiveError:
                view[rec.path] = None  # refused when read (bad CRC, method, size)
        return view


def naive(path: Path) -> View | None:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    with zf:
        names = [i.filename for i in zf.infolist() if not i.is_dir()]
        top = next((n[: -len("archive_format")] for n in names
                    if n == "archive_format" or n.endswith("/archive_format")), None)
        if top is None:
            return None
        view: View = {}
        for info in zf.infolist():
            if info.is_dir() or not info.filename.startswith(top):
                continue
            try:
                view[info.filename[len(top):]] = zf.read(info)
            except Exception:
                view[info.filename[len(top):]] = None
        return view


def _entry_rels(path: Path) -> set[str]:
    """Every entry's name without its first folder: names torch might be asked for."""
    try:
        with zipfile.ZipFile(path) as zf:
            return {n.split("/", 1)[1] for n in zf.namelist() if "/" in n and n.split("/", 1)[1]}
    except Exception:
        return set()


def disagreements(view_of: Callable[[Path], View | None], path: Path) -> list[str]:
    import torch

    view = view_of(path)
    if view is None:
        return []
    try:
        reader = torch._C.PyTorchFileReader(str(path))
    except Exception:
        return []  # torch cannot open it: nothing from it can run
    out: list[str] = []
    try:
        listed = {n for n in reader.get_all_records() if n and not n.endswith("/")}
    except Exception:
        listed = None  # torch refuses to list it, but its lookups still work
    if listed is not None and listed != set(view):
        out.append(f"torch lists {sorted(listed ^ set(view))[:4]} differently")
    asked = set(view) | _entry_rels(path)
    for rel in sorted(asked):
        for name in {rel, rel.swapcase()}:
            try:
                size = reader.get_record_size(name)
            except Exception:
                if name == rel and rel in view:
                    out.append(f"torch cannot find {rel!r}")
                continue
            if size > MAX_COMPARED or (name.endswith("/") and size == 0):
                continue  # too big to compare; an honest (empty) folder entry
            try:
                data = reader.get_record(name)
            except Exception:
                continue
            mine = view.get(rel, b"<absent>") if name == rel else _lookup(view, name)
            if mine is None:
                continue  # the reader refuses to read it: nothing vetted to differ from
            if mine != data:
                out.append(f"torch reads {name!r} as {len(data)} bytes unlike the reader's "
                           f"{'absent record' if mine == b'<absent>' else f'{len(mine)} bytes'}")
    return out


def _lookup(view: View, name: str) -> bytes | None:
    """A case-insensitive lookup in `view` (what a case-variant name means to torch)."""
    hits = [v for k, v in view.items() if k.lower() == name.lower()]
    return hits[0] if len(hits) == 1 else b"<absent>"
