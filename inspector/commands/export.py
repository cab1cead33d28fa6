"""`pt2-inspector export` (not built yet)."""

from __future__ import annotations

import argparse

from inspector.core.errors import InspectorError

NAME = "export"
HELP = "export (not available yet)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    raise InspectorError("export is not available in this version yet")
