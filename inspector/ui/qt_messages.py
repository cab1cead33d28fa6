"""Qt's own warnings, less the one that is noise for us.

Offscreen and on some X servers, Qt prints "This plugin does not support
propagateSizeHints()" each time a window's size hints change (twice per
`--screenshot`): nothing is wrong and nothing can be done about it, so that one
message is dropped. Every other message goes where it went before (the previous
handler, or stderr as Qt writes it).
"""

from __future__ import annotations

import sys
from typing import Any

QUIET = ("This plugin does not support propagateSizeHints()",)

_previous: Any = None
_installed = False


def _handler(mode: Any, context: Any, message: str) -> None:
    if any(q in message for q in QUIET):
        return
    if _previous is not None:
        _previous(mode, context, message)
    else:
        sys.stderr.write(message + "\n")


def install() -> None:
    """Filter Qt's messages through `QUIET` (once per process)."""
    global _previous, _installed
    if _installed:
        return
    from PySide6.QtCore import qInstallMessageHandler

    _previous = qInstallMessageHandler(_handler)
    _installed = True
