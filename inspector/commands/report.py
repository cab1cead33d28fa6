"""`pt2-inspector report FILE -o REPORT.html [--program NAME] [--profile PROFILE.json]`.

One self-contained HTML page (no network loads; CSS and script inline): the
highlighted listing with source comments folded, audit findings linked to their
lines, shapes, a weights summary, the records with their risk flags, and the
profile of `pt2-inspector profile --json` when given. Reads the zip, the JSON and
the raw weight records only (never torch); the page is written atomically.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from inspector.core.archive import open_archive
from inspector.core.report import ReportError, build_report, check_report_output, write_atomically
from inspector.core.weight_stats import program_weights

NAME = "report"
HELP = "write one self-contained HTML page: listing, findings, shapes, weights, records, profile"

# A profile of a 100,000-node program is ~15 MB of JSON; more is not a profile.
MAX_PROFILE_BYTES = 64 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("-o", "--output", required=True, metavar="REPORT.html",
                        help="page to write (replaced atomically)")
    parser.add_argument("--program", metavar="NAME", help="only this program (default: every program)")
    parser.add_argument("--profile", metavar="PROFILE.json",
                        help="add the timings `pt2-inspector profile FILE --json` printed")


def run(args: argparse.Namespace) -> int:
    # before any work: never the archive or the profile, never a device, FIFO or link
    out = check_report_output(args.output, [args.file, args.profile])
    profile = read_profile(args.profile) if args.profile else None
    with open_archive(args.file) as archive:
        names = [args.program] if args.program else list(archive.program_names)
        for name in names:
            archive.program_path(name)  # a clear error for an unknown name
        weights = {name: program_weights(archive, name) for name in names}
        page = build_report(archive, names, weights=weights, profile=profile)
    write_atomically(out, page)
    sys.stdout.write(f"wrote {out} ({len(page.encode()) / 1024:.0f} KB)\n")
    return 0


def read_profile(path: str) -> dict[str, Any]:
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_PROFILE_BYTES:
            raise ReportError(f"profile {path} is {size:,} bytes, over the limit of {MAX_PROFILE_BYTES:,}")
        doc = orjson.loads(p.read_bytes())
    except OSError as exc:
        raise ReportError(f"cannot read profile {path} ({exc.strerror or exc})") from None
    except orjson.JSONDecodeError as exc:
        raise ReportError(f"profile {path} is not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("programs"), list):
        raise ReportError(f"profile {path} is not the output of `pt2-inspector profile --json` "
                          "(no 'programs' list)")
    return doc
