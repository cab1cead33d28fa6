"""A check or profile result -> per-node marks on one program's listing (no Qt).

For the window (heat gutter, time column, failure marks): the JSON the `check` and
`profile` jobs return, joined to the listing by node name. Lines come from the
listing itself (`Listing.definitions`), not from the JSON, so marks land where the
view shows the node even if the result is stale; a name the listing lacks is
reported in `missing`, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspector.core.listing import Listing


@dataclass(frozen=True, slots=True)
class NodeMark:
    name: str
    line: int  # 0-based line of the listing (Listing.lines index)
    ms: float | None = None  # profile: median time of the node
    share: float | None = None  # profile: part of the summed node time
    heat: float = 0.0  # 0..1: ms relative to the slowest node (for a gutter colour)
    failure: str | None = None  # check/profile: torch's message when the node fails


@dataclass
class ProgramMarks:
    program: str
    marks: dict[str, NodeMark] = field(default_factory=dict)  # node name -> mark
    missing: list[str] = field(default_factory=list)  # names the listing does not have

    def by_line(self) -> dict[int, NodeMark]:
        return {m.line: m for m in self.marks.values()}

    def slowest(self, n: int = 10) -> list[NodeMark]:
        timed = [m for m in self.marks.values() if m.ms is not None]
        return sorted(timed, key=lambda m: -(m.ms or 0.0))[:n]


def _program_entry(result: dict[str, Any], program: str) -> dict[str, Any] | None:
    for entry in result.get("programs") or []:
        if isinstance(entry, dict) and entry.get("name") == program:
            return entry
    return None


def program_marks(result: dict[str, Any], program: str, listing: Listing) -> ProgramMarks:
    """Marks for `program` from a check or a profile result (both shapes)."""
    out = ProgramMarks(program)
    entry = _program_entry(result, program)
    if entry is None:
        return out
    lines = {name: line for (graph, name), line in listing.definitions.items() if graph == ""}
    nodes = [n for n in entry.get("nodes") or [] if isinstance(n, dict)] \
        if isinstance(entry.get("nodes"), list) else []
    peak = max((float(n.get("ms") or 0.0) for n in nodes), default=0.0)
    for n in nodes:
        name = str(n.get("name"))
        if name not in lines:
            out.missing.append(name)
            continue
        ms = float(n.get("ms") or 0.0)
        out.marks[name] = NodeMark(name, lines[name], ms, float(n.get("share") or 0.0),
                                   ms / peak if peak > 0 else 0.0)
    for f in entry.get("failures") or []:
        if not isinstance(f, dict):
            continue
        name = str(f.get("node"))
        if name not in lines:
            out.missing.append(name)
            continue
        old = out.marks.get(name)
        message = str(f.get("message", ""))
        out.marks[name] = NodeMark(name, lines[name], old.ms if old else None,
                                   old.share if old else None, old.heat if old else 0.0,
                                   message)
    return out
