"""Default command: open the window (Qt imported only here)."""

from __future__ import annotations

import argparse

from inspector.core.errors import InspectorError


def run(args: argparse.Namespace) -> int:
    raise InspectorError("the window is not built yet; use `pt2-inspector info FILE` or `list FILE`")
