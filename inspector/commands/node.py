"""`pt2-inspector node FILE NAME [--program NAME] [--json] [--map RECORDED=LOCAL ...]`.

A node's statement, module path, users and stack frames, each frame with the
file that holds its source on this machine (`local`, null when none does):
paths recorded on the exporting machine are mapped to the packages installed
here (inspector/core/sources.py). Reads the zip and the JSON only (never torch).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from inspector.core.archive import open_archive
from inspector.core.listing import render_listing
from inspector.core.node_report import NodeNotFoundError, describe_node, find_node
from inspector.core.sources import PathMapping, SourceResolver, local_note, why_not_shown

NAME = "node"
HELP = "one node: its statement, module path, users and stack frames with their local files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("name", metavar="NAME",
                        help="node or value name as `list` shows it (SUBGRAPH.NAME in a nested graph)")
    parser.add_argument("--program", metavar="NAME",
                        help="program that holds the node (default: the first one that has it)")
    parser.add_argument("--map", metavar="RECORDED=LOCAL", action="append", default=[],
                        dest="mappings",
                        help="read files recorded under RECORDED from the folder LOCAL "
                             "(repeatable; the longest matching prefix wins)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    resolver = SourceResolver([PathMapping.parse(m) for m in args.mappings])
    with open_archive(args.file) as archive:
        names = [args.program] if args.program else archive.program_names
        for name in names:
            archive.program_path(name)  # a clear error for an unknown program
        error: NodeNotFoundError | None = None
        for name in names:
            program = archive.program(name)
            try:
                node = find_node(program, args.name)
            except NodeNotFoundError as exc:  # try the next program
                error = error or exc
                continue
            report = describe_node(program, render_listing(program), node, resolver)
            break
        else:
            assert error is not None
            raise error
    if args.json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(format_text(report))
    return 0


def format_text(r: dict[str, Any]) -> str:
    where = f"{r['program']}" + (f", graph {r['graph']}" if r["graph"] else "")
    out = [f"node {r['name']} ({where}, listing line {r['listing_line']})",
           f"  statement: {r['statement']}",
           f"  target:    {r['target']}",
           f"  module:    {r['module'] or '(root)'}"]
    users = ", ".join(f"{u['name']} (line {u['line']})" for u in r["users"]) or "(none)"
    out.append(f"  users:     {users}")
    out.append(f"  frames ({len(r['frames'])}, outermost first):" if r["frames"]
               else "  frames:    (no stack trace recorded)")
    for f in r["frames"]:
        kind = "user" if f["user"] else "library"
        out.append(f"    {f['file']}:{f['line_text']} in {f['function']} [{kind}]")
        if f["code"]:
            out.append(f"        {f['code']}")
        if f["local"] is None:
            out.append(f"        local: {why_not_shown(f['file'])}")
        else:
            note = local_note(f["local_check"], f.get("local_line"))
            note = f" ({note})" if note else ""
            out.append(f"        local: {f['local']}{note}")
            if f["local_check"] == "differs":
                out.append(f"        local line: {f.get('local_code', '')}")
    return "\n".join(out) + "\n"
