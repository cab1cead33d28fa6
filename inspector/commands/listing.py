"""`pt2-inspector list FILE [--program NAME]`: the readable listing on stdout.

The same text as torch's `print_readable()` after `torch.export.load`, made
from the JSON alone (never torch), written as it is rendered: a big program's
first lines come from the head of its file before it is parsed."""

from __future__ import annotations

import gc
import sys
from typing import TYPE_CHECKING

from inspector.core.archive import open_archive
from inspector.core.errors import ArchiveError
from inspector.core.first_screen import first_screen_of
from inspector.core.listing import render_listing_chunks

if TYPE_CHECKING:
    import argparse  # only for annotations: `list FILE` is parsed without it
    from typing import TextIO

    from inspector.core.program import Program

NAME = "list"
HELP = "print the readable listing of each program (as print_readable shows it)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("--program", metavar="NAME",
                        help="only this program (default: every program, each after a '# program: NAME' line)")
    parser.add_argument("--as-torch", metavar="VERSION",
                        help="group `# File:` comments as this torch release prints them "
                             "('installed': the torch here; default: the torch that wrote "
                             "the archive)")


def run(args: argparse.Namespace) -> int:
    with open_archive(args.file) as archive:
        names = [args.program] if args.program else archive.program_names
        if not names:
            raise ArchiveError(f"{archive.path.name} holds no program to list (an AOTInductor "
                               "package of compiled code only; `pt2-inspector info` describes it)")
        for name in names:
            archive.program_path(name)  # a clear error for an unknown name
        out = sys.stdout
        torch_version = _as_torch(args.as_torch)
        for i, name in enumerate(names):
            if not args.program:
                out.write(f"# program: {name}\n")
            # a big program's first lines, from the head of its file, before it is
            # parsed (a reader of the pipe sees them in a fraction of the parse)
            shown = (first_screen_of(archive, name) or []) if torch_version is None else []
            if shown:
                out.write("\n".join(shown) + "\n")
                out.flush()
            program = archive.program(name)
            _write_listing(out, program, torch_version, shown)
            del program
            archive.forget_program(name)
            if i + 1 < len(names):
                # One program in memory at a time. A parsed program holds cycles
                # (each node points at its graph), so forgetting it frees nothing
                # until a collection, and the console runs `list` with the GC off.
                gc.collect()
    return 0


def _write_listing(out: TextIO, program: Program, torch_version: str | None,
                   shown: list[str]) -> None:
    """The listing, each chunk as it is rendered (a big one's start is on the pipe
    while the rest is made), after the `shown` lines already written (its first
    ones: checked to be)."""
    written = len(shown)
    for listing in render_listing_chunks(program, torch_version=torch_version):
        lines = listing.lines
        if len(lines) <= written:
            continue
        if shown:
            if lines[:len(shown)] != shown:  # never seen: program/head.py's promise
                raise RuntimeError("the first lines written, from the head of the file, "
                                   "differ from its listing")
            shown = []
        out.write("\n".join(lines[written:]) + "\n")
        out.flush()
        written = len(lines)


def _as_torch(choice: str | None) -> str | None:
    if choice != "installed":
        return choice
    from inspector.core.audit_load import installed_torch

    found = installed_torch()
    if found is None:
        raise ArchiveError("--as-torch installed: no torch is installed here (name a release, "
                           "e.g. --as-torch 2.14)")
    return found
