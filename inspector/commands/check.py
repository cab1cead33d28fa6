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
    parser.add_argument("--json", action="store_true",
                        help='print {"device", "programs": [{"name", "ok", "failures": '
                             '[{"node", "target", "line", "message", "frames"}]}]}')


def run(args: argparse.Namespace) -> int:
    from inspector.commands.graph_job import run_graph_job

    result = run_graph_job("check", args, profile=False)
    failed = any(not p["ok"] for p in result["programs"])
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stdout.write(format_check(result))
    return 1 if failed else 0


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
    return "\n".join(out) + "\n"
