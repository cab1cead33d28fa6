"""What changed between two archives: programs, nodes, signature, ranges,
weights, records and audit findings. Pure Python over the parsed JSON.

People re-export with other Dim ranges, retarget, upgrade torch or run
decompositions and then ask what changed. Programs are matched by name (two
single-program archives are compared whatever their names: `torch.export.save`
names every program `model`); nodes by node_match.py's evidence, so renamed
values are no change. The result keeps the listings and the node pairs, so the
window can show both listings side by side (diff_align.py) and the CLI can print
a unified diff and the summaries.

Counting: for each program `nodes.same + len(nodes.changed) + len(nodes.removed)`
is A's node count and `same + changed + added` is B's. `same` counts pairs whose
statement is equal, including those whose metadata differs; `meta_changed`
counts those metadata-only pairs (stack trace, module, recorded device) plus the
graph inputs whose recorded device alone changed.

Weights are judged without reading them: names, dtype and shape from the
weights/constants configs, the bytes by the CRC-32 and size the zip directory
states for each record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from inspector.core import archive as ar
from inspector.core.archive import Archive
from inspector.core.audit import Finding, audit_archive
from inspector.core.dtypes import DTYPE_NAMES
from inspector.core.errors import InspectorError
from inspector.core.gcpause import gc_paused
from inspector.core.listing import Listing, render_listing
from inspector.core.node_match import (
    ADDED,
    CHANGED,
    REMOVED,
    SAME,
    ProgramMatch,
    match_programs,
    qualified_name,
)
from inspector.core.program import Program, Range, sym_size

# Records that differ between any two saves of the same program: torch writes a
# fresh random id each time (torch.export.save -> serialization_id).
_VOLATILE_RECORDS = frozenset({".data/serialization_id"})


class DiffError(InspectorError):
    """The two archives cannot be compared as asked (an unknown program)."""


class DiffCancelled(InspectorError):
    """diff_files was asked to stop (the window's Cancel)."""

    def __init__(self) -> None:
        super().__init__("cancelled")


# --- results ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class WeightEntry:
    name: str  # the FQN
    dtype: str | None
    shape: tuple[int | str, ...] | None
    record: str | None  # data/weights/weight_3
    crc: int | None
    size: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": None if self.shape is None else list(self.shape),
                "size": self.size}


@dataclass
class WeightsDiff:
    same: int = 0
    changed: list[tuple[WeightEntry, WeightEntry, tuple[str, ...]]] = field(default_factory=list)
    added: list[WeightEntry] = field(default_factory=list)
    removed: list[WeightEntry] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def as_dict(self) -> dict[str, Any]:
        return {"same": self.same,
                "changed": [{"name": a.name, "fields": list(f), "a": a.as_dict(), "b": b.as_dict()}
                            for a, b, f in self.changed],
                "added": [w.name for w in self.added], "removed": [w.name for w in self.removed]}


@dataclass
class RangesDiff:
    changed: dict[str, tuple[Range, Range]] = field(default_factory=dict)
    added: dict[str, Range] = field(default_factory=dict)
    removed: dict[str, Range] = field(default_factory=dict)

    @property
    def differs(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def as_dict(self) -> dict[str, Any]:
        r = _range_dict
        return {"changed": {s: {"a": r(a), "b": r(b)} for s, (a, b) in self.changed.items()},
                "added": {s: r(x) for s, x in self.added.items()},
                "removed": {s: r(x) for s, x in self.removed.items()}}


@dataclass
class FindingsDiff:
    new: list[Finding] = field(default_factory=list)  # in B, not in A (B's lines)
    resolved: list[Finding] = field(default_factory=list)  # in A, not in B (A's lines)

    def as_dict(self) -> dict[str, Any]:
        return {"new": [f.as_dict() for f in self.new],
                "resolved": [f.as_dict() for f in self.resolved]}


@dataclass
class RecordsDiff:
    """Records besides programs and weights (sample inputs, extra/, AOTI files,
    archive metadata), by path, judged by CRC-32 and size."""

    same: int = 0
    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def as_dict(self) -> dict[str, Any]:
        return {"same": self.same, "changed": self.changed, "added": self.added,
                "removed": self.removed}


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the side-by-side view (see diff_align.Alignment)."""

    status: str  # same, changed, added (B only), removed (A only)
    line_a: int  # 0-based line of A's listing, -1 when A has none on this row
    line_b: int
    text_a: str | None
    text_b: str | None
    node_a: str | None  # the node the line belongs to (statement, comment, getitem)
    node_b: str | None


@dataclass(eq=False)
class ProgramDiff:
    name: str  # A's name (B's when only B has it)
    name_b: str | None  # B's name when it differs (two single-program archives)
    a: Program | None
    b: Program | None
    match: ProgramMatch | None
    listing_a: Listing | None
    listing_b: Listing | None
    ranges: RangesDiff = field(default_factory=RangesDiff)
    weights: WeightsDiff = field(default_factory=WeightsDiff)
    findings: FindingsDiff = field(default_factory=FindingsDiff)
    versions: tuple[str, str] | None = None  # torch versions, when they differ
    _alignment: Any = field(default=None, repr=False)

    @property
    def status(self) -> str:
        if self.a is None:
            return ADDED
        if self.b is None:
            return REMOVED
        differs = (self.ranges.differs or self.weights.differs or self.meta_changed
                   or self.signature_differs or self.nodes_same != self.a.node_count
                   or self.nodes_same != self.b.node_count)
        return CHANGED if differs else SAME

    # -- nodes --
    @cached_property
    def nodes_same(self) -> int:
        return sum(1 for g in self._graphs() for p in g.pairs if not p.fields)

    def changed(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """(name in A, name in B, fields: statement fields then metadata fields)."""
        return [(qualified_name(p.a, g.path), qualified_name(p.b, g.path), p.fields + p.meta)
                for g in self._graphs() for p in g.pairs if p.fields]

    def added(self) -> list[str]:
        return [qualified_name(n, g.path) for g in self._graphs() for n in g.added]

    def removed(self) -> list[str]:
        return [qualified_name(n, g.path) for g in self._graphs() for n in g.removed]

    @property
    def meta_changed(self) -> int:
        return sum(self._meta_only.values())

    def meta_fields(self) -> Counter[str]:
        """How many metadata-only pairs differ in each field."""
        c: Counter[str] = Counter()
        for fields, n in self._meta_only.items():
            for f in fields:
                c[f] += n
        return c

    @cached_property
    def _meta_only(self) -> Counter[tuple[str, ...]]:
        """{metadata fields: pairs (nodes, graph inputs) that differ only there}."""
        m = self.match
        if m is None:
            return Counter()
        return Counter(p.meta for p in (*m.pairs(), *m.inputs) if p.meta and not p.fields)

    def _graphs(self):
        m = self.match
        if m is not None:
            return m.graphs
        from inspector.core.node_match import GraphMatch, graph_paths

        program = self.a or self.b
        assert program is not None
        side = "removed" if self.b is None else "added"
        return [GraphMatch(path, None, None, **{side: list(g.nodes)})
                for path, g in graph_paths(program).items()]

    # -- signature --
    @property
    def signature_differs(self) -> bool:
        m = self.match
        return m is not None and bool(
            m.inputs_added or m.inputs_removed or m.outputs_added or m.outputs_removed
            or any(p.fields for p in (*m.inputs, *m.outputs)))

    def signature(self) -> dict[str, Any]:
        m = self.match
        if m is None:
            return {"inputs": _empty_side(), "outputs": _empty_side()}
        return {"inputs": _spec_side(m.inputs, m.inputs_added, m.inputs_removed),
                "outputs": _spec_side(m.outputs, m.outputs_added, m.outputs_removed)}

    # -- the side-by-side view --
    def alignment(self):
        """Rows of the two listings side by side (diff_align.Alignment), made
        on first use."""
        if self._alignment is None and self.listing_a is not None and self.listing_b is not None:
            from inspector.core.diff_align import align_listings

            assert self.match is not None
            self._alignment = align_listings(self.listing_a, self.listing_b, self.match)
        return self._alignment

    def row(self, r: int) -> Row:
        """Row r of the side-by-side view with its texts and node names."""
        al = self.alignment()
        la, lb = self.listing_a, self.listing_b
        assert al is not None and la is not None and lb is not None
        i, j = al.a[r], al.b[r]
        node_a = la.node_at(i) if i >= 0 else None
        node_b = lb.node_at(j) if j >= 0 else None
        return Row(al.status[r], i, j, la.lines[i] if i >= 0 else None,
                   lb.lines[j] if j >= 0 else None, node_a.name if node_a else None,
                   node_b.name if node_b else None)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.name_b is not None:
            out["name_b"] = self.name_b
        out.update({
            "status": self.status,
            "nodes": {"same": self.nodes_same,
                      "changed": [{"a": a, "b": b, "fields": list(f)} for a, b, f in self.changed()],
                      "added": self.added(), "removed": self.removed()},
            "meta_changed": self.meta_changed,
            "signature": self.signature(),
            "ranges": self.ranges.as_dict(),
            "weights": self.weights.as_dict(),
            "findings": self.findings.as_dict(),
        })
        return out


@dataclass(eq=False)
class ArchiveDiff:
    path_a: Path
    path_b: Path
    programs: list[ProgramDiff]
    records: RecordsDiff | None  # None with --program (one program, not the archive)
    findings: FindingsDiff  # findings about the archive, not one program

    @property
    def different(self) -> bool:
        return (any(p.status != SAME for p in self.programs)
                or (self.records is not None and self.records.differs)
                or bool(self.findings.new or self.findings.resolved))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"programs": [p.as_dict() for p in self.programs]}
        if self.records is not None:
            out["records"] = self.records.as_dict()
        out["findings"] = self.findings.as_dict()
        return out


# --- entry points -------------------------------------------------------------

def diff_archives(a: Archive, b: Archive, program: str | None = None, *,
                  audit: bool = True,
                  step: Callable[[float], None] | None = None) -> ArchiveDiff:
    """Compare two opened archives (every program, or just `program`).
    `step(fraction)` is called between programs and before the audit; it may
    raise to stop (the window's Cancel)."""
    pairs = _program_pairs(a, b, program)
    step = step or (lambda _f: None)
    # The listings and the match allocate millions of objects and free few: the
    # cyclic GC would rescan both programs again and again (it more than
    # doubled the time of the listings of two 100k-node programs).
    with gc_paused():
        diffs = []
        for k, (na, nb) in enumerate(pairs):
            step(k / (len(pairs) + 1))
            diffs.append(diff_programs(a, b, na, nb))
        findings = FindingsDiff()
        step(len(pairs) / (len(pairs) + 1))
        if audit:
            _audit(a, b, diffs, findings, whole=program is None)
        records = _diff_records(a, b) if program is None else None
    return ArchiveDiff(a.path, b.path, diffs, records, findings)


def diff_files(path_a: str | Path, path_b: str | Path, *,
               progress: Callable[[float], None] | None = None,
               cancelled: Callable[[], bool] | None = None) -> ArchiveDiff:
    """Open both files, compare them and make every program's side-by-side
    rows, reporting progress 0..1; stops with DiffCancelled between steps when
    `cancelled()` says so (the window runs this off the GUI thread). The
    archives are closed again: the result keeps only parsed data."""
    report = progress or (lambda _f: None)
    stop = cancelled or (lambda: False)

    def step(fraction: float) -> None:
        if stop():
            raise DiffCancelled()
        report(fraction)

    from inspector.core.archive import open_archive

    step(0.0)
    with open_archive(path_a) as a:
        step(0.02)
        with open_archive(path_b) as b:
            result = diff_archives(a, b, step=lambda f: step(0.04 + 0.8 * f))
    with gc_paused():  # as in diff_archives: the rows are millions of small objects
        n = max(1, len(result.programs))
        for k, p in enumerate(result.programs):
            step(0.85 + 0.15 * k / n)
            p.alignment()
    step(1.0)
    return result


def diff_programs(a: Archive, b: Archive, name_a: str | None, name_b: str | None) -> ProgramDiff:
    pa = a.program(name_a) if name_a is not None else None
    pb = b.program(name_b) if name_b is not None else None
    name = name_a if name_a is not None else name_b
    assert name is not None
    other = name_b if name_a is not None and name_b is not None and name_b != name_a else None
    la = render_listing(pa) if pa is not None else None
    lb = render_listing(pb) if pb is not None else None
    if pa is None or pb is None:
        return ProgramDiff(name, other, pa, pb, None, la, lb)
    diff = ProgramDiff(name, other, pa, pb, match_programs(pa, pb), la, lb)
    diff.ranges = _diff_ranges(pa, pb)
    diff.weights = _diff_weights(a, b, name_a, name_b)  # type: ignore[arg-type]
    if pa.torch_version != pb.torch_version:
        diff.versions = (pa.torch_version, pb.torch_version)
    return diff


def _program_pairs(a: Archive, b: Archive, program: str | None) -> list[tuple[str | None, str | None]]:
    names_a, names_b = list(a.program_names), list(b.program_names)
    if program is not None:
        if program not in names_a and program not in names_b:
            raise DiffError(f"no program named {program!r} in either archive (programs: "
                            f"{', '.join(names_a) or 'none'} and {', '.join(names_b) or 'none'})")
        return [(program if program in names_a else None, program if program in names_b else None)]
    if len(names_a) == 1 and len(names_b) == 1:
        return [(names_a[0], names_b[0])]
    pairs: list[tuple[str | None, str | None]] = [(n, n if n in names_b else None) for n in names_a]
    pairs += [(None, n) for n in names_b if n not in names_a]
    return pairs


# --- sections -----------------------------------------------------------------

def _range_dict(r: Range) -> dict[str, int | None]:
    return {"min": r.min, "max": r.max}


def _diff_ranges(a: Program, b: Program) -> RangesDiff:
    ra, rb = a.range_constraints, b.range_constraints
    out = RangesDiff()
    for sym, r in ra.items():
        if sym not in rb:
            out.removed[sym] = r
        elif rb[sym] != r:
            out.changed[sym] = (r, rb[sym])
    out.added = {sym: r for sym, r in rb.items() if sym not in ra}
    return out


def _weights(archive: Archive, program: str) -> dict[str, WeightEntry]:
    """Parameters, buffers and constants of a program from its configs."""
    out: dict[str, WeightEntry] = {}
    if archive.layout != "pt2":
        return out
    for which in ("weights", "constants"):
        for fqn, meta in archive.payload_config(program, which).items():
            if not isinstance(meta, dict):
                continue
            tm = meta.get("tensor_meta")
            dtype = shape = None
            if isinstance(tm, dict):
                code = tm.get("dtype")
                dtype = DTYPE_NAMES.get(code, f"dtype{code}") if isinstance(code, int) else None
                sizes = tm.get("sizes")
                if isinstance(sizes, list):
                    shape = tuple(sym_size(s) for s in sizes)
            path = meta.get("path_name")
            rel = f"data/{which}/{path}" if isinstance(path, str) else None
            crc = archive.checksum(rel) if rel else None
            out[str(fqn)] = WeightEntry(str(fqn), dtype, shape, rel, *(crc or (None, None)))
    return out


def _diff_weights(a: Archive, b: Archive, name_a: str, name_b: str) -> WeightsDiff:
    wa, wb = _weights(a, name_a), _weights(b, name_b)
    out = WeightsDiff()
    for fqn, x in wa.items():
        y = wb.get(fqn)
        if y is None:
            out.removed.append(x)
            continue
        fields = []
        if x.dtype != y.dtype:
            fields.append("dtype")
        if x.shape != y.shape:
            fields.append("shape")
        if x.crc is None or y.crc is None or (x.crc, x.size) != (y.crc, y.size):
            fields.append("bytes")  # a missing record counts as different bytes
        if fields:
            out.changed.append((x, y, tuple(fields)))
        else:
            out.same += 1
    out.added = [y for fqn, y in wb.items() if fqn not in wa]
    return out


def _payload_records(archive: Archive) -> set[str]:
    """Records the weights/constants configs describe (compared as weights)."""
    out: set[str] = set()
    if archive.layout != "pt2":
        return out
    for name in archive.program_names:
        for which in ("weights", "constants"):
            try:
                config = archive.payload_config(name, which)
            except ar.ArchiveError:
                continue  # unreadable config: its records are compared as records
            for meta in config.values():
                if isinstance(meta, dict) and isinstance(meta.get("path_name"), str):
                    out.add(f"data/{which}/{meta['path_name']}")
    return out


_SEMANTIC_KINDS = frozenset({ar.PROGRAM, ar.WEIGHTS_CONFIG, ar.CONSTANTS_CONFIG})


def _diff_records(a: Archive, b: Archive) -> RecordsDiff:
    def table(archive: Archive) -> dict[str, tuple[int, int] | None]:
        skip = _payload_records(archive)
        return {r.path: archive.checksum(r.path) for r in archive.records
                if r.kind not in _SEMANTIC_KINDS and r.path not in skip
                and r.path not in _VOLATILE_RECORDS}

    ta, tb = table(a), table(b)
    out = RecordsDiff()
    for path, sum_a in ta.items():
        if path not in tb:
            out.removed.append(path)
        elif sum_a != tb[path]:
            out.changed.append(path)
        else:
            out.same += 1
    out.added = [p for p in tb if p not in ta]
    return out


def _audit(a: Archive, b: Archive, diffs: Sequence[ProgramDiff], archive_level: FindingsDiff,
           *, whole: bool) -> None:
    """Audit both sides; findings present on one side only are new or resolved.
    A finding is the same when rule, severity, group and message agree and its
    node is the matched node (lines and renamed nodes do not count)."""
    names_a = [d.name for d in diffs if d.a is not None]
    names_b = [d.name_b or d.name for d in diffs if d.b is not None]
    fa = audit_archive(a, listings={d.name: d.listing_a for d in diffs if d.listing_a},
                       programs=names_a) if names_a else []
    fb = audit_archive(b, listings={(d.name_b or d.name): d.listing_b for d in diffs
                                    if d.listing_b}, programs=names_b) if names_b else []
    by_a = {d.name: d for d in diffs if d.a is not None}
    by_b = {(d.name_b or d.name): d for d in diffs if d.b is not None}
    node_maps = {id(d): _node_name_map(d) for d in diffs}

    def key_a(f: Finding) -> tuple:
        d = by_a.get(f.program or "")
        node = f.node
        if d is not None and node is not None:
            node = node_maps[id(d)].get(node, "\x00" + node)  # unmatched: never equal
        return (d.name if d else f.program, f.rule, f.severity, f.group, node, f.message)

    def key_b(f: Finding) -> tuple:
        d = by_b.get(f.program or "")
        return (d.name if d else f.program, f.rule, f.severity, f.group, f.node, f.message)

    count_a = Counter(key_a(f) for f in fa)
    count_b = Counter(key_b(f) for f in fb)
    left_a, left_b = count_a - count_b, count_b - count_a

    def place(f: Finding, d: ProgramDiff | None, bucket: str) -> None:
        target = d.findings if d is not None else archive_level
        getattr(target, bucket).append(f)

    for f in fa:
        k = key_a(f)
        if left_a[k] > 0:
            left_a[k] -= 1
            place(f, by_a.get(f.program or ""), "resolved")
    for f in fb:
        k = key_b(f)
        if left_b[k] > 0:
            left_b[k] -= 1
            place(f, by_b.get(f.program or ""), "new")
    if not whole:
        archive_level.new.clear()
        archive_level.resolved.clear()


def _node_name_map(d: ProgramDiff) -> dict[str, str]:
    """Names findings use (nodes, graph inputs) in A -> their names in B."""
    m = d.match
    if m is None:
        return {}
    out = {p.a.name: p.b.name for p in m.inputs}
    for g in m.graphs:
        for p in g.pairs:
            out.setdefault(p.a.name, p.b.name)
    return out


def _empty_side() -> dict[str, Any]:
    return {"changed": [], "added": [], "removed": []}


def _spec_side(pairs, added, removed) -> dict[str, Any]:
    return {"changed": [{"a": p.a.name, "b": p.b.name, "kind": p.a.kind, "fields": list(p.fields)}
                        for p in pairs if p.fields],
            "added": [s.name for s in added], "removed": [s.name for s in removed]}
