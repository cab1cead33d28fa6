"""`pt2-inspector check FILE --device DEV [--program NAME] [--json]`: will it run there?

A dry run of each program on DEV with fake tensors (no memory, no compute; DEV need
not exist here), in a child (`python -m inspector.jobs check`). Every node that would
fail is listed with its listing line, torch's message and where the model made it.
Exit 0: every program runs on DEV; 1: nodes would fail; 2: bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NAME = "check"
HELP = "dry-run each program on a device with fake tensors: which nodes would fail there"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from inspector.jobs.graph_spec import add_arguments as add_spec

    add_spec(parser, profile=False)
    parser.add_argument("--budget", metavar="SIZE",
                        help="memory DEV has for the program (24GiB, 8GB, ...): add whether "
                             "the static plan's peak fits it at the checked sizes (`memory`); "
                             "exit 1 when it does not")
    parser.add_argument("--json", action="store_true",
                        help='print {"device", "programs": [{"name", "ok", "failures": '
                             '[{"node", "target", "line", "message", "frames"}], "memory" '
                             '(with --budget: {"peak_bytes", "peak_node", "line", '
                             '"budget_bytes", "fits", "largest"})}]}')


def run(args: argparse.Namespace) -> int:
    from inspector.commands.graph_job import run_graph_job

    budget = None
    if getattr(args, "budget", None) is not None:
        from inspector.core.memory_plan import parse_size

        budget = parse_size(args.budget)  # an error line before any work
    result = run_graph_job("check", args, profile=False)
    failed = any(not p["ok"] for p in result["programs"])
    if budget is not None:
        memory_answers(args, result, budget)
        failed = failed or any(p["memory"]["fits"] is False for p in result["programs"])
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stdout.write(format_check(result))
    return 1 if failed else 0


def memory_answers(args: argparse.Namespace, result: dict[str, Any], budget: int) -> None:
    """Each checked program's static memory plan at the sizes the dry run used
    (core/memory_plan.py; the archive alone), against `budget`: its `memory` entry."""
    from inspector.core.archive import open_archive
    from inspector.core.memory_report import program_memory
    from inspector.jobs.graph_spec import GraphRunSpec

    _names, plans = GraphRunSpec.from_args(args).plan()
    with open_archive(args.file) as archive:
        for p in result["programs"]:
            program = archive.program(p["name"])
            symbols = plans[p["name"]].symbols if p["name"] in plans else {}
            dims = {k: v for k, v in symbols.items() if k in program.range_constraints}
            report = program_memory(program, dims, budget, archive=archive)
            plan = report.plan
            i = plan.peak_index
            p["memory"] = {"peak_bytes": plan.peak_bytes, "peak_node": plan.peak_node(),
                           "line": report.line(i) if i is not None else None,
                           "budget_bytes": budget, "fits": report.fits,
                           "largest": report.largest or {}}


def format_check(result: dict[str, Any]) -> str:
    from inspector.commands.graph_job import format_failure, inputs_text

    out = []
    for p in result["programs"]:
        n = len(p["failures"])
        verdict = (f"runs on {result['device']}" if p["ok"] else
                   f"{n} node{'s' if n != 1 else ''} would fail on {result['device']}")
        out.append(f"{p['name']}: {verdict} ({p['nodes']} nodes; inputs {inputs_text(p['inputs'])})")
        for f in p["failures"]:
            out.extend(format_failure(f))
        for u in p.get("unchecked") or []:
            out.append(f"  line {u['line'] or '?'}: {u['node']} not checked "
                       f"(a dry run cannot tell: {u['message'][:200]})")
        if p.get("memory"):
            from inspector.core.memory_plan import format_bytes

            m = p["memory"]
            verdict = "fits in" if m["fits"] else "does not fit in"
            out.append(f"  memory: peak {format_bytes(m['peak_bytes'])} at {m['peak_node']} "
                       f"(line {m['line'] or '?'}) {verdict} {format_bytes(m['budget_bytes'])}"
                       " (static plan: the archive's shapes at these inputs)")
            largest = ", ".join(f"{k} <= {v}" if v is not None else f"{k}: none"
                                for k, v in sorted(m["largest"].items()))
            if largest:
                out.append(f"    largest that fit: {largest}")
    return "\n".join(out) + "\n"
