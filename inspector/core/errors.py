"""Errors a user can cause. Each carries a message a person can act on.

The CLI prints `error: <message>` and exits 2; the window shows the message and
keeps the traceback one click away. Anything that is *not* an InspectorError is
a bug in pt2-inspector, not in the user's input.
"""

from __future__ import annotations


class InspectorError(Exception):
    """Base of every error caused by input (a file, an option, a device)."""


class ArchiveError(InspectorError):
    """The archive cannot be read: not a zip, wrong format, over a limit, ..."""
