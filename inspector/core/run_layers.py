"""A `check` or `profile` job result -> the annotation layers the window shows (no Qt).

The Profile panel publishes what a run found on each program as annotation layers
(inspector/core/annotations.py), keyed by the node names the jobs report (torch's FX
names, which are the names the listing prints):

- "profile": heat per node (its median ms, text "1.23 ms", tooltip with the share),
  heat per module path (inclusive, from the job's `modules` rollup) for the module
  tree's time column, and an error mark on a node the real run failed at;
- "check": an error mark per failing node with torch's message as the (plain-text)
  tooltip, a warning mark per node a dry run could not decide (`unchecked`).

Rows for the panel's tables come from the same result (`node_rows`, `failure_rows`,
and the rollups by op and by source line: `op_rows`, `source_rows`), so the tables,
the gutter and the details pane read one set of numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inspector.core.annotations import ERROR, WARNING, AnnotationLayer, Heat, Mark

CHECK_SOURCE = "check"
PROFILE_SOURCE = "profile"


def ms_text(ms: float) -> str:
    """A time for a narrow column (the listing's heat column fits 10 characters)."""
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms:.3f} ms"


def share_text(share: float) -> str:
    return f"{share * 100:.1f}%"


@dataclass(frozen=True, slots=True)
class NodeRow:
    program: str
    name: str
    target: str
    ms: float
    share: float
    line: int | None  # 1-based line of `list --program` (as the job reports it)
    module: str


@dataclass(frozen=True, slots=True)
class FailureRow:
    program: str
    node: str
    target: str
    line: int | None
    message: str
    severity: str  # error: fails there; warning: a dry run cannot tell
    where: str  # the innermost frame outside torch, "file:line" ("" if none)


@dataclass(frozen=True, slots=True)
class OpRow:
    """One target's nodes in one program (the job's `ops` rollup)."""

    program: str
    target: str
    ms: float
    share: float
    nodes: int
    slowest: str  # the name of its slowest node ("" if the result names none)


@dataclass(frozen=True, slots=True)
class SourceRow:
    """The nodes one source line made, in one program (the job's `sources` rollup)."""

    program: str
    file: str
    line: int | None
    function: str
    code: str
    user: bool
    ms: float
    share: float
    nodes: int
    slowest: str


def _programs(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in result.get("programs") or [] if isinstance(p, dict) and p.get("name")]


def _float(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _line(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def node_rows(result: dict[str, Any]) -> list[NodeRow]:
    rows = []
    for p in _programs(result):
        for n in p.get("nodes") or []:
            if isinstance(n, dict) and isinstance(n.get("name"), str):
                rows.append(NodeRow(str(p["name"]), n["name"], str(n.get("target") or ""),
                                    _float(n.get("ms")), _float(n.get("share")),
                                    _line(n.get("line")), str(n.get("module") or "")))
    return rows


def _rollup(result: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any], str]]:
    """(program, row, slowest node) of one rollup. A result from before rows named
    their slowest node: the slowest node of the program with the row's target."""
    out = []
    for p in _programs(result):
        slowest_of: dict[str, str] = {}
        for n in sorted((n for n in p.get("nodes") or [] if isinstance(n, dict)),
                        key=lambda n: _float(n.get("ms"))):
            slowest_of[str(n.get("target") or "")] = str(n.get("name") or "")
        for r in p.get(key) or []:
            if isinstance(r, dict):
                named = r.get("slowest")
                slowest = named if isinstance(named, str) else (
                    slowest_of.get(str(r.get("target") or ""), "") if key == "ops" else "")
                out.append((str(p["name"]), r, slowest))
    return out


def op_rows(result: dict[str, Any]) -> list[OpRow]:
    return [OpRow(program, str(r.get("target") or ""), _float(r.get("ms")),
                  _float(r.get("share")), _line(r.get("nodes")) or 0, slowest)
            for program, r, slowest in _rollup(result, "ops")]


def source_rows(result: dict[str, Any]) -> list[SourceRow]:
    return [SourceRow(program, str(r.get("file") or ""), _line(r.get("line")),
                      str(r.get("function") or ""), str(r.get("code") or ""),
                      r.get("user") is True, _float(r.get("ms")), _float(r.get("share")),
                      _line(r.get("nodes")) or 0, slowest)
            for program, r, slowest in _rollup(result, "sources")]


def _where(frames: Any) -> str:
    frames = [f for f in frames if isinstance(f, dict)] if isinstance(frames, list) else []
    lib = next((f for f in reversed(frames)
                if "/torch/" not in str(f.get("file", "")).replace("\\", "/")), None)
    f = lib or (frames[-1] if frames else None)
    return f"{f.get('file')}:{f.get('line')}" if f else ""


def failure_rows(result: dict[str, Any]) -> list[FailureRow]:
    rows = []
    for p in _programs(result):
        for key, severity in (("failures", ERROR), ("unchecked", WARNING)):
            for f in p.get(key) or []:
                if isinstance(f, dict) and isinstance(f.get("node"), str):
                    rows.append(FailureRow(str(p["name"]), f["node"], str(f.get("target") or ""),
                                           _line(f.get("line")), str(f.get("message") or ""),
                                           severity, _where(f.get("frames"))))
    return rows


def _failure_marks(rows: list[FailureRow], program: str, what: str) -> dict[str, Mark]:
    marks: dict[str, Mark] = {}
    for r in rows:
        if r.program != program:
            continue
        if r.severity == ERROR:
            tip = f"{what}: fails here\n{r.message}"
        else:
            tip = f"{what}: not checked (a dry run cannot tell)\n{r.message}"
        old = marks.get(r.node)
        marks[r.node] = Mark(r.severity if old is None or old.severity != ERROR else ERROR,
                             "\n".join(t for t in ((old.tooltip if old else ""), tip) if t))
    return marks


def check_layers(result: dict[str, Any]) -> dict[str, AnnotationLayer]:
    """program -> its "check" layer (an empty layer for a program that runs there, so
    publishing it clears an older check's marks)."""
    device = str(result.get("device") or "?")
    rows = failure_rows(result)
    return {str(p["name"]): AnnotationLayer(
        CHECK_SOURCE, marks=_failure_marks(rows, str(p["name"]), f"check on {device}"),
        title=f"check on {device}") for p in _programs(result)}


def profile_layers(result: dict[str, Any]) -> dict[str, AnnotationLayer]:
    """program -> its "profile" layer: node heat, module heat, failure marks."""
    device = str(result.get("device_name") or result.get("device") or "?")
    rows = node_rows(result)
    failures = failure_rows(result)
    out: dict[str, AnnotationLayer] = {}
    for p in _programs(result):
        name = str(p["name"])
        heat = {r.name: Heat(r.ms, ms_text(r.ms),
                             f"{share_text(r.share)} of the summed node time on {device}")
                for r in rows if r.program == name}
        modules = {}
        for m in p.get("modules") or []:
            if isinstance(m, dict) and isinstance(m.get("path"), str):
                ms, share = _float(m.get("ms")), _float(m.get("share"))
                nodes = m.get("nodes")
                modules[m["path"]] = Heat(ms, ms_text(ms), f"{share_text(share)} of the summed "
                                          f"node time ({nodes} nodes)")
        out[name] = AnnotationLayer(PROFILE_SOURCE, marks=_failure_marks(failures, name, "profile"),
                                    heat=heat, modules=modules, title="time")
    return out
