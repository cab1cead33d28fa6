"""`pt2-inspector shapes FILE [--program NAME] [--json]`: inputs, symbols, ranges,
assertions, guards and dims that look specialized, per program.

Reads the zip and the JSON only (never torch); the model is inspector/core/shapes.py."""

from __future__ import annotations

import argparse
import sys

import orjson

from inspector.core.archive import open_archive
from inspector.core.shapes import archive_shapes, format_text

NAME = "shapes"
HELP = "inputs' shapes, symbols with ranges and sources, runtime assertions, guards, specializations"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("--program", metavar="NAME", help="only this program (default: every program)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    with open_archive(args.file) as archive:
        shapes = archive_shapes(archive, args.program)
    if args.json:
        doc = {"programs": [s.to_json() for s in shapes]}
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(format_text(shapes))
    return 0
