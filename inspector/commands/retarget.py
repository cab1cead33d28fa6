"""`pt2-inspector retarget FILE --device DEV [--program NAME] -o OUT.pt2 [--json]`.

Rewrites the devices the archive records (node device arguments, tensor
metadata, weights/constants configs) to DEV and copies every other record as it
is. Needs neither torch nor the device: export on a CPU box, retarget for the GPU
box. Written atomically; then the result is audited and the change reported.
"""

from __future__ import annotations

import argparse
import sys

from inspector.commands.output import write_json
from inspector.core.archive import open_archive
from inspector.core.audit import DEVICE_LITERAL, ERROR, audit_archive
from inspector.core.device_names import parse_device
from inspector.core.retarget import RetargetResult, retarget

NAME = "retarget"
HELP = "rewrite the devices baked into an archive (no torch, no GPU needed) into a new .pt2"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive to read (left unchanged)")
    parser.add_argument("--device", required=True, metavar="DEV",
                        help="target device: cpu, cuda, cuda:1, mps, meta, xpu:0, ...")
    parser.add_argument("--program", metavar="NAME", action="append",
                        help="only this program (repeatable; default: every program)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.pt2",
                        help="archive to write (never the input)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    target = parse_device(args.device)  # a clear error before touching any file
    result = retarget(args.file, args.output, str(target), programs=args.program)
    with open_archive(result.output) as archive:
        names = [p.program for p in result.programs]
        after = audit_archive(archive, target=target, rules=[DEVICE_LITERAL], programs=names)
    remaining = {name: sum(1 for f in after if f.program == name and f.severity == ERROR)
                 for name in names}
    if args.json:
        doc = result.as_dict()
        doc["remaining_off_target"] = remaining
        write_json(doc)
    else:
        sys.stdout.write(format_result(result, remaining))
    return 0


def format_result(result: RetargetResult, remaining: dict[str, int]) -> str:
    out = [f"wrote {result.output} for {result.device} ({result.seconds:.2f} s; "
           f"{result.records_copied} records copied unchanged)"]
    for p in result.programs:
        was = ", ".join(f"{n} on {d}" for d, n in sorted(p.from_devices.items()))
        out.append(f"  {p.program}: {p.literals} device literal{'s' if p.literals != 1 else ''} "
                   f"rewritten" + (f" (were {was})" if was else "")
                   + f"; {p.tensor_meta} tensor metadata and {p.payloads} weight/constant "
                   f"records now on {result.device}")
        left = remaining.get(p.program, 0)
        out.append(f"    audit of the result: {left} device literal{'s' if left != 1 else ''} "
                   f"off {result.device}")
    for note in result.notes:
        out.append(f"  note: {note}")
    return "\n".join(out) + "\n"
