"""`pt2-inspector numerics FILE --device DEV (--precision P | --on DEV2 | --decompose |
--with OTHER.pt2 | --eager) [--rtol R --atol A] [--json]`: per-node numerics.

The program runs twice in a child (`python -m inspector.jobs numerics`), as exported
and as the candidate, in lockstep, and every node's two values are compared: max
abs / max rel / mean abs error, cosine similarity, and whether it passes
torch.testing.assert_close's tolerance for the dtypes. The answers come first: the
first node over tolerance (listing line, module, source line), the module that
amplifies error most, the first NaN/Inf and what made it.
Exit 0: every compared node passes; 1: some node does not (or a run failed);
2: bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

NAME = "numerics"
HELP = ("compare what each node computes against a candidate run (bf16/fp16, another "
        "device, decomposed, another archive, eager); exit 1 over tolerance")
TOP = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from inspector.jobs.numerics_spec import add_arguments as add_spec

    add_spec(parser, cli=True)
    parser.add_argument("--top", type=int, default=TOP, metavar="N",
                        help="rows per table in the text output (default %(default)s)")
    parser.add_argument("--json", action="store_true",
                        help='print {"reference", "candidate", "programs": [{"name", "nodes": '
                             '[{"node", "line", "module", "max_abs", "max_rel", "mean_abs", '
                             '"cosine", "passes", "nan", "inf"}], "first_over_tolerance", '
                             '"first_nan", "modules", ...}]}')


def run(args: argparse.Namespace) -> int:
    from inspector.commands.export import ProgressBar
    from inspector.jobs.numerics_spec import NumericsSpec
    from inspector.jobs.runner import run_job

    spec = NumericsSpec.from_args(args)
    spec.plan()
    bar = ProgressBar()

    def on_event(event: dict[str, Any]) -> None:
        if event["event"] == "progress":
            bar.update(event["stage"], event["fraction"])
        elif event["event"] == "log" and event.get("level") != "info":
            sys.stderr.write(f"{event['level']}: {event['message']}\n")

    try:
        result = run_job("numerics", spec.to_argv(), on_event=on_event)
    finally:
        bar.close()
    result.pop("event", None)
    if args.json:
        sys.stdout.write(json.dumps(json_view(result)) + "\n")
    else:
        sys.stdout.write(format_numerics(result, max(1, args.top)))
    failed = any(not p["ok"] or p["failing"] for p in result["programs"])
    return 1 if failed else 0


def json_view(result: dict[str, Any]) -> dict[str, Any]:
    """The issue's `--json`: first_nan as a node name (its details in first_nan_info)."""
    out = dict(result)
    programs = []
    for p in result["programs"]:
        q = dict(p)
        q["first_nan_info"] = p.get("first_nan")
        q["first_nan"] = (p.get("first_nan") or {}).get("node")
        q["first_inf_info"] = p.get("first_inf")
        q["first_inf"] = (p.get("first_inf") or {}).get("node")
        programs.append(q)
    out["programs"] = programs
    return out


def describe(run: dict[str, Any]) -> str:
    kind = run.get("kind")
    if kind == "reference":
        return f"as exported on {run['device']} ({run.get('threads')} threads)"
    if kind == "precision":
        lit = run.get("dtype_literals") or {}
        return (f"{run['precision']} on {run['device']} (weights, buffers, constants and "
                f"inputs cast; {lit.get('rewritten', 0)} frozen dtype literals rewritten, "
                f"{lit.get('kept', 0)} of the model's own casts kept)")
    if kind == "on":
        threads = f", {run['threads']} threads" if run.get("threads") else ""
        return f"on {run['device']}{threads}"
    if kind == "decompose":
        return f"run_decompositions() on {run['device']} ({run.get('nodes')} op nodes)"
    if kind == "with":
        return (f"{run['archive']} program {run['program']} on {run['device']} "
                f"({run.get('matched')} nodes matched, {run.get('removed')} only here, "
                f"{run.get('added')} only there)")
    if kind == "eager":
        return f"the eager toy model on {run['device']} (at module boundaries)"
    return str(run)


def _num(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    return f"{x:.3g}"


def _where(p: dict[str, Any], node: str | None) -> str:
    if node is None:
        return "none"
    n = next((n for n in p["nodes"] if n["node"] == node), None)
    if n is None:
        return node
    line = f"line {n['line']}" if n.get("line") else "line ?"
    return f"{node} ({line}, {n['module'] or '(root)'}) = {n['target']}"


def format_numerics(result: dict[str, Any], top: int = TOP) -> str:
    from inspector.commands.graph_job import format_failure, inputs_text

    out = [f"reference: {describe(result['reference'])}",
           f"candidate: {describe(result['candidate'])}"]
    for p in result["programs"]:
        out.append("")
        out.append(f"{p['name']}: inputs {inputs_text(p['inputs'])}; {p['compared']} nodes "
                   f"compared, {p['failing']} over tolerance")
        if not p["ok"]:
            out.append("  a run failed:")
            for f in p["failures"]:
                out.extend(format_failure(f))
        first = p["first_over_tolerance"]
        out.append(f"  first over tolerance: {_where(p, first)}")
        if first is not None:
            n = next(n for n in p["nodes"] if n["node"] == first)
            out.append(f"      max_abs {_num(n['max_abs'])}, max_rel {_num(n['max_rel'])}, "
                       f"rtol {_num(n['rtol'])} atol {_num(n['atol'])}"
                       + (f"; {'; '.join(n['notes'])}" if n.get("notes") else ""))
            source = _source(n.get("source"))
            if source:
                out.append(f"      {source}")
        for what in ("nan", "inf"):
            info = p.get(f"first_{what}")
            if info:
                made = (f"from graph input {info['made_by']}" if info["from_input"]
                        else "made by this node")
                out.append(f"  first {what.upper()}: {_where(p, info['node'])} in the "
                           f"{' and '.join(info['runs'])} run ({made})")
        if p.get("most_amplifying") is not None:
            m = next(m for m in p["modules"] if m["path"] == p["most_amplifying"])
            amp = ("makes error from exact inputs" if m.get("makes_error") else
                   f"error x{m['amplification']:.3g} (in {_num(m['in_error'])}, out "
                   f"{_num(m['out_error'])}, relative)")
            out.append(f"  most amplifying module: {m['path']} "
                       f"({m['class'].rsplit('.', 1)[-1]}): {amp}")
        for o in p.get("outputs", []):
            out.append(f"  output {o['index']}: max_abs {_num(o['max_abs'])}, "
                       f"max_rel {_num(o['max_rel'])}, cosine {_num(o['cosine'])}, "
                       f"passes {_num(o['passes'])}")
        if p.get("unmatched"):
            out.append(f"  {len(p['unmatched'])} nodes without a partner in the candidate "
                       f"(first: {', '.join(p['unmatched'][:5])})")
        if p["nodes"]:
            out.append(f"  {'max_abs':>10} {'max_rel':>10} {'cosine':>10} {'line':>6}  node "
                       "(largest errors)")
            for n in sorted(p["nodes"], key=lambda n: -(n["max_abs"] or 0.0))[:top]:
                flag = " " if n["passes"] else "!"
                out.append(f" {flag}{_num(n['max_abs']):>10} {_num(n['max_rel']):>10} "
                           f"{_num(n['cosine']):>10} {n['line'] or '?':>6}  {n['node']} "
                           f"[{n['module'] or '-'}]")
        mods = [m for m in p["modules"] if m["path"]]
        if mods:
            out.append(f"  {'failing':>8} {'max_abs':>10} {'amplif.':>9}  module")
            for m in sorted(mods, key=lambda m: -m["max_abs"])[:top]:
                amp = "new" if m.get("makes_error") else _num(m["amplification"])
                out.append(f"  {m['failing']:>8} {_num(m['max_abs']):>10} {amp:>9}  {m['path']}")
    return "\n".join(out) + "\n"


def _source(frame: dict[str, Any] | None) -> str:
    if not frame:
        return ""
    return f"{frame['file']}:{frame['line']}: {frame['code']}"
