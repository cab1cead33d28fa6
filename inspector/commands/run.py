"""`pt2-inspector run FILE --device DEV [options] [--json]`: timed generation.

Runs `python -m inspector.jobs run` in a child (torch never loads in this process);
on a terminal a status line follows the tokens; Ctrl+C stops the child.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from inspector.commands.output import ProgressBar, event_printer, write_json

NAME = "run"
HELP = "time the exported (or eager) toy generator from an archive on a device"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from inspector.jobs.spec import add_run_arguments

    add_run_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (device, mode, batch, threads, per_token_ms, "
                             "encoder_ms, total_ms, p50/p90/p99_ms, tokens_per_s, token_ids, "
                             "spread: p50/q1/q3/min/max/n of each figure, run_p50_ms, "
                             "load_average, cpus, warnings)")


def run(args: argparse.Namespace) -> int:
    from inspector.jobs.runner import run_job
    from inspector.jobs.spec import RunSpec

    spec = RunSpec.from_args(args)  # RunSpecError -> `error: ...`, exit 2
    # defaults from the archive's ranges, and a refusal before the child starts
    spec, notes = spec.fit_archive()
    for note in notes:  # the child gets the fitted spec, so it has nothing to say again
        sys.stderr.write(f"warning: {note}\n")
    bar = ProgressBar()
    on_event = event_printer(bar, lambda e: f"token {e['step'] + 1}: {e['ms']:.2f} ms")
    try:
        result = run_job("run", spec.to_argv(), on_event=on_event)
    finally:
        bar.close()
    result.pop("event", None)
    if args.json:
        write_json(result)
        return 0
    sys.stdout.write(format_run(result))
    return 0


def format_run(result: dict[str, Any]) -> str:
    """The text answer: each figure with its spread over the timed runs and their count
    (the job's warning, if any, went to stderr as it came)."""
    from inspector.core.timing_spread import range_text

    sp = result.get("spread") or {}
    runs = int(result.get("repeats") or 1)
    threads = result.get("threads")
    head = (f"{result['mode']}{' + compile' if result['compile'] else ''} on {result['device']} "
            f"({result['device_name']}), {result['precision']}, batch {result['batch']}"
            + (f", {threads} thread{'s' if threads != 1 else ''}" if threads else "")
            + f": {result['tokens']} tokens, {runs} timed run{'s' if runs != 1 else ''} after "
              f"{result.get('warmup', 0)} warm-up\n")
    tok = sp.get("per_token_ms")
    per_token = (f"  per token p50 {result['p50_ms']:.2f} ms"
                 + (f" (IQR {tok['q1']:.2f}-{tok['q3']:.2f} ms over {tok['n']} tokens)"
                    if tok else "")
                 + f", p90 {result['p90_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms\n")
    lines = [head, per_token]
    if sp.get("run_p50_ms") and int(sp["run_p50_ms"]["n"]) >= 2:
        lines.append(f"  each run's p50 {range_text(sp['run_p50_ms'])}\n")
    enc = range_text(sp["encoder_ms"]) if sp.get("encoder_ms") else f"{result['encoder_ms']:.2f} ms"
    total = range_text(sp["total_ms"]) if sp.get("total_ms") else f"{result['total_ms']:.1f} ms"
    lines.append(f"  encoder {enc}, whole generation {total}, "
                 f"{result['tokens_per_s']:.1f} tokens/s\n")
    return "".join(lines)
