"""The audit as a service for the window: audit an archive (reusing the listings the
window already built), retarget it and audit the result, and turn findings into
annotation layers for the listing's gutter. Pure Python, no Qt; the Audit panel runs
these functions on its document's tasks (inspector/ui/tasks.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector.core.annotations import AnnotationLayer, Mark, worse
from inspector.core.audit import Finding

AUDIT_SOURCE = "audit"  # the annotation layer the audit publishes
# The audit's target device when none is chosen, for `pt2-inspector audit` and the
# window alike: none (every device literal is reported, none is an error until the
# user says where the program will run).
DEFAULT_TARGET: str | None = None


@dataclass
class AuditReport:
    path: str
    target: str | None
    findings: list[Finding]

    def counts(self) -> Counter[str]:
        return Counter(f.severity for f in self.findings)

    def layers(self) -> dict[str, AnnotationLayer]:
        """program -> the audit's annotation layer (worst severity per line, every
        finding's message in the tooltip)."""
        out: dict[str, AnnotationLayer] = {}
        for f in self.findings:
            if f.program is None or f.line is None:
                continue
            layer = out.setdefault(f.program, AnnotationLayer(AUDIT_SOURCE))
            tip = f"{f.severity}: {f.message}"
            layer.line_marks[f.line] = worse(layer.line_marks.get(f.line), Mark(f.severity, tip))
        return out

    def marks(self) -> dict[str, dict[int, str]]:
        """program -> {listing line: worst severity}."""
        return {p: {ln: m.severity for ln, m in layer.line_marks.items()}
                for p, layer in self.layers().items()}


def audit_file(path: str, target: str | None) -> AuditReport:
    from inspector.core.archive import open_archive

    with open_archive(path) as archive:
        return audit_opened(path, archive, {}, target)


def audit_opened(path: str, archive: Any, listings: dict[str, Any],
                 target: str | None) -> AuditReport:
    """Audit an archive the window already opened, reusing the listings it built (a
    big program is parsed and rendered once, not once per panel)."""
    from inspector.core.audit import audit_archive
    from inspector.core.device_names import parse_device
    from inspector.core.gcpause import gc_paused
    from inspector.core.listing import render_listing

    device = parse_device(target) if target else None
    with gc_paused(freeze=True):  # parsing builds millions of small objects: see gcpause.py
        # Listings give each finding its line: the same lines the window shows.
        listings = {n: listings.get(n) or render_listing(archive.program(n))
                    for n in archive.program_names}
    findings = audit_archive(archive, target=device, listings=listings)
    return AuditReport(str(path), target, findings)


def retarget_file(source: str, output: str, device: str,
                  progress: Callable[[float], None], cancelled: Callable[[], bool]
                  ) -> tuple[Any, AuditReport]:
    """Write `output` with every recorded device set to `device`, then audit it."""
    from inspector.core.retarget import retarget

    result = retarget(source, output, device, on_progress=lambda f: progress(0.9 * f),
                      should_cancel=cancelled)
    progress(0.95)
    return result, audit_file(str(result.output), device)


def program_names(report: AuditReport) -> list[str]:
    """The programs of the audited archive (those a finding names, when it is gone)."""
    from inspector.core.archive import open_archive
    from inspector.core.errors import InspectorError

    try:
        with open_archive(report.path) as archive:
            return list(archive.program_names)
    except InspectorError:
        return sorted({f.program for f in report.findings if f.program})
