"""Sub-commands of `pt2-inspector`, one module each (see inspector/cli.py).

The table below names each command's module and help line without importing it:
`pt2-inspector list` imports only `inspector.commands.listing` (and what it needs),
so a short command starts in well under 0.1 s instead of paying for numpy, the
diff engine and the report writer it never uses (issue 17). Modules here import
heavy things (torch, Qt) only inside `run`. tests/unit/test_cli_lazy.py checks
that each entry's NAME and HELP match its module's.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class Command:
    """One sub-command: NAME and HELP known up front; `add_arguments` and `run`
    come from its module, imported on first use (so it looks like the module).

    one_shot: the command prints and is done, holding no thread, child process or
    file open past `run` and registering nothing at exit, so the console entry may
    run it without the cyclic GC and end its process without the interpreter's
    teardown (inspector/cli.py `console`)."""

    __slots__ = ("NAME", "HELP", "module_name", "one_shot", "_module")

    def __init__(self, name: str, module_name: str, help_text: str, *,
                 one_shot: bool = False) -> None:
        self.NAME, self.HELP, self.module_name = name, help_text, module_name
        self.one_shot = one_shot
        self._module: ModuleType | None = None

    @property
    def module(self) -> ModuleType:
        if self._module is None:
            self._module = importlib.import_module(self.module_name)
        return self._module

    def __getattr__(self, name: str) -> Any:
        # only reached for what the slots do not hold: add_arguments, run, ...
        return getattr(self.module, name)

    def __repr__(self) -> str:
        return f"Command({self.NAME!r}, {self.module_name!r})"


_P = "inspector.commands."
COMMANDS = (
    Command("info", _P + "info",
            "describe an archive: programs, schema/torch versions, records, risk flags, dynamic ranges"),
    Command("list", _P + "listing",
            "print the readable listing of each program (as print_readable shows it)",
            one_shot=True),
    Command("node", _P + "node",
            "one node: its statement, module path, users and stack frames with their local files"),
    Command("shapes", _P + "shapes",
            "inputs' shapes, symbols with ranges and sources, runtime assertions, guards, specializations"),
    Command("weights", _P + "weights",
            "statistics of every weight (min, max, mean, std, NaN/Inf/zero counts) from the raw records"),
    Command("audit", _P + "audit",
            "find baked-in constants (device literals, frozen sizes) and load-time needs; exit 1 if found"),
    Command("diff", _P + "diff",
            "compare two archives: nodes (renames matched), signature, ranges, weights; exit 1 if they differ"),
    Command("report", _P + "report",
            "write one self-contained HTML page: listing, findings, shapes, weights, records, profile"),
    Command("check", _P + "check",
            "dry-run each program on a device with fake tensors: which nodes would fail there"),
    Command("profile", _P + "profile",
            "time every node of each program on a device, with rollups by module, op and source line"),
    Command("numerics", _P + "numerics",
            "compare what each node computes against a candidate run (bf16/fp16, another "
            "device, decomposed, another archive, eager); exit 1 over tolerance"),
    Command("export", _P + "export",
            "export the toy image-to-text model with chosen Dim ranges to a .pt2"),
    Command("retarget", _P + "retarget",
            "rewrite the devices baked into an archive (no torch, no GPU needed) into a new .pt2"),
    Command("run", _P + "run",
            "time the exported (or eager) toy generator from an archive on a device"),
    Command("devices", _P + "devices",
            "list the devices torch sees (cpu, cuda:N with name/memory/capability, mps)"),
    Command("memory", _P + "memory",
            "memory per node, the peak and where it is, from the archive alone; with --budget: fits?"),
    Command("graph", _P + "graph",
            "draw the dataflow of a program or one of its modules (SVG, PNG or JSON boxes and edges)"),
)
