"""The sub-command table (issue 17): `list` imports only what listing needs, and
the table's names and help lines are the modules' own."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from inspector.commands import COMMANDS

# What `list` never needs: numpy and the weight statistics, the diff engine, the
# report writer, the audit, torch, Qt.
NOT_ON_THE_LIST_PATH = ("numpy", "torch", "PySide6", "inspector.core.weight_stats",
                        "inspector.core.diff", "inspector.core.report", "inspector.core.audit",
                        "inspector.commands.audit", "inspector.commands.diff",
                        "inspector.commands.report", "inspector.commands.info", "traceback")


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
