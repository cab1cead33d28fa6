"""`pt2-inspector run FILE --device DEV [options] [--json]`: timed generation.

Runs `python -m inspector.jobs run` in a child (torch never loads in this process);
on a terminal a status line follows the tokens; Ctrl+C stops the child.
"""

from __future__ import annotations

import argparse
import sys

from inspector.commands.output import ProgressBar, event_printer, write_json

NAME = "run"
HELP = "time the exported (or eager) toy generator from an archive on a device"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from inspector.jobs.spec import add_run_arguments

    add_run_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (device, mode, batch, per_token_ms, "
                             "encoder_ms, total_ms, p50/p90/p99_ms, tokens_per_s, token_ids)")


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
    sys.stdout.write(
        f"{result['mode']}{' + compile' if result['compile'] else ''} on {result['device']} "
        f"({result['device_name']}), {result['precision']}, batch {result['batch']}: "
        f"{result['tokens']} tokens\n"
        f"  encoder {result['encoder_ms']:.2f} ms, total {result['total_ms']:.1f} ms, "
        f"{result['tokens_per_s']:.1f} tokens/s\n"
        f"  per token p50 {result['p50_ms']:.2f} ms, p90 {result['p90_ms']:.2f} ms, "
        f"p99 {result['p99_ms']:.2f} ms\n"
    )
    return 0
