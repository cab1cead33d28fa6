"""`pt2-inspector retarget` (not built yet)."""

from __future__ import annotations

import argparse

from inspector.core.errors import InspectorError

NAME = "retarget"
HELP = "retarget (not available yet)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    raise InspectorError("retarget is not available in this version yet")
