"""The parsed programs of one open archive: one parse per program, shared.

An Archive (core/archive.py, the safe reader) reads records under limits; this is
what it holds parsed, and how each program gets parsed:

- the lean parse first (core/program/lean.py: nodes kept as spans of the text
  until asked for), the full one (core/program/parser.py) where the text needs
  it to be judged;
- a big program's head (core/program/head.py) for its first screen, from the two
  ends of its text, the text kept for the parse that follows (one read);
- the JSON values every parsed program holds, counted against MAX_JSON_VALUES
  across all of them (`held`);
- thread-safe: the window's tasks and the audit read programs from several
  threads; a second caller waits for the first one's parse.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from inspector.core.gcpause import gc_paused

if TYPE_CHECKING:
    from inspector.core.archive import Archive, LateCheck
    from inspector.core.program import Program


class ProgramCache:
    def __init__(self, archive: Archive) -> None:
        self._archive = archive
        self._programs: dict[str, Program] = {}
        self._values: dict[str, int] = {}  # JSON values of each parse (MAX_JSON_VALUES)
        # A program's text read for its first screen, kept for its parse (one read).
        self.unparsed: dict[str, tuple[bytes | bytearray, LateCheck]] = {}
        self._lock = threading.RLock()

    # -- the values held (MAX_JSON_VALUES counts all programs held at once) --
    def held(self, besides: str) -> int:
        """JSON values of the parsed programs other than `besides`."""
        return sum(self._values.get(n, 0) for n in self._programs if n != besides)

    def count(self, name: str, values: int) -> None:
        self._values[name] = values

    # -- programs --
    def get(self, name: str) -> Program:
        """The parsed program (cached). A second caller waits for the first's parse."""
        cached = self._programs.get(name)
        if cached is not None:
            return cached
        with self._lock:
            if name not in self._programs:
                # Parsing allocates millions of containers and frees none: see gcpause.py.
                with gc_paused():
                    self._programs[name] = self._parse_lean(name) or self._parse_full(name)
            return self._programs[name]

    def __iter__(self) -> Iterator[Program]:
        for name in self._archive.program_names:
            yield self.get(name)

    def is_parsed(self, name: str) -> bool:
        return name in self._programs

    def head(self, name: str, nodes: int | None = None) -> Program | None:
        """Program `name` cut to its first nodes, from the head of its text alone
        (Archive.program_head says when); None where its text does not give one,
        or it is parsed already."""
        from inspector.core.program.head import HEAD_NODES, NEEDED_HEAD, NEEDED_TAIL_KEY, head_program

        archive = self._archive
        with self._lock:
            if name in self._programs:
                return None
            pending = self.unparsed.get(name)
            # a big stored text: its two ends only (the parse reads it whole later)
            text = pending[0] if pending else archive.program_ends(
                name, NEEDED_HEAD, NEEDED_TAIL_KEY)
            if text is None:  # else read whole, and kept for the parse
                pending = self.unparsed[name] = archive.program_buffer(name)
                text = pending[0]
        return head_program(text, name, nodes or HEAD_NODES)

    def forget(self, name: str) -> None:
        """Drop the parse of `name` (a CLI listing one program after another)."""
        with self._lock:
            self._programs.pop(name, None)

    def clear(self) -> None:
        """The archive closed: drop every parse and kept text."""
        with self._lock:
            self._programs.clear()
            self._values.clear()
            self.unparsed.clear()

    # -- the two parses --
    def _parse_lean(self, name: str) -> Program | None:
        """The lean parse; None when the text needs the full parse to be judged."""
        from inspector.core.program.lean import LeanUnsupported, parse_program_lean

        held = self.held(name)
        data, check = self.unparsed.pop(name, None) or self._archive.program_buffer(name)
        check.start()
        try:
            parsed = parse_program_lean(data, name, held)
        except LeanUnsupported:
            return None  # (after the check: a damaged file is named so, not parsed again)
        finally:
            check()  # the CRC computed beside the parse; its error before the parse's
        program, values = parsed
        self._values[name] = values
        return program

    def _parse_full(self, name: str) -> Program:
        from inspector.core.program import parse_program

        # (the text the lean parse leaves to it: judged by the record limits alone)
        archive = self._archive
        return parse_program(archive.program_doc(name, archive.program_path(name)), name,
                             consume=True)
