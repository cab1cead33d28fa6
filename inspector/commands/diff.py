"""`pt2-inspector diff A B [--program NAME] [--json]`: what changed between two archives.

Exit 0 when they are the same, 1 when they differ, 2 when one cannot be read.
Text: the summaries first, then a unified diff of each program's listings (aligned
by matched nodes, so renamed values are no change; each hunk header names the
module); hunks that change only stack-trace paths or line numbers (the same model
exported from another checkout) are counted in one line, shown with --frames. `--json`: one object (see inspector/core/diff.py for the counting):
`{"programs": [{"name", "status", "nodes": {"same", "changed": [{"a", "b",
"fields"}], "added", "removed"}, "meta_changed", "signature", "ranges",
"weights", "findings": {"new", "resolved"}}], "records": {...}, "findings": {...}}`.
Reads the zip and the JSON only (never torch).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator

import orjson

from inspector.core.archive import open_archive
from inspector.core.diff import ArchiveDiff, FindingsDiff, ProgramDiff, diff_archives
from inspector.core.diff_align import unified_diff
from inspector.core.gcpause import gc_paused

NAME = "diff"
HELP = "compare two archives: nodes (renames matched), signature, ranges, weights; exit 1 if they differ"

EXIT_SAME = 0
EXIT_DIFFERENT = 1
# Text summaries list at most this many names per section; --json lists all.
_LIST_LIMIT = 40


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="first .pt2 archive (before)")
    parser.add_argument("b", metavar="B", help="second .pt2 archive (after)")
    parser.add_argument("--program", metavar="NAME",
                        help="only this program (default: every program, matched by name)")
    parser.add_argument("--frames", action="store_true",
                        help="also show the hunks that change only stack-trace paths or line "
                             "numbers (a re-export elsewhere; default: counted in one line)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    # Two parsed programs, their listings and the match are tens of millions
    # of objects that all live until the end: with the cyclic GC on, each
    # collection between the steps rescans them (a third of the CPU time of a
    # diff of two 100k-node programs), and there is no cycle to collect. Paused,
    # not switched off: `cli.main` may run in a process that goes on (tests).
    with gc_paused(), open_archive(args.a) as a, open_archive(args.b) as b:
        result = diff_archives(a, b, args.program)
        if args.json:
            sys.stdout.write(orjson.dumps(result.as_dict(), option=orjson.OPT_INDENT_2).decode()
                             + "\n")
        else:
            out = sys.stdout
            for line in format_text(result, args.a, args.b, frames=args.frames):
                out.write(line + "\n")
    return EXIT_DIFFERENT if result.different else EXIT_SAME


# A listing's frame comment: `# File: PATH:LINE in FUNCTION, code: CODE`
_FRAME = re.compile(r"^\s*# File: .*:\d+ in (.*)$")


def _frame_key(line: str) -> str | None:
    """What a frame comment says besides its path and line number, or None."""
    m = _FRAME.match(line)
    return m.group(1) if m else None


def _frames_only(hunk: list[str]) -> bool:
    """A hunk whose changed lines are frame comments saying the same functions and
    code on both sides: only paths or line numbers moved."""
    removed = [_frame_key(ln[1:]) for ln in hunk if ln.startswith("-")]
    added = [_frame_key(ln[1:]) for ln in hunk if ln.startswith("+")]
    if None in removed or None in added or not (removed or added):
        return False
    return sorted(removed) == sorted(added)  # type: ignore[type-var]


def _split_diff(lines: Iterator[str]) -> tuple[list[str], list[list[str]]]:
    """(the ---/+++ header, the hunks each from its @@ line)."""
    head: list[str] = []
    hunks: list[list[str]] = []
    for line in lines:
        if line.startswith("@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
        else:
            head.append(line)
    return head, hunks


def format_text(result: ArchiveDiff, label_a: str, label_b: str,
                frames: bool = False) -> Iterator[str]:
    """The summaries first, then how many hunks only moved stack-trace paths or
    line numbers (shown with `frames`), then the unified diffs of the rest."""
    diffs: list[str] = []
    frame_hunks = frame_lines = 0
    for p in result.programs:
        if p.listing_a is None or p.listing_b is None:
            continue
        head, hunks = _split_diff(unified_diff(p.alignment(), p.listing_a, p.listing_b,
                                               f"{label_a} ({p.name})",
                                               f"{label_b} ({p.name_b or p.name})"))
        shown = []
        for hunk in hunks:
            if not frames and _frames_only(hunk):
                frame_hunks += 1
                frame_lines += sum(1 for ln in hunk if ln[:1] in "+-")
            else:
                shown.append(hunk)
        if shown:
            diffs += head + [ln for hunk in shown for ln in hunk]
    yield from _summaries(result, label_a, label_b)
    if frame_hunks:
        yield ""
        yield (f"{frame_hunks} hunk{'s' if frame_hunks != 1 else ''} ({frame_lines} lines) "
               "change only stack-trace paths or line numbers (where the model's code was "
               "when exported): --frames shows them")
    if diffs:
        yield ""
        yield from diffs


def _summaries(result: ArchiveDiff, label_a: str, label_b: str) -> Iterator[str]:
    yield (f"{label_a} and {label_b} "
           + ("differ" if result.different else "are the same")
           + f" ({len(result.programs)} program{'s' if len(result.programs) != 1 else ''} compared)")
    for p in result.programs:
        yield from _program_summary(p)
    if result.records is not None and result.records.differs:
        r = result.records
        yield ""
        yield f"records: {r.same} same, {len(r.changed)} changed, {len(r.added)} added, " \
              f"{len(r.removed)} removed"
        for label, names in (("changed", r.changed), ("added", r.added), ("removed", r.removed)):
            yield from _names(label, names)
    if result.findings.new or result.findings.resolved:
        yield ""
        yield "archive:"
        yield from _findings(result.findings)


def _program_summary(p: ProgramDiff) -> Iterator[str]:
    name = p.name + (f" -> {p.name_b}" if p.name_b else "")
    yield ""
    yield f"program {name}: {p.status}"
    if p.a is None or p.b is None:
        program = p.a or p.b
        assert program is not None
        yield f"  only in {'B' if p.a is None else 'A'} ({program.node_count} nodes)"
        return
    changed, added, removed = p.changed(), p.added(), p.removed()
    yield (f"  nodes: {p.nodes_same} same, {len(changed)} changed, {len(added)} added, "
           f"{len(removed)} removed (A {p.a.node_count}, B {p.b.node_count})")
    if p.meta_changed:
        fields = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(p.meta_fields().items()))
        yield f"  metadata only: {p.meta_changed} ({fields})"
    for a, b, fields in changed[:_LIST_LIMIT]:
        yield f"    changed {a}" + (f" -> {b}" if a != b else "") + f": {', '.join(fields)}"
    if len(changed) > _LIST_LIMIT:
        yield f"    ... {len(changed) - _LIST_LIMIT} more changed (see --json)"
    yield from _names("added", added)
    yield from _names("removed", removed)
    sig = p.signature()
    for side in ("inputs", "outputs"):
        s = sig[side]
        for c in s["changed"]:
            yield f"  signature {side[:-1]} {c['a']}" + (f" -> {c['b']}" if c["a"] != c["b"] else "") \
                + f" ({c['kind']}): {', '.join(c['fields'])}"
        for label in ("added", "removed"):
            for n in s[label]:
                yield f"  signature {side[:-1]} {label}: {n}"
    r = p.ranges
    for sym, (x, y) in r.changed.items():
        yield f"  range {sym}: {x.text()} -> {y.text()}"
    for sym, x in r.added.items():
        yield f"  range {sym} added: {x.text()}"
    for sym, x in r.removed.items():
        yield f"  range {sym} removed: {x.text()}"
    w = p.weights
    yield (f"  weights: {w.same} same, {len(w.changed)} changed, {len(w.added)} added, "
           f"{len(w.removed)} removed")
    for x, y, fields in w.changed[:_LIST_LIMIT]:
        detail = []
        if "dtype" in fields:
            detail.append(f"{x.dtype} -> {y.dtype}")
        if "shape" in fields:
            detail.append(f"{list(x.shape or ())} -> {list(y.shape or ())}")
        yield f"    changed {x.name}: {', '.join(fields)}" + (f" ({'; '.join(detail)})" if detail else "")
    yield from _names("added", [w.name for w in w.added], indent="    ")
    yield from _names("removed", [w.name for w in w.removed], indent="    ")
    if p.versions:
        yield f"  exported with torch {p.versions[0]} -> {p.versions[1]}"
    yield from _findings(p.findings)


def _findings(f: FindingsDiff) -> Iterator[str]:
    if not (f.new or f.resolved):
        return
    yield f"  findings: {len(f.new)} new, {len(f.resolved)} resolved"
    for label, items in (("new", f.new), ("resolved", f.resolved)):
        for x in items[:_LIST_LIMIT]:
            where = f" {x.node}" if x.node else ""
            yield f"    {label} {x.severity} {x.rule}{where}: {x.message}"
        if len(items) > _LIST_LIMIT:
            yield f"    ... {len(items) - _LIST_LIMIT} more {label} (see --json)"


def _names(label: str, names: list[str], indent: str = "  ") -> Iterator[str]:
    if not names:
        return
    shown = ", ".join(names[:_LIST_LIMIT])
    more = f", ... {len(names) - _LIST_LIMIT} more" if len(names) > _LIST_LIMIT else ""
    yield f"{indent}{label} ({len(names)}): {shown}{more}"
