"""Per-node comparisons -> the numerics report's answers and module rollups.

Pure Python (the job measures, this sums up, tests check the arithmetic alone).

- first_over_tolerance: the first node, in program order, that fails its tolerance.
- first_nan / first_inf: the first node whose value holds a NaN (an Inf) in either
  run, with the run(s) and what made it: the node itself, or a graph input (a weight)
  that already held one.
- modules: one row per `nn_module_stack` path (inclusive: a node counts for its
  module and every module around it): nodes, failing nodes, the worst node, and the
  module's error at its outputs against its inputs. A module's outputs are its nodes
  used by a node outside it (or by the graph's output); its inputs the values its
  nodes use that are made outside it (graph inputs included). Error is the relative
  2-norm error |c - r| / |r| of a floating value; `amplification` = the outputs'
  largest error / the inputs' largest error (None without floating values on both
  sides, and None with `makes_error` true when error appears inside a module fed
  exact inputs).
- most_amplifying: the module (not the root, nor a wrapper holding every node) with
  the largest finite amplification,
  or, when none is finite, the first module that makes error from exact inputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from inspector.core.node_index import NodeInfo


def first_failing(nodes: Sequence[dict[str, Any]]) -> str | None:
    return next((n["node"] for n in nodes if not n["passes"]), None)


def first_nonfinite(nodes: Sequence[dict[str, Any]], inputs: Sequence[dict[str, Any]],
                    uses: dict[str, list[str]], what: str) -> dict[str, Any] | None:
    """The first node with a NaN (what="nan") or an Inf in either run, and its cause."""
    bad_inputs = {i["name"] for i in inputs if i.get(what)}
    for n in nodes:
        if not n.get(what):
            continue
        counts = n.get("nonfinite") or {}
        runs = [run for run in ("reference", "candidate")
                if (counts.get(run) or {}).get(what)]
        fed = [name for name in uses.get(n["node"], []) if name in bad_inputs]
        return {"node": n["node"], "line": n.get("line"), "module": n.get("module"),
                "runs": runs, "made_by": fed[0] if fed else n["node"],
                "from_input": bool(fed)}
    return None


def module_rollup(nodes: Sequence[dict[str, Any]], index: dict[str, NodeInfo],
                  uses: dict[str, list[str]], errors: dict[str, float | None],
                  outputs: Sequence[str]) -> list[dict[str, Any]]:
    """Rows in the order modules first appear in the program."""
    members: dict[str, set[str]] = {}
    rows: dict[str, dict[str, Any]] = {}
    for n in nodes:
        info = index.get(n["node"])
        if info is None:
            continue
        parent: str | None = None
        for entry in info.modules:
            row = rows.get(entry.path)
            if row is None:
                row = rows[entry.path] = {
                    "path": entry.path, "class": entry.cls, "parent": parent, "nodes": 0,
                    "failing": 0, "max_abs": 0.0, "worst": None, "first_failing": None,
                    "in_error": None, "out_error": None, "amplification": None}
                members[entry.path] = set()
            members[entry.path].add(n["node"])
            row["nodes"] += 1
            if not n["passes"]:
                row["failing"] += 1
                if row["first_failing"] is None:
                    row["first_failing"] = n["node"]
            err = n.get("max_abs") or 0.0
            if row["worst"] is None or err > row["max_abs"]:
                row["max_abs"] = max(row["max_abs"], err)
                row["worst"] = n["node"]
            parent = entry.path
    users: dict[str, list[str]] = {}
    for user, used in uses.items():
        for name in used:
            users.setdefault(name, []).append(user)
    graph_outputs = set(outputs)
    for path, row in rows.items():
        inside = members[path]
        ins = {v for m in inside for v in uses.get(m, []) if v not in inside}
        outs = {m for m in inside if m in graph_outputs
                or any(u not in inside for u in users.get(m, []))}
        row["in_error"] = _largest(errors, ins)
        row["out_error"] = _largest(errors, outs)
        ratio = _ratio(row["out_error"], row["in_error"])
        row["makes_error"] = ratio == math.inf
        row["amplification"] = ratio if ratio != math.inf else None
    return list(rows.values())


def _largest(errors: dict[str, float | None], names: set[str]) -> float | None:
    values = [errors[n] for n in names if errors.get(n) is not None]
    return max(values) if values else None


def _ratio(out: float | None, into: float | None) -> float | None:
    if out is None or into is None:
        return None
    if into > 0:
        return out / into
    return math.inf if out > 0 else None


def most_amplifying(modules: Sequence[dict[str, Any]]) -> str | None:
    # the root and the wrappers that hold every node (a model inside its export
    # wrapper) say nothing about where error grows
    whole = max((m["nodes"] for m in modules), default=0)
    modules = [m for m in modules if m["path"] and m["nodes"] < whole]
    finite = [m for m in modules if m["amplification"] is not None]
    if finite:
        return max(finite, key=lambda m: m["amplification"])["path"]
    made = [m for m in modules if m.get("makes_error")]
    return made[0]["path"] if made else None
