"""`pt2-inspector audit` (not built yet)."""

from __future__ import annotations

import argparse

from inspector.core.errors import InspectorError

NAME = "audit"
HELP = "audit (not available yet)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    raise InspectorError("audit is not available in this version yet")
