"""`pt2-inspector weights FILE [--program NAME] [--json]`: statistics from the raw records.

Min, max, mean, std (Bessel-corrected, of the finite values) and the counts of
NaN, Inf and zeros of every parameter, buffer and tensor constant, read from the
archive's records with numpy: never torch, never pickle (pickled records are
listed as "not read (pickled)"). `--json` prints

    {"programs": [{"name", "weights": [{"name", "kind", "dtype", "shape", "bytes",
                   "stats": {"min", "max", "mean", "std", "nan", "inf", "zeros"} | null,
                   "note"}]}]}

where `name` is the key of torch's ExportedProgram.state_dict (or .constants) and
kind is parameter, buffer or constant. Integers and bools count as numbers (a
bool's mean is the fraction True); complex weights have min/max null and the
mean as [real, imag]. A weight whose config does not fit its
record gets stats null and a note starting "error:"; the others are still read.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from inspector.core.archive import open_archive
from inspector.core.summary import format_size
from inspector.core.weight_stats import program_weights

NAME = "weights"
HELP = "statistics of every weight (min, max, mean, std, NaN/Inf/zero counts) from the raw records"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("--program", metavar="NAME", help="only this program (default: every program)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    with open_archive(args.file) as archive:
        names = [args.program] if args.program else list(archive.program_names)
        for name in names:
            archive.program_path(name)  # a clear error for an unknown name
        report = {"programs": [{"name": n, "weights": program_weights(archive, n)} for n in names]}
    if args.json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(format_text(report))
    return 0


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):  # complex mean
        return f"{v[0]:.4g}{v[1]:+.4g}j"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    return f"{v:.4g}"


def format_text(report: dict[str, Any]) -> str:
    out: list[str] = []
    for program in report["programs"]:
        weights = program["weights"]
        total = sum(w["bytes"] or 0 for w in weights)
        flagged = sum(1 for w in weights if w["stats"] and (w["stats"]["nan"] or w["stats"]["inf"]))
        out.append(f"program {program['name']}: {len(weights)} weights, {format_size(total)}"
                   + (f", {flagged} with NaN/Inf" if flagged else ""))
        header = ("name", "kind", "dtype", "shape", "min", "max", "mean", "std", "nan", "inf", "zeros")
        rows = []
        for w in weights:
            s = w["stats"] or {}
            shape = "[" + ", ".join(str(d) for d in w["shape"]) + "]"
            rows.append((w["name"], w["kind"], w["dtype"] or "-", shape,
                         *(_num(s.get(k)) for k in ("min", "max", "mean", "std", "nan", "inf", "zeros")),
                         w["note"]))
        widths = [max([len(header[i])] + [len(str(r[i])) for r in rows]) for i in range(len(header))]
        out.append("  " + "  ".join(h.ljust(widths[i]) for i, h in enumerate(header)).rstrip())
        for r in rows:
            line = "  " + "  ".join(str(c).ljust(widths[i]) for i, c in enumerate(r[:-1])).rstrip()
            if r[-1]:
                line += f"  ({r[-1]})"
            out.append(line)
        out.append("")
    return "\n".join(out)
