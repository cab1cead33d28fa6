"""`report` opens on a summary (programs, nodes, risks, findings by rule, what to do),
and repeated findings are one row with their lines and one fix: checked against the
core audit and program model of the bundled demo."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from inspector.core.archive import open_archive
from inspector.core.audit import audit_archive
from inspector.core.listing import render_listing

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("report") / "r.html"
    subprocess.run([sys.executable, "-m", "inspector", "report", str(DEMO), "-o", str(out)],
                   check=True, capture_output=True, cwd=ROOT, timeout=300,
                   env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return out.read_text()


@pytest.fixture(scope="module")
def truth():
    with open_archive(DEMO) as archive:
        listings = {n: render_listing(archive.program(n)) for n in archive.program_names}
        findings = audit_archive(archive, listings=listings)
        nodes = {n: archive.program(n).node_count for n in archive.program_names}
        risky = sum(1 for r in archive.records if r.risk)
    return findings, nodes, risky


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment))


def test_summary_comes_first_and_agrees_with_the_audit(page, truth):
    findings, nodes, risky = truth
    start = page.index('<section id="summary">')
    assert start < page.index('<section id="p0">')
    summary = _text(page[start:page.index("</section>", start)])
    for name, count in nodes.items():
        assert f"{name} ({count:,} nodes)" in summary
    assert f"{sum(nodes.values()):,} nodes in all" in summary
    assert f"{risky} risky record" in summary
    assert f"{len(findings)} audit findings by rule" in summary
    for (rule, sev), n in Counter((f.rule, f.severity) for f in findings).items():
        assert re.search(rf"{re.escape(rule)}: [^;]*\b{n} {sev}", summary), (rule, sev, n)
    todo = summary[summary.index("What to do"):]
    for fix in {f.fix for f in findings if f.fix}:
        assert _text(fix).strip() in todo


def test_repeated_findings_are_one_row_with_their_lines_and_one_fix(page, truth):
    findings, _, _ = truth
    cpu = [f for f in findings if f.program == "decoder" and f.rule == "device-literal"
           and f.group == "cpu"]
    assert len(cpu) > 5
    row = next(r for r in page.split("<tr") if f"{len(cpu)} cpu device-literal findings" in r)
    linked = re.findall(r'href="#p\d+-L(\d+)"', row)
    assert sorted(set(map(int, linked))) == sorted({f.line + 1 for f in cpu})
    assert _text(row).count(cpu[0].fix.split()[0]) >= 1
    section = page[page.index('id="p0-findings"'):page.index('id="p0-shapes"')]
    assert section.count(cpu[0].fix.replace("<", "&lt;").replace(">", "&gt;")) == 1
