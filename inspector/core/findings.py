"""Audit findings: what a rule reports, its severities and rule names, and the
helpers that order, count and filter findings.

Kept apart from the rules (`audit.py`) so that modules adding findings of their
own (`audit_load.py`, the window's audit service) depend on the vocabulary, not
on the rules, and no import cycle forms.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from inspector.core.errors import InspectorError

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)  # most severe first
_RANK = {ERROR: 0, WARNING: 1, INFO: 2}

DEVICE_LITERAL = "device-literal"
WEIGHT_DEVICE = "weight-device"
LIFTED_CONSTANT = "lifted-constant"
SPECIALIZED_DIM = "specialized-dim"
PORTABILITY = "portability"
RISKY_RECORD = "risky-record"
DTYPE_LITERAL = "dtype-literal"
CODE_IN_NAMES = "code-in-names"
OPERATOR_ARGUMENT = "operator-argument"
RULES = (DEVICE_LITERAL, WEIGHT_DEVICE, LIFTED_CONSTANT, SPECIALIZED_DIM, PORTABILITY,
         RISKY_RECORD, DTYPE_LITERAL, CODE_IN_NAMES, OPERATOR_ARGUMENT)
RULE_TITLES = {
    DEVICE_LITERAL: "Device literals baked into node arguments",
    WEIGHT_DEVICE: "Weights, buffers and constants recorded on a device",
    LIFTED_CONSTANT: "Lifted tensor constants (values frozen into the program)",
    SPECIALIZED_DIM: "Specialized dimensions",
    PORTABILITY: "Portability: what loading needs besides torch",
    RISKY_RECORD: "Records torch would execute code from when loading",
    DTYPE_LITERAL: "Dtype literals frozen from the fp32 example",
    CODE_IN_NAMES: "Code in names torch writes into the code it generates",
    OPERATOR_ARGUMENT: "Targets and operator arguments that are not torch operators",
}

class AuditError(InspectorError):
    """Bad audit options (an unknown rule or severity)."""


# A msgspec Struct rather than a frozen dataclass: a big program has tens of
# thousands of findings (31,000 device literals on the 400k-node benchmark
# program), and a Struct is made ~3x faster; gc=False because it holds no
# containers, so the cyclic collector never scans them.
class Finding(msgspec.Struct, frozen=True, gc=False):
    rule: str
    severity: str
    program: str | None  # None: about the archive, not one program
    node: str | None
    line: int | None  # 0-based index into the program's listing lines
    message: str
    source: str | None  # file:line of the first user-code frame
    fix: str | None
    group: str | None = None  # within a rule: the device, the package, the symbol...

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "severity": self.severity, "program": self.program,
            "node": self.node, "line": None if self.line is None else self.line + 1,
            "message": self.message, "source": self.source, "fix": self.fix,
            "group": self.group,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        line = d.get("line")
        return cls(d["rule"], d["severity"], d.get("program"), d.get("node"),
                   None if line is None else int(line) - 1, d["message"], d.get("source"),
                   d.get("fix"), d.get("group"))


def at_least(severity: str, threshold: str) -> bool:
    return _RANK[severity] <= _RANK[threshold]


def check_rules(names: Iterable[str] | None) -> tuple[str, ...]:
    if not names:
        return RULES
    out = []
    for name in names:
        if name not in RULES:
            raise AuditError(f"unknown audit rule {name!r} (rules: {', '.join(RULES)})")
        out.append(name)
    return tuple(out)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    order = {r: i for i, r in enumerate(RULES)}
    return sorted(findings, key=lambda f: (order.get(f.rule, 99), f.program or "",
                                          _RANK.get(f.severity, 9), f.group or "",
                                          -1 if f.line is None else f.line))


def counts(findings: Iterable[Finding]) -> dict[str, dict[str, int]]:
    """{rule: {severity: n}} for every rule (zeros included), e.g. for panel headers."""
    out = {rule: dict.fromkeys(SEVERITIES, 0) for rule in RULES}
    for f in findings:
        out.setdefault(f.rule, dict.fromkeys(SEVERITIES, 0))[f.severity] += 1
    return out
