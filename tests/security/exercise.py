"""Everything the viewer does with a file without torch, in-process.

`exercise(path)` opens the archive, summarises it (what `info` prints, text and
JSON), makes each program's first screen from the head of its text (what the
window paints first for a big one), parses and renders every program (what
`list` prints), searches it and audits it. The contract: it returns, or raises InspectorError. Any other
exception is a bug in pt2-inspector (the CLI would print "internal error").
"""

from __future__ import annotations

from pathlib import Path

import orjson

from inspector.commands.info import format_text
from inspector.core.archive import Archive, open_archive
from inspector.core.audit import audit_archive
from inspector.core.first_screen import first_screen_lines
from inspector.core.listing import render_listing
from inspector.core.search import SearchIndex
from inspector.core.audit import code_in_names
from inspector.core.summary import archive_summary

# One query per field and free text: every field map is built from file data.
_QUERIES = ("op:add", "target:aten", "name:x", "device:cpu", "module:lin", "file:py:1",
            "linear", "torch.ops")


def exercise(path: Path) -> Archive:
    """Returns the (closed) archive for further checks of its records."""
    with open_archive(path) as archive:
        summary = archive_summary(archive)
        summary["code_in_names"] = code_in_names(archive)
        orjson.dumps(summary)
        format_text(summary)
        for name in archive.program_names:
            head = archive.program_head(name, nodes=3)  # whatever the size, here
            if head is not None:
                first_screen_lines(head)
            program = archive.program(name)
            listing = render_listing(program)
            listing.text().encode("utf-8")  # what `list` writes to a UTF-8 stdout
            for i in range(len(listing)):
                listing.node_at(i)
            found = SearchIndex(listing)  # builds per-field maps from names, traces, modules
            for query in _QUERIES:
                found.search(query)
        audit_archive(archive)
    return archive
