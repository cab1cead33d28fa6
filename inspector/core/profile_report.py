"""Per-node times -> the profile report: nodes, and rollups by module, op and source line.

Pure Python, so the job that measures and the tests that check the arithmetic share
one implementation. `share` is always a part of the summed node time (not of the
forward time: the two differ by the instrumentation's cost, reported beside them).

- modules: inclusive, per `nn_module_stack` path: a node's time counts for its module
  and for every module around it (the root, path "", holds every node that has a
  module stack); `parent` is the enclosing module's path.
- ops: per target as the listing prints it (`torch.ops.aten.mm.default`).
- sources: per source line, the frame the listing's `# File:` comment names (the
  innermost one); nodes without a stack trace are left out of this rollup.
Each op and source row names its `slowest` node, so a viewer can jump from a row
to a node of the listing (the window's rollup tables do).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inspector.core.node_index import NodeInfo


def _round(ms: float) -> float:
    return round(ms, 6)


def _share(ms: float, total: float) -> float:
    return round(ms / total, 6) if total > 0 else 0.0


def node_records(timed: Iterable[tuple[str, float]], index: dict[str, NodeInfo],
                 fallback_targets: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """[(name, ms)] in graph order -> the report's `nodes` entries (graph order kept).
    A name the listing does not have keeps line None (tests treat that as a bug)."""
    timed = list(timed)
    total = sum(ms for _, ms in timed)
    fallback_targets = fallback_targets or {}
    out: list[dict[str, Any]] = []
    for name, ms in timed:
        info = index.get(name)
        out.append({
            "name": name,
            "target": info.target if info else fallback_targets.get(name, ""),
            "ms": _round(ms),
            "share": _share(ms, total),
            "line": info.line if info else None,
            "module": info.module if info else "",
        })
    return out


def module_rollup(nodes: list[dict[str, Any]], index: dict[str, NodeInfo]) -> list[dict[str, Any]]:
    total = sum(n["ms"] for n in nodes)
    rows: dict[str, dict[str, Any]] = {}
    for n in nodes:
        info = index.get(n["name"])
        if info is None:
            continue
        parent: str | None = None
        for entry in info.modules:
            row = rows.get(entry.path)
            if row is None:
                row = rows[entry.path] = {"path": entry.path, "class": entry.cls, "ms": 0.0,
                                          "share": 0.0, "nodes": 0, "parent": parent}
            row["ms"] += n["ms"]
            row["nodes"] += 1
            parent = entry.path
    _finish(rows.values(), total)
    return sorted(rows.values(), key=lambda r: (-r["ms"], r["path"]))


def _add(row: dict[str, Any], node: dict[str, Any], slowest: dict[int, float]) -> None:
    row["ms"] += node["ms"]
    row["nodes"] += 1
    if node["ms"] > slowest.get(id(row), -1.0):
        slowest[id(row)] = node["ms"]
        row["slowest"] = node["name"]


def _finish(rows: Iterable[dict[str, Any]], total: float) -> None:
    for row in rows:
        row["ms"] = _round(row["ms"])
        row["share"] = _share(row["ms"], total)


def op_rollup(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    total = sum(n["ms"] for n in nodes)
    rows: dict[str, dict[str, Any]] = {}
    slowest: dict[int, float] = {}
    for n in nodes:
        row = rows.setdefault(n["target"], {"target": n["target"], "ms": 0.0, "share": 0.0,
                                            "nodes": 0, "slowest": n["name"]})
        _add(row, n, slowest)
    _finish(rows.values(), total)
    return sorted(rows.values(), key=lambda r: (-r["ms"], r["target"]))


def source_rollup(nodes: list[dict[str, Any]], index: dict[str, NodeInfo]) -> list[dict[str, Any]]:
    total = sum(n["ms"] for n in nodes)
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    slowest: dict[int, float] = {}
    for n in nodes:
        info = index.get(n["name"])
        if info is None or not info.frames:
            continue
        f = info.frames[-1]
        row = rows.setdefault((f.file, f.line), {
            "file": f.file, "line": f.line, "function": f.function, "code": f.code,
            "user": f.is_user, "ms": 0.0, "share": 0.0, "nodes": 0, "slowest": n["name"]})
        _add(row, n, slowest)
    _finish(rows.values(), total)
    return sorted(rows.values(), key=lambda r: (-r["ms"], r["file"], r["line"]))


def failure_record(name: str, index: dict[str, NodeInfo], message: str,
                   fallback_target: str = "") -> dict[str, Any]:
    """One entry of a program's `failures` (check and profile share the shape)."""
    info = index.get(name)
    return {
        "node": name,
        "target": info.target if info else fallback_target,
        "line": info.line if info else None,
        "message": message,
        "frames": info.frame_dicts() if info else [],
    }
