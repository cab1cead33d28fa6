"""`pt2-inspector devices [--json]`: the devices torch sees (listed by a child process)."""

from __future__ import annotations

import argparse
import sys

from inspector.commands.output import write_json

NAME = "devices"
HELP = "list the devices torch sees (cpu, cuda:N with name/memory/capability, mps)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from inspector.jobs.runner import run_job

    result = run_job("devices")
    result.pop("event", None)
    if args.json:
        write_json(result)
        return 0
    for d in result["devices"]:
        mem = f"{d['memory_bytes'] / 2**30:.1f} GiB" if d.get("memory_bytes") else "?"
        extra = f", capability {d['capability']}" if d.get("capability") else ""
        sys.stdout.write(f"{d['id']:<8} {d['name']} ({mem}{extra})\n")
    sys.stdout.write(f"torch {result['torch']}"
                     + (f", CUDA {result['cuda']}" if result.get("cuda") else ", no CUDA build")
                     + "\n")
    return 0
