"""The argument parsers of `pt2-inspector` (argparse): the window's, and each
sub-command's.

A module of its own so that argparse is imported only when a command line needs
it: `pt2-inspector list FILE` is parsed without it (inspector/commands/plain.py).
"""

from __future__ import annotations

import argparse
import sys

from inspector import __version__
from inspector.commands import COMMANDS
from inspector.commands.plain import EXIT_USAGE, add_common_arguments


class ErrorLineParser(argparse.ArgumentParser):
    """argparse prints usage + message and exits 2; keep that but one `error:` line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {message} (see {self.prog} --help)\n")
        raise SystemExit(EXIT_USAGE)


def gui_parser() -> argparse.ArgumentParser:
    parser = ErrorLineParser(
        prog="pt2-inspector",
        description="Inspect torch.export .pt2 archives. Without a sub-command, opens the window.",
        # every command with its help line, from the table (no command module is imported)
        epilog="sub-commands (pt2-inspector COMMAND --help):\n"
        + "\n".join(f"  {c.NAME:<10} {c.HELP}" for c in COMMANDS),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help=".pt2 archives to open")
    parser.add_argument("--demo", action="store_true", help="open the bundled demo archive")
    parser.add_argument("--screenshot", metavar="PNG",
                        help="render the main window offscreen to PNG and exit")
    parser.add_argument("--version", action="version", version=f"pt2-inspector {__version__}")
    add_common_arguments(parser)
    return parser


def command_parser(command) -> argparse.ArgumentParser:
    parser = ErrorLineParser(prog=f"pt2-inspector {command.NAME}", description=command.HELP)
    add_common_arguments(parser)
    command.add_arguments(parser)
    return parser
