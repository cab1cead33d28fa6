"""`pt2-inspector devices` (not built yet)."""

from __future__ import annotations

import argparse

from inspector.core.errors import InspectorError

NAME = "devices"
HELP = "devices (not available yet)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rest", nargs="*")


def run(args: argparse.Namespace) -> int:
    raise InspectorError("devices is not available in this version yet")
