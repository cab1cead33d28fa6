"""`pt2-inspector info FILE [--json]`: programs, versions, records, risk flags, ranges.

Reads the zip and the JSON only (never torch)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from inspector.commands.output import write_json
from inspector.core.archive import open_archive
from inspector.core.summary import archive_summary, format_size

NAME = "info"
HELP = "describe an archive: programs, schema/torch versions, records, risk flags, dynamic ranges"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from inspector.core.audit import code_in_names  # the audit only when info runs

    with open_archive(args.file) as archive:
        summary = archive_summary(archive)
        summary["code_in_names"] = code_in_names(archive)
    if args.json:
        write_json(summary)
    else:
        sys.stdout.write(format_text(summary))
    return 0


def format_text(s: dict[str, Any]) -> str:
    out = [f"{s['path']}  ({format_size(s['size'])}, {s['layout']} archive"
           + (f" version {s['archive_version']}" if s["archive_version"] is not None else "")
           + (f", {s['byteorder']}-endian" if s["byteorder"] else "") + ")"]
    for p in s["programs"]:
        out.append("")
        out.append(f"program {p['name']}: {p['nodes']} nodes"
                   + (f" in {p['graphs']} graphs" if p["graphs"] > 1 else "")
                   + f", schema {p['schema_version']}, exported with torch {p['torch_version']}")
        kinds = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in p["input_kinds"].items())
        if kinds:
            out.append(f"  graph inputs: {kinds}")
        for i in p["inputs"]:
            if i.get("constant"):
                out.append(f"  input  {i['name']} = {i['value']!r} (constant {i['type']})")
            else:
                out.append(f"  input  {i['name']}: {i['type'] or '-'}")
        for o in p["outputs"]:
            out.append(f"  output {o['name']}: {o['type'] or '-'}")
        for sym, r in p["range_constraints"].items():
            hi = "inf" if r["max"] is None else r["max"]
            out.append(f"  range  {sym}: [{r['min']}, {hi}]")
    for m in s.get("compiled_models", []):
        out.append("")
        out.append(f"compiled model {m['name']} (AOTInductor): built for {m['target']}")
        out.append("  program: " + (f"{m['program']} (listed above)" if m["program"]
                                    else "not in the package (compiled code only)"))
        for f in m["files"]:
            flag = "!" if f["native_code"] else " "
            out.append(f"  {flag} {f['path']}  {format_size(f['size'])}, {f['what']}")
        known = sum(1 for k in m["kernels"] if k["source_nodes"])
        out.append(f"  kernels: {len(m['kernels'])} ({known} naming their source nodes)")
        for problem in m["problems"]:
            out.append(f"  problem: {problem}")
    risky = [r for r in s["records"] if r["risk"]]
    kinds: dict[str, list[int]] = {}
    for r in s["records"]:
        kinds.setdefault(r["kind"], [0, 0])
        kinds[r["kind"]][0] += 1
        kinds[r["kind"]][1] += r["size"]
    out.append("")
    out.append(f"records: {len(s['records'])}")
    for kind, (count, size) in sorted(kinds.items()):
        out.append(f"  {kind:<20} {count:>6}  {format_size(size):>10}")
    if risky:
        out.append("")
        out.append(f"risky records ({len(risky)}): torch would execute code from these "
                   "when loading the archive")
        for r in risky:
            out.append(f"  ! {r['path']}: {r['why']}")
    hidden = s.get("code_in_names") or []
    if hidden:
        out.append("")
        out.append(f"code in names ({len(hidden)}): strings torch would run as code "
                   "(audit rules code-in-names, operator-argument; check, profile and run "
                   "refuse the errors, --trust or not)")
        hidden = sorted(hidden, key=lambda f: f["severity"] != "error")
        for f in hidden[:20]:
            where = f"{f['program']}" + (f", node {f['node']}" if f.get("node") else "")
            out.append(f"  ! {where}: {f['message']}")
        if len(hidden) > 20:
            out.append(f"  ... and {len(hidden) - 20} more (pt2-inspector audit FILE)")
    return "\n".join(out) + "\n"
