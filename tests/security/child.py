"""Run `python -m inspector ...` as a real child process and measure it.

Peak memory comes from os.wait4, which returns the rusage of that one child
(RUSAGE_CHILDREN would give the largest of every child this pytest ever waited
for). The deadline is enforced by a timer that kills the child.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STUB_TEXT = "not available in this version yet"


@dataclass
class ChildResult:
    args: list[str]
    rc: int
    stdout_size: int
    stdout_head: bytes
    stderr: bytes
    seconds: float
    max_rss_mb: float
    killed: bool

    @property
    def stub(self) -> bool:
        return STUB_TEXT.encode() in self.stderr

    def describe(self) -> str:
        return (f"`{' '.join(self.args)}` rc={self.rc} {self.seconds:.2f}s "
                f"{self.max_rss_mb:.0f}MB stdout={self.stdout_size}B "
                f"stderr={self.stderr[-2000:].decode('utf-8', 'replace')!r}")


def run_inspector(args: list[str], *, timeout: float, cwd: Path) -> ChildResult:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PT2I_DEBUG", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "inspector", *args], stdout=out,
                                stderr=err, stdin=subprocess.DEVNULL, cwd=cwd, env=env)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        size = out.tell()
        out.seek(0)
        head = out.read(4096)
        err.seek(0)
        stderr = err.read()
    return ChildResult(args, proc.returncode, size, head, stderr, seconds,
                       usage.ru_maxrss / 1024, killed.is_set())
