"""A disk cache for the suite's most expensive setup: the shared export corpus, the
tiny toy export, the AOTInductor compiles.

Each entry is a folder under `.cache/tests/` of the checkout (git ignores `/.cache/`;
`PT2I_TEST_CACHE=DIR` puts it elsewhere, `PT2I_TEST_CACHE=off` keeps each worker's
entries to itself for one run), named
after what it holds and a key: the versions of torch, transformers and Python and a
hash of the source files the entry was made from (for an export job: the whole
`inspector` package and the test helpers). Change any of those and the key changes,
so a stale entry is never used; older entries of the same name are removed when a
new one is written.

Safe for several pytest-xdist workers at once: the first worker to ask builds the
entry while holding a file lock (the others wait on it, then read what it wrote).
The entry is built in its final folder (a child's events name the paths it wrote)
and counts only once its `.complete` marker is written, last: a reader takes a
whole entry or none, and a build that fails or dies is removed and made again.

Entries are shared by every test and every later run: read them, never write into
them (copy a file to your own tmp_path to change it).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock  # a dependency of torch itself

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
INSPECTOR = ROOT / "inspector"
COMPLETE = ".complete"  # written last: an entry without it is being built, or died


_PRIVATE: list[Path] = []


def cache_root() -> Path:
    """Where entries live: `.cache/tests/` of the checkout, or `PT2I_TEST_CACHE`; with
    the cache off, a temporary folder of this process (removed at its exit), so a
    run still makes each entry once per worker, as session fixtures would."""
    where = os.environ.get("PT2I_TEST_CACHE", "")
    if where.lower() not in ("off", "0", "no"):
        return Path(where) if where else ROOT / ".cache" / "tests"
    if not _PRIVATE:
        _PRIVATE.append(Path(tempfile.mkdtemp(prefix="pt2i-test-cache-")))
        atexit.register(shutil.rmtree, _PRIVATE[0], True)
    return _PRIVATE[0]


def _files(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(f for f in p.rglob("*") if f.is_file()
                       and f.suffix in (".py", ".json", ".gz") and "__pycache__" not in f.parts)
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(p)
    return sorted(set(out))


def source_key(*paths: Path, extra: str = "") -> str:
    """A hash of the files under `paths` (names and bytes), the versions of torch,
    transformers and Python, and `extra` (the arguments of the build)."""
    versions = []
    for dist in ("torch", "transformers"):  # read without importing either
        try:
            versions.append(f"{dist}={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist}=none")
    h = hashlib.sha256()
    h.update(f"{' '.join(versions)} python={sys.version}\n".encode())
    h.update(extra.encode() + b"\n")
    for f in _files(paths):
        h.update(str(f.relative_to(ROOT) if f.is_relative_to(ROOT) else f).encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:20]


def complete(name: str, key: str) -> Path | None:
    """The entry's folder when it is made (no build, no wait), else None."""
    final = cache_root() / f"{name}-{key}"
    return final if (final / COMPLETE).is_file() else None


def cached_dir(name: str, key: str, build: Callable[[Path], None]) -> Path:
    """The folder `build(folder)` fills, made once for this key."""
    root = cache_root()
    final = root / f"{name}-{key}"
    done = final / COMPLETE
    if done.is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{name}.lock")):
        if done.is_file():  # another worker made it while we waited
            return final
        shutil.rmtree(final, ignore_errors=True)  # a build that died half-way
        final.mkdir()
        try:
            build(final)
            done.write_text(key)  # last: from now on readers take it
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)
            raise
        for old in root.glob(f"{name}-*"):  # entries of older keys
            if old != final and old.is_dir() and len(old.name) == len(final.name):
                shutil.rmtree(old, ignore_errors=True)
    return final


# --- the entries the suite shares ---------------------------------------------------

def toy_export(args: Sequence[str] = (), file: str = "toy-tiny-cpu.pt2"
               ) -> tuple[Path, list[dict[str, Any]]]:
    """The tiny toy (ViT encoder + GPT-2 decoder) exported on CPU by the real export
    job in a child process: `python -m inspector.jobs export --preset tiny ARGS -o
    FILE`. Keyed by the whole `inspector` package, ARGS and the file name (torch names
    the archive's top folder after it). Returns the archive, alone in its folder,
    and the events the child sent (the export tests check them)."""
    from inspector.jobs.runner import Job

    argv = ["--preset", "tiny", *args]

    def build(folder: Path) -> None:
        out = folder / "archive" / file
        out.parent.mkdir()
        child = Job("export", [*argv, "-o", str(out)])
        try:
            events = list(child.events())
        finally:
            code = child.cancel()
        if code != 0 or not out.is_file():
            raise RuntimeError(f"the toy export {argv} failed (exit {code}): "
                               f"{events[-1] if events else 'no events'}\n{child.stderr_tail()}")
        (folder / "events.json").write_text(json.dumps(events))

    name = "toy" + "".join(f"_{a.strip('-').replace(':', '-')}" for a in args)
    key = source_key(INSPECTOR, extra=f"export {' '.join(argv)} -o {file}")
    folder = cached_dir(name, key, build)
    return folder / "archive" / file, json.loads((folder / "events.json").read_text())
