"""Sub-commands of `pt2-inspector`, one module each (see inspector/cli.py).

Modules here import heavy things (torch, Qt) only inside `run`, so that
`pt2-inspector info` starts fast and never loads torch.
"""

from __future__ import annotations

from inspector.commands import (audit, check, devices, export, info, listing, profile,
                                retarget, run)

COMMANDS = (info, listing, audit, export, retarget, run, devices, check, profile)
