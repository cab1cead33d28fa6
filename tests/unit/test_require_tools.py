"""PT2I_REQUIRE_TOOLS=1 (tests/require_tools.py) under the README's command: in
pytest-xdist workers, a skipped test and a skipped test file still fail the run.

A real pytest run in a child process, two xdist workers, on three small files:
one skips a test ("needs Xvfb"), one skips the whole file ("no C compiler"),
one passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

FILES = {
    "test_a.py": "import pytest\n\ndef test_skips():\n    pytest.skip('needs Xvfb')\n\n"
                 "def test_passes():\n    pass\n",
    "test_b.py": "import pytest\n\npytest.skip('no C compiler', allow_module_level=True)\n\n"
                 "def test_never():\n    pass\n",
    "test_c.py": "def test_passes_too():\n    pass\n",
}


def _run(folder: Path, require: bool) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    env.pop("PT2I_REQUIRE_TOOLS", None)
    if require:
        env["PT2I_REQUIRE_TOOLS"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "require_tools", "-p",
                           "no:cacheprovider", "-n", "2", "--dist", "loadfile", "-q", "-rs",
                           str(folder)], capture_output=True, text=True, env=env, cwd=folder,
                          timeout=300)


def test_skips_fail_in_xdist_workers_under_require_tools(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    strict = _run(tmp_path, require=True)
    out = strict.stdout
    assert strict.returncode == 1, out + strict.stderr
    assert "1 failed, 2 passed, 1 error" in out, out
    assert "skipped under PT2I_REQUIRE_TOOLS=1: Skipped: needs Xvfb" in out
    assert "skipped under PT2I_REQUIRE_TOOLS=1: Skipped: no C compiler" in out
    assert "[gw" in out  # the failing report came from a worker
    # without it, the same skips are skips, each with its reason
    plain = _run(tmp_path, require=False)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "2 passed, 2 skipped" in plain.stdout
    assert "needs Xvfb" in plain.stdout and "no C compiler" in plain.stdout
