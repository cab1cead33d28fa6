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
    parser.add_argument("--all", action="store_true",
                        help="list every failing node, also those a baked device literal "
                             "explains (default: those counted in the cause line)")
    parser.add_argument("--json", action="store_true",
                        help='print {"device", "programs": [{"name", "ok", "nodes", '
                             '"graph_nodes", "failures": [{"node", "target", "line", '
                             '"message", "frames", "literals"}], "memory" (with --budget: '
                             '{"peak_bytes", "peak_node", "line", "budget_bytes", "fits", '
                             '"largest"})}], "retarget": {"device", "programs": {NAME: '
                             '{"traced", "removed", "left", "failures_after"}}}}')


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
    if any(_traced(p) for p in result["programs"]):
        result["retarget"] = verify_retarget(args, result)
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stdout.write(format_check(result, every=args.all, file=args.file,
                                      device=args.device))
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


def _traced(program: dict[str, Any]) -> list[dict[str, Any]]:
    """The failures that trace back to a baked device literal."""
    return [f for f in program.get("failures") or [] if f.get("literals")]


def verify_retarget(args: argparse.Namespace, result: dict[str, Any]) -> dict[str, Any]:
    """Retarget the programs whose failures trace back to device literals into a
    temporary archive (core/retarget.py, no torch here) and dry-run that one with the
    same inputs: which of those failures it removes, by node name."""
    import dataclasses
    import tempfile
    from pathlib import Path

    from inspector.core.retarget import retarget
    from inspector.jobs.graph_spec import GraphRunSpec
    from inspector.jobs.runner import run_job

    names = [p["name"] for p in result["programs"] if _traced(p)]
    spec = GraphRunSpec.from_args(args)
    with tempfile.TemporaryDirectory(prefix="pt2i-check-") as tmp:
        out = Path(tmp) / "retargeted.pt2"
        sys.stderr.write(f"verifying: a dry run of the archive retargeted to {args.device}…\n")
        retarget(args.file, out, args.device, programs=names)
        again = run_job("check", dataclasses.replace(spec, file=str(out),
                                                     programs=tuple(names)).to_argv())
    after = {p["name"]: {f["node"] for f in p["failures"]} for p in again["programs"]}
    programs = {}
    for p in result["programs"]:
        if p["name"] not in after:
            continue
        traced = [f["node"] for f in _traced(p)]
        left = [n for n in traced if n in after[p["name"]]]
        programs[p["name"]] = {"traced": len(traced), "removed": len(traced) - len(left),
                               "left": left, "failures_after": len(after[p["name"]])}
    return {"device": args.device, "programs": programs}


def _lines(values: list[int | None], limit: int = 8) -> str:
    shown = sorted({v for v in values if v is not None})
    text = ", ".join(str(v) for v in shown[:limit])
    return text + (", …" if len(shown) > limit else "")


def format_check(result: dict[str, Any], every: bool = False, file: str = "FILE",
                 device: str | None = None) -> str:
    """The answer first: per program its verdict, then the cause of the failures that
    baked device literals explain (grouped, with what retarget was verified to do),
    then the failures left over, each in full."""
    from inspector.commands.graph_job import format_failure, inputs_text

    dev = device or result["device"]
    verified = (result.get("retarget") or {}).get("programs") or {}
    out = []
    for p in result["programs"]:
        n = len(p["failures"])
        total = p["nodes"]
        verdict = (f"runs on {result['device']}" if p["ok"] else
                   f"{n} of {total} nodes would fail on {result['device']}")
        count = "" if not p["ok"] else f"{total} nodes; "
        out.append(f"{p['name']}: {verdict} ({count}inputs {inputs_text(p['inputs'])})")
        traced = _traced(p)
        if traced:
            literals = {lit["node"]: lit["line"] for f in traced for lit in f["literals"]}
            which = f"all {n} failures" if len(traced) == n else f"{len(traced)} of the {n} failures"
            lines = list(literals.values())
            out.append(f"  cause: {which} trace back to "
                       f"{len(literals)} device literal{'s' if len(literals) != 1 else ''} "
                       f"baked in at export (line{'s' if len(set(lines)) != 1 else ''} "
                       f"{_lines(lines)}; "
                       f"`pt2-inspector audit {file} --target {dev}` lists them)")
            v = verified.get(p["name"])
            if v is not None:
                how = (f"all {v['traced']} of them" if not v["left"] else
                       f"{v['removed']} of the {v['traced']} ({len(v['left'])} stay)")
                out.append(f"  `pt2-inspector retarget {file} --device {dev} -o OUT.pt2` "
                           f"removes {how} (dry run verified)")
        leftover = [f for f in p["failures"] if every or not f.get("literals")]
        if traced and not every:
            out.append(f"  failures left over: {len(leftover) or 'none'}"
                       + (" (--all lists every failing node)" if traced else ""))
        for f in leftover:
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
