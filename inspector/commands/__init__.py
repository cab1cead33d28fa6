"""Sub-commands of `pt2-inspector`, one module each (see inspector/cli.py).

Modules here import heavy things (torch, Qt) only inside `run`, so that
`pt2-inspector info` starts fast and never loads torch.
"""

from __future__ import annotations

from inspector.commands import (
    audit,
    check,
    devices,
    diff,
    export,
    info,
    listing,
    node,
    profile,
    report,
    retarget,
    run,
    shapes,
    weights,
)

COMMANDS = (info, listing, node, shapes, weights, audit, diff, report, check, profile,
            export, retarget, run, devices)
