"""`pt2-inspector retarget FILE [--device DEV] [--dtype bf16|fp16] [--program NAME]
-o OUT.pt2 [--json]`.

Rewrites the devices the archive records (node device arguments, tensor
metadata, weights/constants configs) to DEV and copies every other record as it
is. Needs neither torch nor the device: export on a CPU box, retarget for the GPU
box. `--dtype bf16` rewrites the dtypes export froze from the fp32 example and
converts the floating weights (core/retarget_dtype.py). Written atomically; then the
result is audited and the change reported.
"""

from __future__ import annotations

import argparse
import sys

from inspector.commands.output import write_json
from inspector.core.archive import open_archive
from inspector.core.audit import DEVICE_LITERAL, DTYPE_LITERAL, ERROR, audit_archive
from inspector.core.device_names import parse_device
from inspector.core.retarget import RetargetError, RetargetResult, retarget

NAME = "retarget"
HELP = "rewrite the devices baked into an archive (no torch, no GPU needed) into a new .pt2"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help=".pt2 archive to read (left unchanged)")
    parser.add_argument("--device", metavar="DEV",
                        help="target device: cpu, cuda, cuda:1, mps, meta, xpu:0, ...")
    parser.add_argument("--dtype", choices=("bf16", "fp16"),
                        help="also (or only) rewrite the dtypes export froze from the fp32 "
                             "example and convert the floating weights: an archive a bf16 "
                             "(fp16) deployment loads; the model's own casts are kept")
    parser.add_argument("--program", metavar="NAME", action="append",
                        help="only this program (repeatable; default: every program)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.pt2",
                        help="archive to write (never the input)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    if args.device is None and args.dtype is None:
        raise RetargetError("retarget needs --device DEV, --dtype bf16|fp16 or both")
    # a clear error before touching any file
    target = parse_device(args.device) if args.device is not None else None
    result = retarget(args.file, args.output, str(target) if target else None,
                      dtype=args.dtype, programs=args.program)
    names = [p.program for p in result.programs]
    remaining: dict[str, int] = {}
    frozen: dict[str, int] = {}
    with open_archive(result.output) as archive:
        if target is not None:
            after = audit_archive(archive, target=target, rules=[DEVICE_LITERAL],
                                  programs=names)
            remaining = {name: sum(1 for f in after if f.program == name
                                   and f.severity == ERROR) for name in names}
        if args.dtype is not None:
            after = audit_archive(archive, rules=[DTYPE_LITERAL], programs=names)
            frozen = {name: sum(1 for f in after if f.program == name) for name in names}
    if args.json:
        doc = result.as_dict()
        if target is not None:
            doc["remaining_off_target"] = remaining
        if args.dtype is not None:
            doc["remaining_fp32_literals"] = frozen
        write_json(doc)
    else:
        sys.stdout.write(format_result(result, remaining, frozen))
    return 0


def format_result(result: RetargetResult, remaining: dict[str, int],
                  frozen: dict[str, int] | None = None) -> str:
    what = " and ".join(x for x in (result.device, result.dtype) if x)
    out = [f"wrote {result.output} for {what} ({result.seconds:.2f} s; "
           f"{result.records_copied} records copied unchanged)"]
    for p in result.programs:
        if p.dtype is not None:
            d = p.dtype
            out.append(f"  {p.program}: {d['literals']} frozen dtype literals now "
                       f"{result.dtype}, {d['kept']} of the model's own casts kept; "
                       f"{d['values']} value dtypes and {d['payloads']} weights/constants "
                       f"converted")
            out.append(f"    audit of the result: {(frozen or {}).get(p.program, 0)} frozen "
                       "fp32 literals left")
        if not result.device:
            continue
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
