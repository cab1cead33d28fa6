"""`pt2-inspector audit FILE [--target DEV] [--json] [--rule NAME ...] [--fail-on SEV]`.

Finds what export baked in (device literals, frozen sizes, constants) and what
loading needs besides torch. Exit 0 when no finding is at or above --fail-on
(default warning), 1 when some are, 2 when the archive cannot be read: it can
gate CI. Reads the zip and the JSON only (never torch).

`--json` prints a list of findings with the keys rule, severity, program, node,
line (1-based line of `pt2-inspector list --program PROGRAM`), message, source
(file:line of the first user-code frame), fix and group.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from itertools import groupby

from inspector.commands.output import write_json
from inspector.core.audit_report import DEFAULT_TARGET
from inspector.core.archive import open_archive
from inspector.core.audit import (
    RULE_TITLES,
    RULES,
    SEVERITIES,
    WARNING,
    Finding,
    at_least,
    audit_archive,
    check_rules,
)
from inspector.core.device_names import parse_device
from inspector.core.listing import render_listing

NAME = "audit"
HELP = "find baked-in constants (device literals, frozen sizes) and load-time needs; exit 1 if found"

EXIT_CLEAN = 0
EXIT_FOUND = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("--target", metavar="DEV", default=DEFAULT_TARGET,
                        help="device the program will run on (cuda, cuda:1, mps, cpu...): "
                             "device literals that differ become errors (default: none)")
    parser.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    parser.add_argument("--rule", metavar="NAME", nargs="+", action="extend",
                        help=f"only these rules ({', '.join(RULES)})")
    parser.add_argument("--program", metavar="NAME", action="append",
                        help="only this program (repeatable; default: every program)")
    parser.add_argument("--fail-on", choices=SEVERITIES, default=WARNING,
                        help="exit 1 when a finding is at least this severe (default: warning)")


def run(args: argparse.Namespace) -> int:
    target = parse_device(args.target) if args.target else None
    rules = check_rules(args.rule)
    with open_archive(args.file) as archive:
        names = args.program or list(archive.program_names)
        for name in names:
            archive.program_path(name)  # a clear error for an unknown name
        listings = {name: render_listing(archive.program(name)) for name in names}
        findings = audit_archive(archive, target=target, rules=rules, listings=listings,
                                 programs=names)
    if args.json:
        write_json([f.as_dict() for f in findings])
    else:
        sys.stdout.write(format_report(args.file, findings, target=args.target, rules=rules))
    return exit_code(findings, args.fail_on)


def exit_code(findings: Sequence[Finding], fail_on: str) -> int:
    return EXIT_FOUND if any(at_least(f.severity, fail_on) for f in findings) else EXIT_CLEAN


def _counts(findings: Sequence[Finding]) -> str:
    c = Counter(f.severity for f in findings)
    parts = [f"{c[s]} {s}{'s' if c[s] != 1 and s != 'info' else ''}" for s in SEVERITIES if c[s]]
    return ", ".join(parts) or "nothing found"


def format_report(path: str, findings: Sequence[Finding], *, target: str | None = None,
                  rules: Sequence[str] = RULES) -> str:
    """Readable report, grouped by rule then by group (device, package, symbol)."""
    out = [f"audit of {path}" + (f" for target {target}" if target else "")
           + f": {_counts(findings)}"]
    by_rule = {rule: [f for f in findings if f.rule == rule] for rule in rules}
    for rule, items in by_rule.items():
        out.append("")
        out.append(f"{rule}: {RULE_TITLES.get(rule, rule)} ({_counts(items)})")
        if not items:
            continue
        key = lambda f: (f.program or "", f.group or "")  # noqa: E731
        for (program, group), grp in groupby(sorted(items, key=key), key=key):
            grp = list(grp)
            label = " ".join(p for p in (f"[{program}]" if program else "",
                                         group and f"{group}:") if p)
            out.append(f"  {label} {len(grp)} finding{'s' if len(grp) != 1 else ''}".rstrip())
            fixes = {f.fix for f in grp}
            for f in sorted(grp, key=lambda f: -1 if f.line is None else f.line):
                where = []
                if f.line is not None:
                    where.append(f"line {f.line + 1}")
                if f.node:
                    where.append(f.node)
                head = f"    {f.severity:<7} " + (" ".join(where) + ": " if where else "")
                out.append(head + f.message)
                if f.source:
                    out.append(f"            at {f.source}")
                if len(fixes) > 1 and f.fix:
                    out.append(f"            fix: {f.fix}")
            if len(fixes) == 1 and grp[0].fix:
                out.append(f"    fix: {grp[0].fix}")
    return "\n".join(out) + "\n"
