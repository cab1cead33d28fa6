"""`pt2-inspector profile FILE --device DEV [options] [--json]`: time per node.

A real run of each program (inputs made from its signature; `--dim`/`--input` choose
sizes) in a child (`python -m inspector.jobs profile`), every node timed, plus the
median uninstrumented forward so the instrumentation's cost is visible; rollups by
module, op and source line. One decoder step of the toy at sequence length N:
`profile toy.pt2 --program decoder --input input_ids=1xN`.
Exit 0: profiled; 1: a node failed during the run (reported as `check` does); 2: bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NAME = "profile"
HELP = "time every node of each program on a device, with rollups by module, op and source line"
TOP = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from inspector.jobs.graph_spec import add_arguments as add_spec

    add_spec(parser, profile=True)
    parser.add_argument("--top", type=int, default=TOP, metavar="N",
                        help="rows per table in the text output (default %(default)s)")
    parser.add_argument("--json", action="store_true",
                        help='print {"device", "programs": [{"name", "inputs", "forward_ms", '
                             '"nodes": [{"name", "target", "ms", "share", "line", "module"}], '
                             '"modules": [{"path", "class", "ms", "share", "nodes"}], ...}]}')


def run(args: argparse.Namespace) -> int:
    from inspector.commands.graph_job import run_graph_job

    result = run_graph_job("profile", args, profile=True)
    failed = any(not p["ok"] for p in result["programs"])
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stdout.write(format_profile(result, max(1, args.top)))
    return 1 if failed else 0


def _pct(share: float) -> str:
    return f"{100 * share:5.1f}%"


def _ratio(value: float | None) -> str:
    return f"{value:.3f}x" if value is not None else "-"


def format_memory(memory: dict[str, Any], top: int = TOP) -> list[str]:
    """The --memory section: measured beside the static plan, with the ratio."""
    from inspector.core.memory_plan import format_bytes

    peak = memory["peak"]
    out = [f"  memory ({memory['method']}):",
           f"    peak measured {format_bytes(peak['measured_bytes'])} at {peak['measured_node']}, "
           f"estimated {format_bytes(peak['estimated_bytes'])} at {peak['estimated_node']}: "
           f"{_ratio(peak['ratio'])}",
           f"    baseline (weights, inputs) measured {format_bytes(memory['baseline_bytes'])}, "
           f"estimated {format_bytes(memory['estimated_baseline_bytes'])}",
           f"    {'measured':>11} {'estimated':>11} {'ratio':>7} {'left':>11} {'planned':>11}"
           f" {'line':>6}  node (by measured peak)"]
    for n in sorted(memory["nodes"], key=lambda n: -n["measured_bytes"])[:top]:
        out.append(f"    {format_bytes(n['measured_bytes']):>11} {format_bytes(n['estimated_bytes']):>11}"
                   f" {_ratio(n['ratio']):>7} {format_bytes(n['allocated_bytes']):>11}"
                   f" {format_bytes(n['estimated_new_bytes']):>11} {n['line'] or '?':>6}  {n['name']}")
    return out


def _with_spread(ms: float, program: dict[str, Any], key: str) -> str:
    """'0.812 ms (0.80-0.85 over 5 runs)': the median and its runs' range."""
    s = (program.get("spread") or {}).get(key)
    if not s or int(s.get("n", 0)) < 2:
        return f"{ms:.3f} ms"
    return f"{ms:.3f} ms ({s['min']:.3f}-{s['max']:.3f} over {s['n']} runs)"


def format_profile(result: dict[str, Any], top: int = TOP) -> str:
    from inspector.commands.graph_job import format_failure, inputs_text

    out = [f"profile on {result['device']} ({result.get('device_name') or '?'}), "
           f"{result['precision']}, {result['timer']}, "
           + (f"{result['threads']} thread{'s' if result['threads'] != 1 else ''}, "
              if result.get("threads") else "")
           + f"median of {result['repeats']} runs after {result['warmup']} warm-up"]
    for p in result["programs"]:
        out.append("")
        out.append(f"{p['name']}: inputs {inputs_text(p['inputs'])}")
        if not p["ok"]:
            out.append(f"  failed on {result['device']}:")
            for f in p["failures"]:
                out.extend(format_failure(f))
            continue
        fwd, nodes, inst = p["forward_ms"], p["node_ms"], p["instrumented_ms"]
        ratio = f"{nodes / fwd:.2f}x" if fwd else "-"
        out.append(f"  forward {_with_spread(fwd, p, 'forward_ms')} (uninstrumented); "
                   f"nodes sum {nodes:.3f} ms ({ratio} of forward); instrumented run "
                   f"{_with_spread(inst, p, 'instrumented_ms')}")
        if p.get("warning"):
            out.append(f"  warning: {p['warning']}")
        out.append(f"  {'ms':>10} {'share':>6} {'line':>6}  node = target")
        for n in sorted(p["nodes"], key=lambda n: -n["ms"])[:top]:
            out.append(f"  {n['ms']:10.4f} {_pct(n['share'])} {n['line'] or '?':>6}  "
                       f"{n['name']} = {n['target']}  [{n['module'] or '-'}]")
        out.append(f"  {'ms':>10} {'share':>6} {'nodes':>6}  module")
        for m in p["modules"][:top]:
            cls = m["class"].rsplit(".", 1)[-1]
            out.append(f"  {m['ms']:10.4f} {_pct(m['share'])} {m['nodes']:>6}  "
                       f"{m['path'] or '(root)'} ({cls})")
        out.append(f"  {'ms':>10} {'share':>6} {'nodes':>6}  op")
        for o in p["ops"][:top]:
            out.append(f"  {o['ms']:10.4f} {_pct(o['share'])} {o['nodes']:>6}  {o['target']}")
        out.append(f"  {'ms':>10} {'share':>6} {'nodes':>6}  source line")
        for s in p["sources"][:top]:
            out.append(f"  {s['ms']:10.4f} {_pct(s['share'])} {s['nodes']:>6}  "
                       f"{s['file']}:{s['line']}: {s['code']}")
        if p.get("memory"):
            out.extend(format_memory(p["memory"], top))
    return "\n".join(out) + "\n"
