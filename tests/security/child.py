"""Run `python -m inspector ...` as a real child process and measure it.

Peak memory and CPU time come from os.wait4 on that one child, taken by a tiny
launcher process rather than by pytest itself: on Linux a child's ru_maxrss
starts from its parent's resident size at fork (kept across exec), so measured
from a pytest that holds torch every child would "use" 500+ MB. The deadline is
enforced by a timer that kills the launcher's whole process group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_LAUNCHER = r"""
import json, os, sys
argv = [sys.executable, "-m", "inspector", *sys.argv[2:]]
pid = os.posix_spawn(sys.executable, argv, os.environ)
_, status, ru = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fp:
    json.dump({"cpu": ru.ru_utime + ru.ru_stime, "maxrss_kb": ru.ru_maxrss}, fp)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


@dataclass
class ChildResult:
    args: list[str]
    rc: int
    stdout_size: int
    stdout_head: bytes
    stdout_escapes: bool  # ESC or BEL anywhere on stdout (terminal control sequences)
    stderr: bytes
    seconds: float  # wall clock
    cpu_seconds: float  # user + system: what the file costs, whatever else runs
    max_rss_mb: float
    killed: bool

    def describe(self) -> str:
        return (f"`{' '.join(self.args)}` rc={self.rc} {self.seconds:.2f}s "
                f"(cpu {self.cpu_seconds:.2f}s) "
                f"{self.max_rss_mb:.0f}MB stdout={self.stdout_size}B "
                f"stderr={self.stderr[-2000:].decode('utf-8', 'replace')!r}")


def run_inspector(args: list[str], *, timeout: float, cwd: Path) -> ChildResult:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PT2I_DEBUG", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as scratch:
        stats = Path(scratch) / "rusage.json"
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(stats), *args],
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                env=env, start_new_session=True)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, _ = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        usage = json.loads(stats.read_text()) if stats.exists() else {"cpu": seconds, "maxrss_kb": 0}
        size = out.tell()
        out.seek(0)
        head = out.read(4096)
        out.seek(0)
        escapes = False
        while chunk := out.read(1 << 20):
            escapes = escapes or b"\x1b" in chunk or b"\x07" in chunk
        err.seek(0)
        stderr = err.read()
    return ChildResult(args, proc.returncode, size, head, escapes, stderr, seconds,
                       usage["cpu"], usage["maxrss_kb"] / 1024, killed.is_set())
