"""`pt2-inspector memory FILE [--program NAME] [--dim SYM=N ...] [--budget SIZE] [--json]`:
memory per node and the peak, from the archive alone (the zip and the JSON; no torch).

At the sizes export traced with, or the given `--dim`s: each node's output bytes,
the live bytes while it runs (weights and inputs included, aliases counted once),
the peak and where it is; with `--budget`, whether it fits and the largest value of
each dynamic dim that does. The plan is inspector/core/memory_plan.py, the report
inspector/core/memory_report.py. Exit 0; 1 with --budget when a program does not
fit; 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys

import orjson

from inspector.core.archive import open_archive

NAME = "memory"
HELP = "memory per node, the peak and where it is, from the archive alone; with --budget: fits?"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("--program", metavar="NAME", action="append", dest="programs",
                        help="only this program (repeatable; default: every program)")
    parser.add_argument("--dim", metavar="SYM=N", action="append", default=[], dest="dims",
                        help="a symbol's value (repeatable; `shapes` lists the symbols); "
                             "the others keep the size export traced with")
    parser.add_argument("--budget", metavar="SIZE",
                        help="memory the program may use (24GiB, 8GB, 512MiB, bytes): say "
                             "whether it fits and the largest value of each dynamic dim that does")
    parser.add_argument("--json", action="store_true",
                        help='print {"programs": [{"name", "dims", "nodes": [{"node", "line", '
                             '"module", "out_bytes", "live_bytes"}], "peak": {"bytes", "node"}, '
                             '"weights_bytes", "fits", "largest"}]}')


def run(args: argparse.Namespace) -> int:
    from inspector.core.inputs import parse_dims
    from inspector.core.memory_plan import MemoryPlanError, parse_size
    from inspector.core.memory_report import format_text, program_memory

    dims = parse_dims(args.dims)
    budget = parse_size(args.budget) if args.budget is not None else None
    with open_archive(args.file) as archive:
        names = args.programs or archive.program_names
        for name in names:
            archive.program_path(name)  # a clear error for an unknown program
        programs = [archive.program(name) for name in names]
        known = {s for p in programs for s in p.range_constraints}
        unknown = sorted(set(dims) - known)
        if unknown:
            raise MemoryPlanError(f"--dim {unknown[0]}: no program here has that symbol "
                                  f"(symbols: {', '.join(sorted(known)) or 'none'})")
        reports = [program_memory(p, {k: v for k, v in dims.items() if k in p.range_constraints},
                                  budget, archive=archive) for p in programs]
    if args.json:
        doc = {"programs": [r.to_json() for r in reports]}
        sys.stdout.write(orjson.dumps(doc).decode() + "\n")
    else:
        sys.stdout.write(format_text(reports))
    return 1 if budget is not None and any(r.fits is False for r in reports) else 0
