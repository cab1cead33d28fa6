"""What the last Check and the last Profile of one document found, Qt-free.

The Profile panel keeps one GraphRunResults per open document (the job results
and the specs they ran with), and says what they found in a few lines
(`results_summary`); the tables and the listing's layers come from
core/run_layers.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspector.core.run_layers import ms_text


@dataclass
class GraphRunResults:
    """The last Check and the last Profile of one document, and their specs
    (inspector.jobs.graph_spec.GraphRunSpec, by kind: "check", "profile")."""

    check: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    specs: dict[str, Any] = field(default_factory=dict)


def results_summary(check: dict[str, Any] | None, profile: dict[str, Any] | None) -> str:
    """What the Profile panel says above its tables about a document's last Check
    and last Profile (the job results: dicts as the jobs wrote them)."""
    lines = []
    if check:
        parts = []
        for p in check.get("programs") or []:
            n = len(p.get("failures") or [])
            parts.append(f"{p.get('name')} runs there" if p.get("ok") else
                         f"{p.get('name')}: {n} node{'s' if n != 1 else ''} would fail")
        verdict = ("runs on" if all(p.get("ok") for p in check.get("programs") or [])
                   else "on")
        lines.append(f"Check {verdict} {check.get('device')}: " + "; ".join(parts))
    if profile:
        dev = profile.get("device_name") or profile.get("device")
        for p in profile.get("programs") or []:
            if not p.get("ok", True):
                lines.append(f"Profile  {p.get('name')}: failed on {dev}")
                continue
            parts = [f"forward {ms_text(float(p.get('forward_ms') or 0))}"]
            if isinstance(p.get("node_ms"), (int, float)):
                parts.append(f"nodes {ms_text(float(p['node_ms']))}")
            if isinstance(p.get("instrumented_ms"), (int, float)):
                parts.append(f"instrumented {ms_text(float(p['instrumented_ms']))}")
            lines.append(f"Profile  {p.get('name')} on {dev}: " + ", ".join(parts)
                         + f" ({profile.get('precision', 'fp32')}, median of "
                           f"{profile.get('repeats', '?')})")
            if p.get("warning"):
                lines.append(f"Warning  {p['warning']}")
    return "\n".join(lines) if lines else "Check or Profile to see results here."
