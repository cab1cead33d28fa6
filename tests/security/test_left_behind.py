"""Nothing is left behind, whatever kills a writer (issue 18).

Real processes, killed at random moments while they write:
- `retarget` (in the CLI process) writes through an unnamed O_TMPFILE file: no
  name appears in the target folder while it runs, and SIGKILL at any moment
  leaves either nothing or the complete archive; SIGTERM and SIGHUP end it with
  one `error:` line and nothing written;
- `export` (torch in a child) stages a partial folder torch can name; the CLI
  removes it when the child is SIGKILLed mid-save, the child removes it when the
  CLI is SIGKILLed (the child gets SIGTERM), and a later write removes the
  partials of writers that are gone.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from hostile_corpus import Base
from inspector.core.archive import open_archive
from inspector.core.atomic import AtomicWriter, remove_stale_partials

REPO = Path(__file__).resolve().parents[2]
BIG_MB = 160  # a copy that takes long enough to be killed in the middle


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PT2I_DEBUG", None)
    return env


def _spawn(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "inspector", *args], cwd=cwd, env=_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


@pytest.fixture(scope="module")
def big_archive(base: Base, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base archive plus a 160 MB stored record (weights are copied as they are)."""
    path = tmp_path_factory.mktemp("big") / "big.pt2"
    with zipfile.ZipFile(path, "w") as zf:
        for rel, data in base.entries:
            zf.writestr(base.top + rel, data)
        with zf.open(base.top + "data/weights/weight_big", "w", force_zip64=True) as fp:
            chunk = os.urandom(1 << 20)
            for _ in range(BIG_MB):
                fp.write(chunk)
    return path


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_retarget_writes_no_named_file_until_done(big_archive: Path, tmp_path: Path) -> None:
    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE on this platform: the named-partial fallback is used")
    out = tmp_path / "out.pt2"
    proc = _spawn(["retarget", str(big_archive), "--device", "cuda", "-o", str(out)], tmp_path)
    seen: set[str] = set()
    while proc.poll() is None:
        seen.update(n for n in _leftovers(tmp_path) if n != "out.pt2")
        time.sleep(0.002)
    assert proc.returncode == 0, proc.stderr.read().decode()
    # the name exists only between linkat and rename: a poll every 2 ms almost never sees it
    assert len(seen) <= 1, f"named partial files appeared while writing: {seen}"
    assert _leftovers(tmp_path) == ["out.pt2"]


@pytest.mark.parametrize("sig", [signal.SIGKILL] * 8 + [signal.SIGTERM] * 3 + [signal.SIGHUP] * 3,
                         ids=lambda s: signal.Signals(s).name)
def test_retarget_killed_at_a_random_moment_leaves_nothing(big_archive: Path, tmp_path: Path,
                                                            sig: int) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "retargeted.pt2"
    proc = _spawn(["retarget", str(big_archive), "--device", "cuda", "-o", str(out)], tmp_path)
    # Import takes ~0.3 s and the copy about as long again: kill anywhere in there.
    time.sleep(random.uniform(0.05, 1.5))
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, sig)
    _, stderr = proc.communicate(timeout=60)
    left = _leftovers(out_dir)
    if proc.returncode == 0 or left == ["retargeted.pt2"]:
        # it finished first, or the signal landed between naming the finished file
        # (linkat) and exiting: either way the archive is whole, never half-written
        assert left == ["retargeted.pt2"]
        with open_archive(out) as archive:
            assert archive.record("data/weights/weight_big").size == BIG_MB << 20
        return
    assert left == [], f"killed by {signal.Signals(sig).name}: left {left}"
    if sig != signal.SIGKILL and killed:
        lines = stderr.decode().splitlines()
        # Python may still be importing when the signal lands (default action, before
        # our handler): then there is no message, only the exit status.
        assert proc.returncode in (128 + sig, -sig), (proc.returncode, lines)
        if proc.returncode == 128 + sig:
            assert len(lines) == 1 and lines[0].startswith("error: terminated"), lines


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _export(out: Path, cwd: Path) -> subprocess.Popen[bytes]:
    return _spawn(["export", "--preset", "tiny", "--batch", "1:8", "-o", str(out)], cwd)


def _wait_for_partial(folder: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(n.endswith(".partial") for n in _leftovers(folder)):
            return True
        time.sleep(0.005)
    return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
@pytest.mark.parametrize("victim", ["child", "cli"])
def test_export_killed_while_saving_leaves_nothing(tmp_path: Path, victim: str) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "toy.pt2"
    proc = _export(out, tmp_path)
    try:
        assert _wait_for_partial(out_dir, proc), "the export never started saving"
        time.sleep(random.uniform(0, 0.2))  # somewhere inside torch's save
        children = _children(proc.pid)
        if victim == "child":
            for pid in children:
                os.kill(pid, signal.SIGKILL)
            _, stderr = proc.communicate(timeout=60)
            if proc.returncode != 0:  # the kill landed before the rename
                lines = stderr.decode().splitlines()
                assert len(lines) == 1 and lines[0].startswith("error: "), lines
        else:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
            deadline = time.monotonic() + 60  # the child gets SIGTERM and cleans up
            while any(Path(f"/proc/{pid}").exists() for pid in children):
                assert time.monotonic() < deadline, "the export child outlived its parent"
                time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    left = _leftovers(out_dir)
    assert left in ([], ["toy.pt2"]), f"{victim} killed: left {left}"


def test_stale_partials_of_dead_writers_are_removed(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    target = tmp_path / "m.pt2"
    stale_file = tmp_path / f".m.pt2.{dead.pid}.0123abcd.partial"
    stale_dir = tmp_path / f".m.pt2.{dead.pid}.partial"
    live = tmp_path / f".m.pt2.{os.getpid()}.0123abcd.partial"
    other = tmp_path / f".other.pt2.{dead.pid}.0123abcd.partial"
    stale_file.write_bytes(b"x")
    stale_dir.mkdir()
    (stale_dir / "m.pt2").write_bytes(b"x")
    live.write_bytes(b"x")
    other.write_bytes(b"x")
    with AtomicWriter(target) as fp, pytest.raises(RuntimeError):
        fp.write(b"never published")
        raise RuntimeError("writer failed")
    assert _leftovers(tmp_path) == sorted([live.name, other.name])
    assert remove_stale_partials(tmp_path / "other.pt2") == [other]


def test_named_fallback_leaves_nothing_on_error(tmp_path: Path) -> None:
    target = tmp_path / "m.pt2"
    writer = AtomicWriter(target, unnamed=False)
    with pytest.raises(ValueError), writer as fp:
        fp.write(b"half")
        assert any(n.endswith(".partial") for n in _leftovers(tmp_path))
        raise ValueError("stop")
    assert _leftovers(tmp_path) == []
    with AtomicWriter(target, unnamed=False) as fp:
        fp.write(b"whole")
    assert _leftovers(tmp_path) == []  # no commit: discarded
    writer = AtomicWriter(target)
    with writer as fp:
        fp.write(b"whole")
        writer.commit()
    assert target.read_bytes() == b"whole" and _leftovers(tmp_path) == ["m.pt2"]
