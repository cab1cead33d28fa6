"""`pt2-inspector export [options] -o OUT.pt2`: export the toy model with chosen Dim ranges.

The export runs in a child process (`python -m inspector.jobs export`); this command
validates the spec first (a bad spec writes nothing and never starts torch), draws a
progress bar on a terminal, and on Ctrl+C cancels the child and removes its partial file.
"""

from __future__ import annotations

import argparse
import sys

from inspector.commands.output import ProgressBar, event_printer, write_json

NAME = "export"
HELP = "export the toy image-to-text model with chosen Dim ranges to a .pt2"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from inspector.jobs.spec import add_spec_arguments

    add_spec_arguments(parser)
    parser.add_argument("-o", "--output", required=True, metavar="OUT.pt2",
                        help="archive to write (replaced atomically)")
    parser.add_argument("--separate", action="store_true",
                        help="write OUT-encoder.pt2 and OUT-decoder.pt2 instead (one program each)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


__all__ = ["NAME", "HELP", "add_arguments", "run", "ProgressBar"]  # ProgressBar: moved to output


def run(args: argparse.Namespace) -> int:
    from inspector.jobs.export import check_output
    from inspector.jobs.runner import Job, cleanup_partial, run_job
    from inspector.jobs.spec import ExportSpec, separate_paths

    spec = ExportSpec.from_args(args)  # ExportSpecError -> `error: ...`, exit 2
    check_output(args.output, separate=args.separate)
    argv = [*spec.to_argv(), "-o", args.output] + (["--separate"] if args.separate else [])
    bar = ProgressBar()
    started: list[Job] = []
    try:
        result = run_job("export", argv, on_event=event_printer(bar), on_start=started.append)
    finally:
        bar.close()
        if started:  # the child has ended (run_job waits): remove what it staged,
            # whether it finished, failed, was cancelled or was SIGKILLed mid-save
            cleanup_partial(args.output, started[0].pid)
    if args.json:
        write_json(result)
    else:
        outs = separate_paths(args.output).values() if args.separate else [args.output]
        ranges = result.get("ranges", {})
        sys.stdout.write(
            f"wrote {', '.join(str(o) for o in outs)} ({result['bytes'] / 1e6:.1f} MB, "
            f"programs {', '.join(result['programs'])}; batch {ranges['batch'][0]}:"
            f"{ranges['batch'][1]}, seq_len {ranges['seq_len'][0]}:{ranges['seq_len'][1]}; "
            f"{result['seconds']:.1f} s)\n"
        )
    return 0
