"""What the toy generator can run on an archive: the sizes its programs accept,
run defaults that fit them, and refusals before any work.

Read from the archive's own `range_constraints` and input shapes (not from our
export record, so archives exported by other tools are covered too). Pure
Python, no torch: the CLI checks a run before it starts the child, the run job
checks again (the window starts the child directly), and the window can use
`run_defaults` / `run_problems` for its controls and `export_run_problems` to
warn in the Export panel before writing ranges the generator cannot run.

The generator (jobs/timed_generation.py) starts from one START token and feeds the
decoder the whole sequence each step: 1, 2, ... max_tokens tokens. torch's
run-time input check lets sizes 0 and 1 through for a range that starts at 2 or
lower (the 0/1 convention: torch/_export/utils.py `if min_val > 2`), so a seq_len
range 2:N runs; 3:N and above cannot. Padding the prompt up to the minimum would
make such archives run, but the decoder has no attention mask, so every token
(and the timing) would be of another computation than the one asked for: we
refuse, and say which export works.

Messages name the quantity ("batch", "max tokens"), never a CLI flag or a widget,
so the CLI and the window can show them as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inspector.core.program import Program

# One set of defaults for the CLI and the window.
DEFAULT_BATCH = 1  # moved into the archive's batch range when 1 is outside it
DEFAULT_MAX_TOKENS = 64  # a chart in seconds; capped at the archive's seq_len max
TORCH_RUNTIME_FREE_MIN = 2  # ranges starting at or below this accept 0 and 1 at run time


@dataclass(frozen=True, slots=True)
class SizeRange:
    min: int
    max: int | None  # None: unbounded
    symbol: str | None  # None: a static size (min == max)

    @property
    def static(self) -> bool:
        return self.symbol is None

    @property
    def runtime_min(self) -> int:
        """The smallest size the exported program accepts when called."""
        if self.static:
            return self.min
        return 0 if self.min <= TORCH_RUNTIME_FREE_MIN else self.min

    def contains(self, n: int) -> bool:
        return self.min <= n and (self.max is None or n <= self.max)

    def text(self) -> str:
        if self.static:
            return f"{self.min} (static)"
        return f"{self.min}:{'inf' if self.max is None else self.max}"


@dataclass(frozen=True, slots=True)
class GeneratorRanges:
    batch: SizeRange | None  # None: not known (no decoder/encoder program)
    seq: SizeRange | None


@dataclass(frozen=True, slots=True)
class RunDefaults:
    batch: int
    max_tokens: int


def _dim_range(program: Program, dim: int) -> SizeRange | None:
    """The range of the first user input's dimension `dim`."""
    specs = program.user_inputs()
    if not specs:
        return None
    meta = program.graph.tensor_values.get(specs[0].name)
    if meta is None or dim >= len(meta.sizes):
        return None
    size = meta.sizes[dim]
    if isinstance(size, int):
        return SizeRange(size, size, None)
    rng = program.range_constraints.get(size)
    if rng is None:  # an expression: no simple range to honour
        return None
    return SizeRange(rng.min if rng.min is not None else 0, rng.max, size)


def _intersect(a: SizeRange | None, b: SizeRange | None) -> SizeRange | None:
    if a is None or b is None:
        return a or b
    hi = a.max if b.max is None else b.max if a.max is None else min(a.max, b.max)
    if a.static or b.static:
        s = a if a.static else b
        return SizeRange(s.min, s.min, None)
    return SizeRange(max(a.min, b.min), hi, a.symbol)


def program_ranges(decoder: Program | None, encoder: Program | None) -> GeneratorRanges:
    batch = _intersect(_dim_range(decoder, 0) if decoder else None,
                       _dim_range(encoder, 0) if encoder else None)
    return GeneratorRanges(batch, _dim_range(decoder, 1) if decoder else None)


def generator_ranges(archive: Any) -> GeneratorRanges:
    """The sizes an archive's `decoder` (and `encoder`) programs accept."""
    names = set(archive.program_names)
    dec = archive.program("decoder") if "decoder" in names else None
    enc = archive.program("encoder") if "encoder" in names else None
    return program_ranges(dec, enc)


def run_defaults(ranges: GeneratorRanges) -> RunDefaults:
    batch = DEFAULT_BATCH
    b = ranges.batch
    if b is not None and not b.contains(batch):
        batch = b.min if batch < b.min else (b.max or b.min)
    tokens = DEFAULT_MAX_TOKENS
    if ranges.seq is not None and ranges.seq.max is not None:
        tokens = max(1, min(tokens, ranges.seq.max))
    return RunDefaults(batch, tokens)


def fit_max_tokens(ranges: GeneratorRanges, max_tokens: int) -> tuple[int, str | None]:
    """Max tokens capped at the decoder's longest sequence (made to work: the
    generation stops early, every token it does make is the real one)."""
    seq = ranges.seq
    if seq is not None and seq.max is not None and max_tokens > seq.max:
        return seq.max, (f"max tokens {max_tokens} capped at {seq.max}: the archive's seq_len "
                         f"range ends there")
    return max_tokens, None


def run_problems(ranges: GeneratorRanges, batch: int | None) -> list[str]:
    """Why a generation cannot run on this archive (empty: it can)."""
    out: list[str] = []
    b = ranges.batch
    if batch is not None and b is not None and not b.contains(batch):
        if b.static:
            out.append(f"batch {batch} does not fit the archive: its batch size is fixed at "
                       f"{b.min} (use batch {b.min}, or export again with a batch range)")
        else:
            hi = "any size" if b.max is None else str(b.max)
            out.append(f"batch {batch} is outside the archive's batch range {b.text()} "
                       f"(choose a batch from {b.min} to {hi}, or export again with a wider "
                       "batch range)")
    s = ranges.seq
    if s is not None and s.static:
        out.append(f"the decoder's sequence length is fixed at {s.min}, but generation feeds it "
                   f"1, 2, 3, ... tokens (export again with a seq_len range such as 1:256)")
    elif s is not None and s.runtime_min > 1:
        out.append(f"the decoder accepts {s.min} to {'any' if s.max is None else s.max} tokens "
                   f"(seq_len range {s.text()}), but generation starts from one token (export "
                   f"again with a seq_len range starting at 1 or 2, for example 1:{s.max or 256}; "
                   "keep the example length at 2 or more)")
    return out


def export_run_problems(batch_min: int, batch_max: int, seq_min: int, seq_max: int) -> list[str]:
    """For the Export panel: what the generator will refuse (or cap) on an archive
    exported with these ranges. The export records a range as given (a min of 1
    stays 1 with an example of 2 or more); a one-size range is static."""
    def rng(lo: int, hi: int, name: str) -> SizeRange:
        return SizeRange(lo, lo, None) if lo == hi else SizeRange(lo, hi, name)

    ranges = GeneratorRanges(rng(batch_min, batch_max, "batch"), rng(seq_min, seq_max, "seq_len"))
    out = run_problems(ranges, None)
    if not out and seq_max < DEFAULT_MAX_TOKENS:
        out.append(f"generation will stop after {seq_max} tokens (the seq_len range ends there)")
    return out


@dataclass(frozen=True, slots=True)
class RunBox:
    """One number box of a run's options: its range, the value to show there, the
    tip that says where the range comes from."""

    low: int
    high: int
    default: int
    tip: str

    def clamp(self, value: int | None) -> int:
        """`value` (the user's choice; None: none) moved into the range."""
        return min(max(self.default if value is None else value, self.low), self.high)


def run_boxes(ranges: GeneratorRanges | None, batch_limit: int,
              tokens_limit: int) -> tuple[RunBox, RunBox]:
    """The Batch and Max tokens boxes for an archive's ranges (None: not read yet):
    the archive's range within the job's limits, its defaults (run_defaults)."""
    defaults = run_defaults(ranges) if ranges is not None else None
    b = ranges.batch if ranges is not None else None
    lo, hi = 1, batch_limit
    if b is not None:
        lo = max(1, b.min)
        hi = max(lo, min(batch_limit, b.max if b.max is not None else batch_limit))
    batch_tip = "images per generation"
    if b is not None:
        batch_tip += (f" (the archive's batch size is fixed at {b.min})" if b.static else
                      f" (the archive accepts {lo} to {hi})")
    tokens_hi = tokens_limit
    seq = ranges.seq if ranges is not None else None
    if seq is not None and seq.max is not None:
        tokens_hi = max(1, min(tokens_limit, seq.max))
    tokens_tip = "stop after this many tokens"
    if tokens_hi < tokens_limit:
        tokens_tip += f" (at most {tokens_hi}: the archive's seq_len range ends there)"
    return (RunBox(lo, hi, defaults.batch if defaults else DEFAULT_BATCH, batch_tip),
            RunBox(1, tokens_hi, defaults.max_tokens if defaults else DEFAULT_MAX_TOKENS,
                   tokens_tip))
