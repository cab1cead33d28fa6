"""Compare the `range_constraints` of two archives (before and after a re-export).

Symbols are renamed by every export (`s70` today, `s43` tomorrow), so rows are matched
by where a symbol first appears among the program's user inputs: `input_ids[1]` is the
decoder's sequence length in both archives whatever its symbol is called. The Export
panel shows the rows (ui/widgets/range_table.py). Reads JSON only, never torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inspector.core.archive import open_archive
from inspector.core.program import Program, Range


@dataclass(frozen=True)
class RangeRow:
    program: str
    dim: str  # "input_ids[1]", or the bare symbol when no input shows it
    symbol: str
    range: Range


def dim_labels(program: Program) -> dict[str, str]:
    """symbol -> "input[dim]" for symbols that are a whole size of a user input."""
    labels: dict[str, str] = {}
    for spec in program.user_inputs():
        meta = program.graph.tensor_values.get(spec.name)
        if meta is None:
            continue
        for i, size in enumerate(meta.sizes):
            if isinstance(size, str) and size.isidentifier() and size not in labels:
                labels[size] = f"{spec.name}[{i}]"
    return labels


def range_rows(path: str | Path) -> list[RangeRow]:
    """Every program's range constraints, labelled (reads JSON only, never torch)."""
    rows: list[RangeRow] = []
    with open_archive(path) as archive:
        for program in archive.programs():
            labels = dim_labels(program)
            for symbol, rng in sorted(program.range_constraints.items()):
                rows.append(RangeRow(program.name, labels.get(symbol, symbol), symbol, rng))
    return sorted(rows, key=lambda r: (r.program, r.dim))


STATIC = "—  (static)"  # the dimension is in the other archive's table, not in this one
NO_ARCHIVE = "—"  # there is no archive before: nothing to compare with


def compare(old: list[RangeRow] | None, new: list[RangeRow]
            ) -> list[tuple[str, str, str, str, bool]]:
    """(program, dimension, before, after, changed) for the union of both; `old`
    None: no archive before (its column says NO_ARCHIVE and no row is a change)."""
    before = {(r.program, r.dim): r for r in old or []}
    after = {(r.program, r.dim): r for r in new}
    out = []
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        ta = NO_ARCHIVE if old is None else a.range.text() if a else STATIC
        tb = b.range.text() if b else STATIC
        out.append((key[0], key[1], ta, tb, old is not None and ta != tb))
    return out


def compare_files(before: str | None, after: str) -> list[tuple[str, str, str, str, bool]]:
    """compare() of two archives' tables (`before` may be None: only the new one)."""
    return compare(range_rows(before) if before else None, range_rows(after))
