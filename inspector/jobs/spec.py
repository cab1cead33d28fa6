"""What to export: `ExportSpec`, checked before any torch work starts.

Pure Python (no torch import) so the window's Dim editor and the CLI can validate a
spec instantly and build the child's argument list from it. The export child
(`inspector/jobs/export.py`) parses the same arguments back with `ExportSpec.from_argv`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspector.core.errors import InspectorError

PRESETS = ("tiny", "seed")  # keep in step with toy.PRESETS (toy imports torch)
SEQ_LEN_LIMIT = 256  # the toy decoder's max_length / position embeddings
BATCH_LIMIT = 1 << 20  # only to refuse nonsense early
_DEVICE_RE = re.compile(r"cpu|mps|cuda(:[0-9]{1,2})?")  # fullmatch: "$" accepts "cpu\n"


class ExportSpecError(InspectorError):
    """An export spec that cannot work (bad range, bad size, bad device name).

    `field` names what is wrong, so a form can mark its widget without reading
    the message: "batch.min", "batch.max", "batch.example" (likewise "seq_len.*"),
    "batch" / "seq_len" for a whole range, "preset", "seed", "device"; None when
    the error is about no one field (an output path, a device not present)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class RunSpecError(InspectorError):
    """Run options that cannot work (bad device name, batch, token count)."""


@dataclass(frozen=True)
class ExportSpec:
    preset: str = "tiny"
    seed: int = 0
    batch_min: int = 1
    batch_max: int = 64
    seq_min: int = 2  # the seed blog: Dim("seq_len", min=2, max=256)
    seq_max: int = SEQ_LEN_LIMIT
    example_batch: int = 2  # torch.export specializes example sizes 0 and 1
    example_seq: int = 8
    device: str = "cpu"
    cache_position: bool = False
    strict: bool = False
    decompose: bool = False

    def validate(self) -> ExportSpec:
        """Raise ExportSpecError naming the first problem; return self when fine."""
        if self.preset not in PRESETS:
            raise ExportSpecError(
                f"unknown preset {self.preset!r} (choose from {', '.join(PRESETS)})",
                field="preset",
            )
        if not 0 <= self.seed < 2**63:
            raise ExportSpecError(f"seed {self.seed} out of range (0 .. 2**63-1)", field="seed")
        _check_range("batch", self.batch_min, self.batch_max, self.example_batch, BATCH_LIMIT)
        _check_range("seq_len", self.seq_min, self.seq_max, self.example_seq, SEQ_LEN_LIMIT)
        if not _DEVICE_RE.fullmatch(self.device):
            raise ExportSpecError(
                f"bad export device {self.device!r} (use cpu, cuda, cuda:N or mps)",
                field="device",
            )
        return self

    def warnings(self) -> list[str]:
        """What will go wrong later although the spec is valid (for the Export panel to
        show before exporting): an example size torch specializes, and ranges the
        generator cannot run (core/run_ranges.export_run_problems)."""
        from inspector.core.run_ranges import export_run_problems

        out = []
        for name, lo, hi, example in (("batch", self.batch_min, self.batch_max, self.example_batch),
                                      ("seq_len", self.seq_min, self.seq_max, self.example_seq)):
            if lo != hi and example in (0, 1):
                out.append(f"example {name} size {example}: torch makes a dim traced at 0 or 1 "
                           f"a constant and refuses the range {lo}:{hi}; use an example of 2 or "
                           f"more (the range may still start at {lo})")
        return out + export_run_problems(self.batch_min, self.batch_max, self.seq_min, self.seq_max)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExportSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_argv(self) -> list[str]:
        """Arguments for `python -m inspector.jobs export` (and `pt2-inspector export`)."""
        argv = [
            "--preset", self.preset,
            "--seed", str(self.seed),
            "--batch", f"{self.batch_min}:{self.batch_max}",
            "--seq-len", f"{self.seq_min}:{self.seq_max}",
            "--example-batch", str(self.example_batch),
            "--example-seq-len", str(self.example_seq),
            "--device", self.device,
        ]
        for flag, on in (("--cache-position", self.cache_position),
                         ("--strict", self.strict), ("--decompose", self.decompose)):
            if on:
                argv.append(flag)
        return argv

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ExportSpec:
        batch_min, batch_max = parse_range("--batch", args.batch)
        seq_min, seq_max = parse_range("--seq-len", args.seq_len)
        return cls(
            preset=args.preset,
            seed=args.seed,
            batch_min=batch_min,
            batch_max=batch_max,
            seq_min=seq_min,
            seq_max=seq_max,
            example_batch=args.example_batch,
            example_seq=args.example_seq_len,
            device=args.device,
            cache_position=args.cache_position,
            strict=args.strict,
            decompose=args.decompose,
        ).validate()


def _check_range(name: str, lo: int, hi: int, example: int, limit: int) -> None:
    if lo < 0:
        raise ExportSpecError(f"{name} min is {lo} (a size cannot be negative: use 0 or more)",
                             field=f"{name}.min")
    if lo > hi:
        raise ExportSpecError(f"{name} range {lo}:{hi} is empty (min must be <= max)",
                             field=name)
    if hi > limit:
        why = ("the toy decoder has 256 positions (max_length)" if name == "seq_len"
               else "far beyond any real batch")
        raise ExportSpecError(f"{name} max is {hi}, over {limit} ({why})", field=f"{name}.max")
    if not lo <= example <= hi:
        raise ExportSpecError(
            f"example {name} size {example} is outside the range {lo}:{hi} "
            "(export traces with the example, so it must fit the range)",
            field=f"{name}.example",
        )


def parse_range(flag: str, text: str) -> tuple[int, int]:
    """'MIN:MAX' -> (min, max); 'N' -> (N, N)."""
    m = re.fullmatch(r"\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?", text or "")
    if not m:
        raise ExportSpecError(f"{flag} {text!r} is not MIN:MAX (for example 1:64)")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) is not None else lo
    return lo, hi


def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    """The spec's options, shared by the child and `pt2-inspector export`."""
    d = ExportSpec()
    parser.add_argument("--preset", choices=PRESETS, default=d.preset,
                        help="model size: tiny (exports in seconds) or seed (full size: ViT-base "
                             "encoder + 12-layer GPT-2 decoder, about 201M parameters)")
    parser.add_argument("--seed", type=int, default=d.seed, help="random-weight seed")
    parser.add_argument("--batch", default=f"{d.batch_min}:{d.batch_max}", metavar="MIN:MAX",
                        help="batch Dim range (default %(default)s)")
    parser.add_argument("--seq-len", default=f"{d.seq_min}:{d.seq_max}", metavar="MIN:MAX",
                        help="decoder sequence-length Dim range, max <= 256 (default %(default)s)")
    parser.add_argument("--example-batch", type=int, default=d.example_batch, metavar="N",
                        help="batch size of the example inputs export traces with")
    parser.add_argument("--example-seq-len", type=int, default=d.example_seq, metavar="N",
                        help="sequence length of the decoder's example input")
    parser.add_argument("--device", default=d.device,
                        help="export device: cpu or a visible GPU (cuda:0); exporting on the "
                             "target device avoids baked-in cpu devices")
    parser.add_argument("--cache-position", action="store_true",
                        help="give the decoder its token positions as a third input, instead "
                             "of an arange inside the graph with the export device baked in "
                             "(removes one device literal)")
    parser.add_argument("--strict", action="store_true", help="strict (dynamo) export")
    parser.add_argument("--decompose", action="store_true",
                        help="run_decompositions() on both programs (core ATen)")


def partial_dir(target: str | os.PathLike[str], pid: int) -> Path:
    """Where the export child with `pid` writes before renaming onto `target`.

    Beside the target (same filesystem, so the final rename is atomic) and named by
    the child's pid, so a parent that had to SIGKILL the child can remove it."""
    target = Path(target)
    return target.parent / f".{target.name}.{pid}.partial"


def separate_paths(target: str | os.PathLike[str]) -> dict[str, Path]:
    """The blog's two files for `--separate`: OUT-encoder.pt2 and OUT-decoder.pt2."""
    target = Path(target)
    stem = target.name[:-4] if target.name.endswith(".pt2") else target.name
    return {p: target.with_name(f"{stem}-{p}.pt2") for p in ("encoder", "decoder")}


# --- the run job --------------------------------------------------------------

MODES = ("export", "eager")
DEFAULT_THREADS = 1  # run and profile: measured the steadiest (bench_threads.py)
PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class RunSpec:
    """What to time: `python -m inspector.jobs run FILE ...` / `pt2-inspector run`."""

    file: str
    device: str = "cpu"
    mode: str = "export"
    compile: bool = False
    precision: str = "fp32"
    batch: int | None = None  # None: from the archive (core/run_ranges.run_defaults)
    max_tokens: int | None = None  # None: likewise
    warmup: int = 1
    repeats: int = 3  # three runs at least, so each figure has a spread
    seed: int = 0
    trust: bool = False
    # CPU threads for torch; 0: torch's own choice (one per core). One is the steadiest
    # (tests/benchmarks/bench_threads.py): more spin against any other load.
    threads: int = DEFAULT_THREADS

    def validate(self) -> RunSpec:
        if not _DEVICE_RE.fullmatch(self.device):
            raise RunSpecError(f"bad device {self.device!r} (use cpu, cuda, cuda:N or mps)")
        if self.mode not in MODES:
            raise RunSpecError(f"bad mode {self.mode!r} (choose from {', '.join(MODES)})")
        if self.precision not in PRECISIONS:
            raise RunSpecError(f"bad precision {self.precision!r} (fp32 or bf16)")
        for name, value, lo, hi in (("batch", self.batch, 1, 4096),
                                    ("max tokens", self.max_tokens, 1, SEQ_LEN_LIMIT),
                                    ("warm-up runs", self.warmup, 0, 100),
                                    ("repeats", self.repeats, 1, 1000),
                                    ("threads", self.threads, 0, 4096)):
            if value is not None and not lo <= value <= hi:
                raise RunSpecError(f"{name} {value} is out of range ({lo} .. {hi})")
        return self

    def fit_archive(self) -> tuple[RunSpec, list[str]]:
        """This spec with batch / max tokens taken from the archive's ranges where
        unset, and max tokens capped at its seq_len max; raises RunSpecError
        (before any torch work) when the generator cannot run on the archive.
        Returns the notes to show (a cap). Reads the archive's JSON only."""
        from inspector.core.archive import open_archive
        from inspector.core.run_ranges import (
            fit_max_tokens,
            generator_ranges,
            run_defaults,
            run_problems,
        )

        with open_archive(self.file) as archive:
            ranges = generator_ranges(archive)
        defaults = run_defaults(ranges)
        batch = defaults.batch if self.batch is None else self.batch
        problems = run_problems(ranges, batch)
        if problems:
            raise RunSpecError(problems[0])
        tokens, note = fit_max_tokens(
            ranges, defaults.max_tokens if self.max_tokens is None else self.max_tokens)
        return dataclasses.replace(self, batch=batch, max_tokens=tokens), [note] if note else []

    def to_argv(self) -> list[str]:
        argv = [self.file, "--device", self.device, "--mode", self.mode,
                "--precision", self.precision]
        if self.batch is not None:
            argv += ["--batch", str(self.batch)]
        if self.max_tokens is not None:
            argv += ["--max-tokens", str(self.max_tokens)]
        argv += ["--warmup", str(self.warmup), "--repeats", str(self.repeats),
                 "--seed", str(self.seed), "--threads", str(self.threads)]
        if self.compile:
            argv.append("--compile")
        if self.trust:
            argv.append("--trust")
        return argv

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunSpec:
        return cls(file=args.file, device=args.device, mode=args.mode, compile=args.compile,
                   precision=args.precision, batch=args.batch, max_tokens=args.max_tokens,
                   warmup=args.warmup, repeats=args.repeats, seed=args.seed,
                   trust=args.trust, threads=args.threads).validate()


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    from inspector.core.run_ranges import DEFAULT_BATCH, DEFAULT_MAX_TOKENS

    d = RunSpec(file="")
    parser.add_argument("file", metavar="FILE", help="a .pt2 written by `pt2-inspector export`")
    parser.add_argument("--device", default=d.device,
                        help="cpu, cuda:N or mps (see `devices`; default: %(default)s)")
    parser.add_argument("--mode", choices=MODES, default=d.mode,
                        help="export: the archive's programs; eager: the toy model rebuilt "
                             "from the archive's config with its weights (default: %(default)s)")
    parser.add_argument("--compile", action="store_true", help="wrap in torch.compile")
    parser.add_argument("--precision", choices=PRECISIONS, default=d.precision,
                        help="fp32, or bf16 autocast (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=d.batch, metavar="N",
                        help=f"images per generation (default: {DEFAULT_BATCH}, or the "
                             "smallest batch of the archive's batch range when "
                             f"{DEFAULT_BATCH} is outside it)")
    parser.add_argument("--max-tokens", type=int, default=d.max_tokens, metavar="N",
                        help="stop after N tokens, or when every sequence emitted END "
                             f"(default: {DEFAULT_MAX_TOKENS}, capped at the archive's "
                             "seq_len max)")
    parser.add_argument("--warmup", type=int, default=d.warmup, metavar="N",
                        help="untimed generations first (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=d.repeats, metavar="N",
                        help="timed generations (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=d.seed,
                        help="seed of the random images (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=d.threads, metavar="N",
                        help="CPU threads torch may use; 0: torch's own choice, one per "
                             "core (default: %(default)s, the steadiest: more threads spin "
                             "against any other load)")
    parser.add_argument("--trust", action="store_true",
                        help="allow pickled weights/constants, TorchBind objects, libraries")
