"""A big program's first listing lines, made from the head of its file before it
is parsed (program/head.py): what the window paints first, and `list` writes
first, while the whole program is read. Its lines are the whole listing's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inspector.core.listing import render_listing

if TYPE_CHECKING:
    from inspector.core.archive import Archive
    from inspector.core.program import Program

# Programs whose JSON is bigger than this (~15,000 nodes) show their first lines
# from the head of their text (Archive.program_head) while they are parsed.
FIRST_SCREEN_ABOVE_BYTES = 32 * 1024 * 1024


def first_screen_of(archive: Archive, name: str) -> list[str] | None:
    """The first listing lines of program `name`, if it is big, made from the head
    of its text before it is parsed (the parse that follows reads the text);
    None for a small program, or a text that gives none."""
    record = archive.record(archive.program_path(name))
    if record is None or record.size <= FIRST_SCREEN_ABOVE_BYTES:
        return None
    head = archive.program_head(name)
    return (first_screen_lines(head) or None) if head is not None else None


def first_screen_lines(head: Program) -> list[str]:
    """The lines of a program cut to its first nodes (Archive.program_head) that
    are the whole program's too: those before its last node's (the comment above
    the next node, the return line, depend on what was cut off)."""
    listing = render_listing(head)
    last = listing.line_of(head.graph.nodes[-1])
    return listing.lines[:last] if last else []
