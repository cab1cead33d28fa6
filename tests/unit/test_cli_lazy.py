"""The sub-command table (issue 17): `list` imports only what listing needs, and
the table's names and help lines are the modules' own; the console entry runs a
one-shot command (`list`) without the cyclic GC and ends it without teardown,
yet with all of its output and its exit code."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

from inspector.commands import COMMANDS

# What `list` never needs: numpy and the weight statistics, the diff engine, the
# report writer, the audit, torch, Qt.
NOT_ON_THE_LIST_PATH = ("numpy", "torch", "PySide6", "inspector.core.weight_stats",
                        "inspector.core.diff", "inspector.core.report", "inspector.core.audit",
                        "inspector.commands.audit", "inspector.commands.diff",
                        "inspector.commands.report", "inspector.commands.info", "traceback",
                        # nor what other commands and the window start with: settings,
                        # highlighting, job processes, logging, package metadata
                        "platformdirs", "pygments", "inspector.core.line_highlight",
                        "subprocess", "tempfile", "logging", "importlib.metadata",
                        "concurrent.futures", "inspector.jobs",
                        # nor argparse: `list FILE` is parsed without it (commands/plain.py)
                        "argparse", "gettext")


def test_table_matches_each_module() -> None:
    names = [c.NAME for c in COMMANDS]
    assert len(names) == len(set(names)) and "list" in names and "info" in names
    for command in COMMANDS:
        module = importlib.import_module(command.module_name)
        assert (command.NAME, command.HELP) == (module.NAME, module.HELP), command
        assert command.run is module.run and command.add_arguments is module.add_arguments


def test_list_imports_only_its_own_command(small_archive: Path) -> None:
    code = (
        "import io, sys, contextlib\n"
        "from inspector import cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    rc = cli.main(['list', {str(small_archive)!r}])\n"
        "assert rc == 0 and 'def forward' in out.getvalue(), (rc, out.getvalue()[:500])\n"
        f"print(sorted(m for m in {NOT_ON_THE_LIST_PATH!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_help_lists_every_command_and_its_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "inspector", "--help"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for command in COMMANDS:
        line = next(x for x in proc.stdout.splitlines() if x.split()[:1] == [command.NAME])
        assert command.HELP in line


def _console(code: str, *argv: str, stdout=subprocess.PIPE) -> subprocess.Popen:
    """A child that runs `code`, then `cli.console()` as the console script does,
    with stdout block-buffered (as for any pipe or file; PYTHONUNBUFFERED would
    hide a missing flush)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    script = (f"import sys\nsys.argv = ['pt2-inspector', *{list(argv)!r}]\n{code}\n"
              "from inspector import cli\ncli.console()\n")
    return subprocess.Popen([sys.executable, "-c", script], stdout=stdout,
                            stderr=subprocess.PIPE, env=env)


# Reports, from os._exit, what the process imported, and whether the GC was on.
_SPY_EXIT = (
    "import os, gc\n"
    "_exit = os._exit\n"
    "def _spy(code):\n"
    f"    gone = sorted(m for m in {NOT_ON_THE_LIST_PATH!r} if m in sys.modules)\n"
    "    sys.stderr.write(f'os._exit({code}) gc={gc.isenabled()} imported={gone}\\n')\n"
    "    sys.stderr.flush()\n"
    "    _exit(code)\n"
    "os._exit = _spy\n"
)


def test_console_list_is_one_shot_and_lean(small_archive: Path) -> None:
    """`pt2-inspector list`: GC off, os._exit at the end, none of the modules
    `list` never needs, and the same text as `main` prints in-process."""
    import contextlib
    import io

    from inspector import cli

    proc = _console(_SPY_EXIT, "list", str(small_archive))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert err.decode().splitlines() == ["os._exit(0) gc=False imported=[]"]
    expected = io.StringIO()
    with contextlib.redirect_stdout(expected):
        assert cli.main(["list", str(small_archive)]) == 0
    assert out.decode() == expected.getvalue() and "def forward" in out.decode()


def test_console_one_shot_keeps_error_exit_codes(small_archive: Path, tmp_path: Path) -> None:
    proc = _console(_SPY_EXIT, "list", str(tmp_path / "missing.pt2"))
    out, err = proc.communicate(timeout=60)
    lines = err.decode().splitlines()
    assert proc.returncode == 2 and out == b""
    assert lines[0].startswith("error: ") and "missing.pt2" in lines[0]
    assert lines[1:] == ["os._exit(2) gc=False imported=[]"]
    proc = _console(_SPY_EXIT, "list", str(small_archive), "--program", "nope")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "no program named 'nope'" in err.decode()


def test_console_one_shot_into_a_closed_pipe_is_quiet(small_archive: Path) -> None:
    """`pt2-inspector list F | head -0`: the reader is gone before anything is
    written. The listing waits in stdout's buffer until the final flush, which
    meets the closed pipe: exit 0 and nothing on stderr (the ordinary exit's
    flush fails there too, and the process ended with status 120)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = _console("", "list", str(small_archive), stdout=write)
    finally:
        os.close(write)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (0, b"")


def test_console_other_commands_keep_the_ordinary_exit(tmp_path: Path) -> None:
    """Only a command the table marks one_shot skips teardown: another keeps the
    GC on and its atexit handlers run (the window, jobs, temporary files need them)."""
    code = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('atexit ran', flush=True))\n"
        "from inspector import commands\n"
        "assert [c.NAME for c in commands.COMMANDS if c.one_shot] == ['list']\n"
        "from inspector.commands import info\n"
        "info.run = lambda args: print('gc', gc.isenabled()) or 0\n"
    )
    proc = _console(code, "info", str(tmp_path / "x.pt2"))
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.decode().splitlines() == ["gc True", "atexit ran"]
