"""The export job: the toy model with chosen Dim ranges -> one .pt2 with two programs.

`python -m inspector.jobs export [spec options] -o OUT.pt2 [--separate]`

Writes `encoder` (batch dynamic, 3x224x224 static) and `decoder` (batch and seq_len
dynamic) into one archive with `package_pt2`, plus `extra/pt2_inspector.json` (the spec
and the toy config) so the archive describes itself. `--separate` writes the seed blog's
two files instead (OUT-encoder.pt2, OUT-decoder.pt2), each with the same extra record.

Atomic: everything is written into `partial_dir(OUT, pid)` beside the target and renamed
onto it at the end; a failure or a cancel removes that folder and leaves any existing OUT
untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import time
import traceback
from pathlib import Path
from typing import Any

from inspector.core.atomic import check_output_path, remove_stale_partials
from inspector.core.errors import InspectorError
from inspector.core.shapes import dynamic_dims_of_spec
from inspector.jobs.protocol import Emitter
from inspector.jobs.spec import (
    ExportSpec,
    ExportSpecError,
    add_spec_arguments,
    partial_dir,
    separate_paths,
)

EXTRA_RECORD = "pt2_inspector.json"  # lands at <root>/extra/pt2_inspector.json
EXTRA_FORMAT = "pt2-inspector/export/1"


class ExportFailed(InspectorError):
    """torch could not export with this spec; `details` keeps torch's own text."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_spec_arguments(parser)
    parser.add_argument("-o", "--output", required=True, metavar="OUT.pt2")
    parser.add_argument("--separate", action="store_true",
                        help="write OUT-encoder.pt2 and OUT-decoder.pt2 (the blog's two files)")


def main(args: argparse.Namespace, emit: Emitter) -> int:
    spec = ExportSpec.from_args(args)
    result = export_archive(spec, args.output, separate=args.separate, emit=emit)
    emit.result(**result)
    return 0


def check_output(output: str | os.PathLike[str], *, separate: bool = False) -> Path:
    """The rule of every command that writes (core/atomic.py), for OUT.pt2 and,
    with `separate`, for the two files written instead."""
    out = check_output_path(output, suffix=".pt2", error=ExportSpecError)
    if separate:
        for path in separate_paths(out).values():
            check_output_path(path, suffix=".pt2", error=ExportSpecError)
    return out


def export_archive(
    spec: ExportSpec, output: str | os.PathLike[str], *, separate: bool = False,
    emit: Emitter | None = None,
) -> dict[str, Any]:
    """Export per `spec` and write atomically; returns the result event's fields."""
    spec.validate()
    out = check_output(output, separate=separate)
    say = emit or Emitter(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the call
    timings: dict[str, float] = {}
    t_all = time.perf_counter()

    def stage(name: str, fraction: float) -> None:
        say.progress(name, fraction)
        timings[name] = time.perf_counter()

    stage("import torch", 0.0)
    import torch

    from inspector.jobs import toy

    device = _check_device(torch, spec.device)
    stage("build model", 0.05)
    config = toy.build_config(spec.preset)
    model = toy.model_from_config(config, spec.seed).to(device)
    enc_args, dec_args = toy.example_inputs(
        config, spec.example_batch, spec.example_seq, spec.cache_position, spec.device, spec.seed
    )
    batch = _dim(torch, "batch", spec.batch_min, spec.batch_max)
    seq = _dim(torch, "seq_len", spec.seq_min, spec.seq_max)
    dec_shapes: tuple[Any, ...] = ({0: batch, 1: seq}, {0: batch})
    if spec.cache_position:
        dec_shapes = (*dec_shapes, {0: seq})

    stage("export encoder", 0.2)
    programs = {"encoder": _export(torch, model.encoder, enc_args, ({0: batch},), spec.strict)}
    stage("export decoder", 0.45)
    decoder = toy.DecoderWrapper(model, cache_position=spec.cache_position)
    programs["decoder"] = _export(torch, decoder, dec_args, dec_shapes, spec.strict)
    if spec.decompose:
        stage("decompose", 0.7)
        programs = {name: _decompose(torch, name, ep) for name, ep in programs.items()}
    del model, decoder

    extra = {EXTRA_RECORD: json.dumps(describe(spec, config, programs, torch), indent=1)}
    # "save" is reported once the partial folder exists, so a parent that cancels on
    # it exercises the cleanup of half-written files.
    paths = _write_atomically(torch, out, programs, extra, separate,
                              on_staging=lambda: stage("save", 0.8))
    say.progress("done", 1.0)
    marks = list(timings.items())
    stage_s = {name: round(marks[i + 1][1] - t, 3) if i + 1 < len(marks) else
               round(time.perf_counter() - t, 3) for i, (name, t) in enumerate(marks)}
    return {
        "paths": [str(p) for p in paths],
        "programs": sorted(programs),
        "bytes": sum(p.stat().st_size for p in paths),
        "seconds": round(time.perf_counter() - t_all, 3),
        "stage_seconds": stage_s,
        "ranges": {"batch": [spec.batch_min, spec.batch_max],
                   "seq_len": [spec.seq_min, spec.seq_max]},
        "range_constraints": {n: _ranges(ep) for n, ep in programs.items()},
        "spec": spec.to_json(),
    }


def describe(spec: ExportSpec, config: Any, programs: dict[str, Any], torch: Any) -> dict[str, Any]:
    """The archive's self-description (extra/pt2_inspector.json): plain JSON only."""
    import transformers

    from inspector.jobs import toy

    return {
        "format": EXTRA_FORMAT,
        "spec": spec.to_json(),
        "toy_config": toy.config_to_json(config),
        "programs": {
            "encoder": {"inputs": ["pixel_values"], "image_shape": list(toy.IMAGE_SHAPE)},
            "decoder": {"inputs": ["input_ids", "encoder_hidden_states"]
                        + (["cache_position"] if spec.cache_position else []),
                        "output": "logits"},
        },
        "tokens": {"start": toy.START_TOKEN, "end": toy.END_TOKEN, "pad": toy.PAD_TOKEN,
                   "vocab": toy.VOCAB_SIZE, "max_length": toy.MAX_LENGTH},
        "range_constraints": {n: _ranges(ep) for n, ep in programs.items()},
        # what dynamic_shapes asked for, per program and input ({dim: Dim name}), so
        # the shapes view can flag a Dim that came out constant
        "dynamic_shapes": {prog: {inp: {str(d): n for d, n in dims.items()}
                                  for inp, dims in by_input.items()}
                           for prog, by_input in dynamic_dims_of_spec(spec.to_json()).items()},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "python": platform.python_version()},
    }


def _ranges(ep: Any) -> dict[str, list[int | None]]:
    def num(v: Any) -> int | None:
        try:
            return int(v)
        except (TypeError, ValueError, OverflowError):
            return None  # int_oo

    return {str(s): [num(r.lower), num(r.upper)] for s, r in ep.range_constraints.items()}


def _check_device(torch: Any, device: str) -> Any:
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ExportSpecError(f"bad export device {device!r} ({exc})") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = dev.index or 0
        if index >= count:
            raise ExportSpecError(
                f"export device {device} is not available here (torch sees {count} CUDA "
                "device(s); export on cpu, then audit/retarget the archive)"
            )
    elif dev.type == "mps" and not (
        getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()
    ):
        raise ExportSpecError(f"export device {device} is not available here (no MPS)")
    return dev


def _dim(torch: Any, name: str, lo: int, hi: int) -> Any:
    # torch's Dim refuses min == max: a one-size range is a static dimension.
    return None if lo == hi else torch.export.Dim(name, min=lo, max=hi)


def _export(torch: Any, module: Any, args: tuple[Any, ...], shapes: tuple[Any, ...],
            strict: bool) -> Any:
    try:
        with torch.no_grad():
            return torch.export.export(module, args, dynamic_shapes=shapes, strict=strict)
    except Exception as exc:  # torch's own errors: keep its text, add what to do
        text = str(exc)
        if "Constraints violated" in text or "Suggested fixes" in text:
            details = text + "\n\n" + traceback.format_exc()
            message, report = explain_violation(torch, text, module, args, shapes, strict)
            raise ExportFailed(message, details + (f"\n\ndraft_export found:\n{report}" if report
                                                   else "")) from None
        if isinstance(exc, torch.OutOfMemoryError):
            raise ExportFailed("out of memory while exporting (try the tiny preset or "
                               "export on cpu)", traceback.format_exc()) from None
        raise ExportFailed(f"torch.export failed: {type(exc).__name__}: {_first_line(text)}",
                           traceback.format_exc()) from None


def _decompose(torch: Any, name: str, ep: Any) -> Any:
    """run_decompositions() to core ATen, keeping scaled_dot_product_attention whole:
    torch 2.13's SDPA decomposition breaks GPT-2's `view` with a dynamic seq_len
    ("Cannot view a tensor with shape [s72, s58, 64]"), and keeping it keeps fused
    attention kernels on GPU."""
    table = torch.export.default_decompositions()
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    try:
        return ep.run_decompositions(table)
    except Exception as exc:
        raise ExportFailed(
            f"run_decompositions() failed on the {name} program: {type(exc).__name__}: "
            f"{_first_line(str(exc))} (export without --decompose)",
            traceback.format_exc(),
        ) from None


_SPECIALIZED = re.compile(r"You marked (\w+) as dynamic but your code specialized it to be a "
                         r"constant \((-?\d+)\)")
_NARROWED = re.compile(r"Not all values of (\w+) = .*? satisfy the generated guard (.*?)(?:\.|$)",
                       re.M)


def explain_violation(torch: Any, text: str, module: Any, args: tuple[Any, ...],
                      shapes: tuple[Any, ...], strict: bool) -> tuple[str, str]:
    """torch's "Constraints violated" text -> (our message, draft_export's findings).

    Two causes, two fixes:
    - an example size of 0 or 1 for a Dim: torch specializes such sizes before it
      traces a single line, and its suggested fix (`batch = 1`) makes the Dim static.
      The fix that keeps it dynamic is an example of 2 or more; the range may still
      start at 1 (measured, tests/jobs/test_export_explains.py: the program exported
      with batch 1:16 from an example of 2 runs batch 1 and seq_len 1, with the same
      logits as eager), because torch's run-time check enforces only minimums above 2.
    - the model's code pinned or narrowed the Dim: we run torch's draft_export to
      find the source line that added the guard, and keep torch's suggested fix."""
    examples = _example_sizes(args, shapes)
    m = _SPECIALIZED.search(text)
    if m and m.group(1) in examples and examples[m.group(1)] in (0, 1) \
            and int(m.group(2)) == examples[m.group(1)]:
        name, value = m.group(1), examples[m.group(1)]
        msg = (f"torch.export rejected the Dim ranges: Constraints violated ({name})! The example "
               f"{name} size is {value}, and torch makes a dim whose example size is 0 or 1 a "
               f"constant before tracing any code, so {name} cannot stay dynamic. The exported "
               f"program would still accept {name} {value} at run time when exported from a "
               f"larger example (torch checks only minimums above 2 when it is called); "
               f"Suggested fixes: an example {name} size of 2 or more, keeping the range "
               f"(torch's own suggestion, {name} = {value}, would make {name} static)")
        return msg, ""
    frames = _draft_export_frames(torch, module, args, shapes, strict)
    msg = _constraint_message(text)
    where = ""
    if frames:
        first = frames[0]
        where = f"{first['file']}:{first['line']}" + (f" ({first['code']})" if first["code"] else "")
        head, sep, fixes = msg.partition("; Suggested fixes:")
        what = "made it a constant" if m else "narrowed its range"
        msg = f"{head}; the code that {what}: {where}{sep}{fixes}"
    report = "\n".join(f"{f['expr']} at {f['file']}:{f['line']} in {f['function']}: {f['code']}"
                       for f in frames)
    return msg, report


def _example_sizes(args: tuple[Any, ...], shapes: tuple[Any, ...]) -> dict[str, int]:
    """Dim name -> the example size export traces it with."""
    out: dict[str, int] = {}
    for arg, spec in zip(args, shapes):
        if not isinstance(spec, dict) or not hasattr(arg, "shape"):
            continue
        for dim, d in spec.items():
            name = getattr(d, "__name__", None)
            if isinstance(name, str) and isinstance(dim, int) and dim < len(arg.shape):
                out.setdefault(name, int(arg.shape[dim]))
    return out


def _draft_export_frames(torch: Any, module: Any, args: tuple[Any, ...], shapes: tuple[Any, ...],
                         strict: bool) -> list[dict[str, Any]]:
    """The user source lines where torch added the guards that broke the ranges
    (draft_export traces again, collecting them instead of failing). Best effort:
    [] when draft_export itself fails or finds nothing."""
    try:
        from torch._logging.structured import INTERN_TABLE

        with torch.no_grad():
            ep = torch.export.draft_export(module, args, dynamic_shapes=shapes, strict=strict)
        names = {index: path for path, index in INTERN_TABLE.items()}
        found = []
        for failure in getattr(ep, "_report").failures:
            data = failure.data if isinstance(failure.data, dict) else {}
            stack = data.get("user_stack")
            if "expr" not in data or not isinstance(stack, list):
                continue
            user = [f for f in stack if isinstance(f, dict)
                    and not _is_torch_file(str(names.get(f.get("filename"), f.get("filename"))))]
            if not user:
                continue
            f = user[-1]  # the innermost user frame: the line that asked
            found.append({"expr": str(data["expr"]),
                          "file": str(names.get(f.get("filename"), f.get("filename"))),
                          "line": int(f.get("line", 0)), "function": str(f.get("name", "")),
                          "code": str(f.get("loc", "")).strip()})
        return found
    except Exception:  # noqa: BLE001 - only an extra explanation; the export already failed
        return []


def _is_torch_file(path: str) -> bool:
    p = path.replace("\\", "/")
    return bool(re.search(r"(^|/)torch/", p)) or p.startswith("<")


def _constraint_message(text: str) -> str:
    """"Constraints violated (batch)! ... Suggested fixes:\n  batch = 1" -> one message that
    keeps what torch suggests."""
    head = _first_line(text).split(" For more information")[0]
    fixes: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("Suggested fixes"):
            for nxt in lines[i + 1:]:
                if not nxt.strip():
                    break
                fixes.append(nxt.strip())
            break
    reasons = [ln.strip()[2:].split(". If you")[0] for ln in lines if ln.strip().startswith("- ")]
    msg = f"torch.export rejected the Dim ranges: {head}"
    if reasons:
        msg += f" ({reasons[0]})"
    if fixes:
        msg += f"; Suggested fixes: {'; '.join(dict.fromkeys(fixes))}"
    return msg


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:500]


def _write_atomically(torch: Any, out: Path, programs: dict[str, Any], extra: dict[str, str],
                      separate: bool, on_staging: Any = None) -> list[Path]:
    from torch.export.pt2_archive._package import package_pt2

    tmp = partial_dir(out, os.getpid())
    finals = separate_paths(out) if separate else {"": out}
    # torch writes only to a named path (its top folder is the file's stem), so an
    # unnamed O_TMPFILE cannot be used here: a SIGKILLed export leaves its partial
    # folder, which the parent removes, and failing that the next export to OUT.
    remove_stale_partials(out)
    try:
        tmp.mkdir()
        if on_staging:
            on_staging()
        staged: list[tuple[Path, Path]] = []
        for name, final in finals.items():
            # Staged under the final file name: the archive's top folder is named
            # after the file's stem, and we want it to match the file we rename to.
            staged_path = tmp / final.name
            if separate:  # the blog's files: torch.export.save's layout (program "model")
                torch.export.save(programs[name], staged_path, extra_files=extra)
            else:
                package_pt2(staged_path, exported_programs=programs, extra_files=extra)
            staged.append((staged_path, final))
        for staged_path, final in staged:
            os.replace(staged_path, final)
        return [final for _, final in staged]
    except OSError as exc:
        raise ExportSpecError(f"cannot write {str(out)!r} ({exc.strerror or exc})") from None
    except RuntimeError as exc:
        # torch's writer (inline_container.cc) reports a full disk or a failed write
        # as RuntimeError "[enforce fail at inline_container.cc:NNN] ..."
        if "inline_container" not in str(exc) and "PytorchStreamWriter" not in str(exc):
            raise
        raise ExportSpecError(f"cannot write {str(out)!r} ({_disk_reason(exc, out)})") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _disk_reason(exc: BaseException, out: Path) -> str:
    """torch's writer error in a few words. It rarely carries the errno ("file
    write failed"), so a nearly full disk is named from the free space left."""
    text = str(exc)
    for needle, reason in (("No space left", "no space left on the device"),
                           ("Disk quota", "disk quota exceeded"),
                           ("File too large", "file too large for this filesystem or limit"),
                           ("Permission denied", "permission denied")):
        if needle in text:
            return reason
    try:
        free = shutil.disk_usage(out.parent).free
    except OSError:
        free = None
    if free is not None and free < 64 << 20:
        return f"no space left on the device: {free / 1e6:.1f} MB free"
    try:
        import resource

        fsize = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if fsize != resource.RLIM_INFINITY:
            return f"the write failed: files are limited to {fsize:,} bytes here (ulimit -f)"
    except (ImportError, OSError, ValueError):
        pass
    first = (text.strip().splitlines() or [""])[0][:200] or type(exc).__name__
    return f"the write failed, the disk may be full; torch says: {first}"
