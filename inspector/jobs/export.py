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
import shutil
import time
import traceback
from pathlib import Path
from typing import Any

from inspector.core.atomic import remove_stale_partials
from inspector.core.errors import InspectorError
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


def check_output(output: str | os.PathLike[str]) -> Path:
    out = Path(output)
    if out.suffix != ".pt2":
        raise ExportSpecError(f"output {str(out)!r} must end in .pt2")
    if out.is_dir():
        raise ExportSpecError(f"output {str(out)!r} is a folder")
    if not out.parent.is_dir():
        raise ExportSpecError(f"cannot write {str(out)!r} (folder {str(out.parent)!r} does not exist)")
    if not os.access(out.parent, os.W_OK):
        raise ExportSpecError(f"cannot write {str(out)!r} (folder is not writable)")
    return out


def export_archive(
    spec: ExportSpec, output: str | os.PathLike[str], *, separate: bool = False,
    emit: Emitter | None = None,
) -> dict[str, Any]:
    """Export per `spec` and write atomically; returns the result event's fields."""
    spec.validate()
    out = check_output(output)
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
            raise ExportFailed(_constraint_message(text), text + "\n\n" + traceback.format_exc()) from None
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
