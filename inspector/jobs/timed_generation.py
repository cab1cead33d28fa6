"""The run job: time the toy generator from an archive on a chosen device.

`python -m inspector.jobs run FILE --device DEV [--mode export|eager] [--compile]
[--precision fp32|bf16] [--batch N] [--max-tokens N] [--warmup N] [--repeats N] [--trust]`

The seed's loop: the encoder once on a batch of random images (fixed seed), then the
decoder once per token on the whole growing sequence (no KV cache), greedy argmax,
until every sequence has emitted END (2) or after max tokens. Sequences that ended
get PAD (0) afterwards, as transformers' generate does.

Modes: `export` runs the archive's `encoder`/`decoder` programs (loaded by load.py);
`eager` rebuilds the toy model from the archive's extra/pt2_inspector.json and loads the
archive's weights into it. Either can be wrapped in torch.compile (warm-up runs absorb
compilation and are not timed). bf16 runs under autocast.

Timing: on CUDA each step is bracketed by CUDA events and read after the end event
completes, so a step's time includes its kernels; on other devices perf_counter after a
device synchronize. One `sample` event per token, then one `result`. In export mode the
first generation (the warm-up, or the first timed one with --warmup 0) goes through
torch's per-call input checks; the rest skip them (Generator.checked). Each figure comes
with its spread over the timed runs, and a warning when they disagree or the machine
was busy (core/timing_spread.py).
"""

from __future__ import annotations

import argparse
import contextlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inspector.core.errors import InspectorError
from inspector.core.timing_spread import (
    LoadWatch,
    cpu_count,
    percentile,
    spread,
    unsteady_warning,
)
from inspector.jobs.protocol import Emitter
from inspector.jobs.spec import RunSpec, add_run_arguments

START, END, PAD = 1, 2, 0
IMAGE_SHAPE = (3, 224, 224)


class RunError(InspectorError):
    def __init__(self, message: str, details: str = "", code: str = "failed") -> None:
        super().__init__(message)
        self.details = details
        self.code = code  # the error event's code (protocol.CODES): "oom", "device", ...


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(parser)


def main(args: argparse.Namespace, emit: Emitter) -> int:
    spec = RunSpec.from_args(args)
    emit.result(**run(spec, emit))
    return 0


# --- statistics (pure Python: also used by the benchmarks and tests) -----------

def summarize(per_token_ms: list[float], encoder_ms: list[float], total_ms: list[float],
              tokens: int, batch: int, repeat_p50_ms: list[float] | None = None
              ) -> dict[str, Any]:
    """The figures of a run and each one's spread: `spread` holds, per figure, its
    p50, quartiles, min and max over the runs (the per-token one over every token)."""
    mean_total = sum(total_ms) / len(total_ms)
    return {
        "spread": {"per_token_ms": spread(per_token_ms),
                   "run_p50_ms": spread(repeat_p50_ms or []),
                   "encoder_ms": spread(encoder_ms),
                   "total_ms": spread(total_ms)},
        "run_p50_ms": [round(x, 4) for x in repeat_p50_ms or []],
        "per_token_ms": [round(x, 4) for x in per_token_ms],
        "encoder_ms": round(sum(encoder_ms) / len(encoder_ms), 4),
        "total_ms": round(mean_total, 4),
        "p50_ms": round(percentile(per_token_ms, 50), 4),
        "p90_ms": round(percentile(per_token_ms, 90), 4),
        "p99_ms": round(percentile(per_token_ms, 99), 4),
        # generated tokens (all sequences of the batch) per second of a whole generation
        "tokens_per_s": round(tokens * batch / (mean_total / 1000.0), 3) if mean_total else 0.0,
    }


# --- timing --------------------------------------------------------------------

class Timer:
    """start()/stop() around a step; stop() returns milliseconds including the
    device's queued work."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.sync: Callable[[], None] = lambda: None
        if device.type == "mps":
            self.sync = torch.mps.synchronize

    def start(self) -> Any:
        if self.cuda:
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        self.sync()
        return time.perf_counter()

    def stop(self, started: Any) -> float:
        if self.cuda:
            end = self.torch.cuda.Event(enable_timing=True)
            end.record()
            end.synchronize()
            return float(started.elapsed_time(end))
        self.sync()
        return (time.perf_counter() - started) * 1000.0


# --- the model callables ---------------------------------------------------------

@dataclass
class Generator:
    encode: Callable[[Any], Any]
    decode: Callable[..., Any]
    positions: bool  # the decoder takes cache_position as a third input
    seq_max: int | None
    batch_range: tuple[int, int] | None
    # Called once a whole generation went through the inputs' checks (export mode):
    # later generations feed the same shapes (see build), so they skip them.
    checked: Callable[[], None] = lambda: None


def _hidden(out: Any) -> Any:
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    if isinstance(out, (tuple, list)):
        return out[0]
    return out


def vet_archive(spec: RunSpec, emit: Emitter) -> Any:
    """The vetting of core/vetting.py, before torch is imported."""
    from inspector.core.vetting import vet

    emit.progress("vet archive", 0.0)
    vetted = vet(spec.file, trust=spec.trust, programs=["encoder", "decoder"])
    if vetted.trusted:
        emit.log(f"loading {len(vetted.trusted)} record(s) that run code, as trusted: "
                 + ", ".join(vetted.trusted[:5]), "warning")
    return vetted


def build(spec: RunSpec, torch: Any, device: Any, emit: Emitter, vetted: Any = None) -> Generator:
    from inspector.jobs import load

    if vetted is None:
        vetted = vet_archive(spec, emit)
    info = vetted.info or {}
    xspec = info.get("spec") if isinstance(info.get("spec"), dict) else {}
    positions = bool(xspec.get("cache_position", False))
    seq_max = _int_or_none(xspec.get("seq_max"))
    batch_range = None
    if _int_or_none(xspec.get("batch_min")) is not None and _int_or_none(xspec.get("batch_max")):
        batch_range = (int(xspec["batch_min"]), int(xspec["batch_max"]))
    _check_memory(spec, torch, device, info, seq_max)

    if spec.mode == "export":
        emit.progress("load programs", 0.1)
        programs = load.load_programs(vetted)
        emit.progress("move to device", 0.4)
        enc_mod = programs["encoder"].module().to(device)
        dec_mod = programs["decoder"].module().to(device)
        positions = positions or _input_count(programs["decoder"]) == 3

        def encode(px: Any) -> Any:
            return _hidden(enc_mod(px))

        decode: Callable[..., Any] = dec_mod

        def checked() -> None:
            # torch's module() checks each call's inputs against the program's ranges
            # in Python (~0.7 ms of a ~1 ms tiny decoder call, bench_run.py --calls).
            # After one checked generation the timed ones feed the same shapes: the
            # same batch, sequence lengths 1..max tokens, and max tokens is capped at
            # the archive's seq_len range before the run (RunSpec.fit_archive).
            enc_mod.validate_inputs = False
            dec_mod.validate_inputs = False
    else:
        if "toy_config" not in info:
            raise RunError(
                "eager mode rebuilds the toy model from the archive's extra/pt2_inspector.json, "
                "and this archive has none (export it with `pt2-inspector export`, or use "
                "--mode export)"
            )
        from inspector.jobs import toy

        emit.progress("build eager model", 0.1)
        try:
            config = toy.config_from_json(info["toy_config"])
        except (ValueError, TypeError, KeyError) as exc:
            raise RunError(f"the archive's toy config cannot be used ({exc})") from None
        model = toy.model_from_config(config, seed=None)
        wrapper = toy.DecoderWrapper(model, cache_position=positions)
        emit.progress("load weights", 0.3)
        weights = load.load_state_dicts(vetted)
        _load_into(model.encoder, weights["encoder"], "encoder")
        _load_into(wrapper, weights["decoder"], "decoder")
        del weights
        model.to(device)

        def encode(px: Any) -> Any:
            return model.encoder(pixel_values=px).last_hidden_state

        decode = wrapper

    if spec.compile:
        emit.progress("torch.compile", 0.45)
        encode = torch.compile(encode)
        decode = torch.compile(decode)
    return Generator(encode, decode, positions, seq_max, batch_range,
                     checked if spec.mode == "export" else (lambda: None))


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _input_count(ep: Any) -> int:
    return sum(1 for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT")


def _load_into(module: Any, state: dict[str, Any], name: str) -> None:
    result = module.load_state_dict(state, strict=False)
    own = set(module.state_dict())
    missing = [k for k in result.missing_keys if k in own]
    if missing:
        raise RunError(f"the archive's {name} weights do not fit the toy model rebuilt from its "
                       f"config (missing {', '.join(missing[:5])})")
    if result.unexpected_keys:
        raise RunError(f"the archive's {name} weights do not fit the toy model rebuilt from its "
                       f"config (unexpected {', '.join(result.unexpected_keys[:5])})")


# --- the loop ---------------------------------------------------------------------

def greedy(gen: Generator, torch: Any, pixels: Any, max_tokens: int, timer: Timer | None = None,
           on_token: Callable[[int, float], None] | None = None
           ) -> tuple[Any, float, list[float], float]:
    """One generation: (token ids [B, n], encoder ms, per-token ms, total ms)."""
    device = pixels.device
    batch = pixels.shape[0]
    t_total = time.perf_counter()
    t0 = timer.start() if timer else None
    hidden = gen.encode(pixels)
    enc_ms = timer.stop(t0) if timer else 0.0
    ids = torch.full((batch, 1), START, dtype=torch.long, device=device)
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    steps: list[float] = []
    for step in range(max_tokens):
        t = timer.start() if timer else None
        if gen.positions:
            logits = gen.decode(ids, hidden, torch.arange(ids.shape[1], device=device))
        else:
            logits = gen.decode(ids, hidden)
        nxt = logits[:, -1, :].argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
        ids = torch.cat([ids, nxt[:, None]], dim=1)
        done = done | (nxt == END)
        finished = bool(done.all())  # the host needs this anyway: it syncs
        ms = timer.stop(t) if timer else 0.0
        steps.append(ms)
        if on_token:
            on_token(step, ms)
        if finished:
            break
    if timer:
        timer.sync()
    total_ms = (time.perf_counter() - t_total) * 1000.0
    if timer and timer.cuda:
        total_ms = enc_ms + sum(steps)
    return ids[:, 1:], enc_ms, steps, total_ms


def _check_memory(spec: RunSpec, torch: Any, device: Any, info: dict[str, Any],
                  seq_max: int | None) -> None:
    """Refuse, before loading anything, a run whose estimated peak exceeds what the
    device has (jobs/memory.py): it would grow for minutes and then fail."""
    from pathlib import Path

    from inspector.jobs import memory

    tokens = min(spec.max_tokens, seq_max) if seq_max else spec.max_tokens
    have, what = memory.available_bytes(torch, device)
    memory.check_run_memory(memory.Dims.from_toy_config(info.get("toy_config")), spec.batch,
                            tokens, Path(spec.file).stat().st_size, spec.precision == "bf16",
                            have, what, str(device))


def run(spec: RunSpec, emit: Emitter) -> dict[str, Any]:
    # The archive's ranges first, from its JSON: a batch or a sequence length its
    # programs refuse is reported before torch is even imported (core/run_ranges.py).
    spec, notes = spec.fit_archive()
    for note in notes:
        emit.log(note, "warning")
    assert spec.batch is not None and spec.max_tokens is not None
    vetted = vet_archive(spec, emit)  # before torch: a refusal costs no import
    emit.progress("import torch", 0.02)
    import torch

    device = check_device(torch, spec.device)
    if spec.threads:  # 0: torch's own choice (one per core: spins on a busy machine)
        torch.set_num_threads(spec.threads)
    try:
        gen = build(spec, torch, device, emit, vetted)
    except torch.OutOfMemoryError:
        raise RunError(f"out of memory on {device} while loading the model "
                       "(free the device or use a smaller preset)", traceback.format_exc(),
                       "oom") from None
    max_tokens = spec.max_tokens  # already capped at the archive's seq_len max

    g = torch.Generator().manual_seed(spec.seed)
    pixels = torch.randn((spec.batch, *IMAGE_SHAPE), generator=g).to(device)
    autocast = (torch.autocast(device_type=device.type, dtype=torch.bfloat16)
                if spec.precision == "bf16" else contextlib.nullcontext())
    timer = Timer(torch, device)
    per_token: list[float] = []
    enc_all: list[float] = []
    totals: list[float] = []
    run_p50: list[float] = []  # each timed run's own per-token p50: the runs' spread
    load = LoadWatch()
    ids = None
    try:
        with torch.no_grad(), autocast:
            if spec.compile:  # compilation happens inside the first call, for seconds
                emit.log("compiling (first call)…", "note")
            for i in range(spec.warmup):
                emit.progress(f"warm-up {i + 1}/{spec.warmup}", 0.5 + 0.2 * i / max(spec.warmup, 1))
                greedy(gen, torch, pixels, max_tokens, timer)
                gen.checked()
            for r in range(spec.repeats):
                emit.progress(f"run {r + 1}/{spec.repeats}", 0.7 + 0.3 * r / spec.repeats)

                def on_token(step: int, ms: float, r: int = r) -> None:
                    emit.sample(repeat=r, step=step, ms=round(ms, 4))

                load.sample()
                ids, enc_ms, steps, total = greedy(gen, torch, pixels, max_tokens, timer, on_token)
                gen.checked()  # with --warmup 0 the first timed run is the checked one
                load.sample()
                per_token += steps
                run_p50.append(percentile(steps, 50))
                enc_all.append(enc_ms)
                totals.append(total)
    except torch.OutOfMemoryError:
        raise RunError(f"out of memory on {device} (batch {spec.batch}, {max_tokens} tokens; "
                       "try a smaller batch or bf16 precision)", traceback.format_exc(),
                       "oom") from None
    except RuntimeError as exc:
        raise _explain(exc, spec, device) from None
    emit.progress("done", 1.0)
    assert ids is not None
    tokens = int(ids.shape[1])
    threads = torch.get_num_threads()
    cpus = cpu_count()
    warning = unsteady_warning(what="per-token times", runs=run_p50, load=load.peak, cpus=cpus,
                               threads=threads if device.type == "cpu" else 1)
    if warning:
        emit.log(warning, "warning")
    return {
        "device": str(device),
        "device_name": device_name(torch, device),
        "mode": spec.mode,
        "compile": spec.compile,
        "precision": spec.precision,
        "batch": spec.batch,
        "tokens": tokens,
        "max_tokens": max_tokens,
        "warmup": spec.warmup,
        "repeats": spec.repeats,
        **summarize(per_token, enc_all, totals, tokens, spec.batch, run_p50),
        "threads": threads,
        "cpus": cpus,
        "load_average": load.peak,
        "warnings": [warning] if warning else [],
        "runs_total_ms": [round(t, 4) for t in totals],
        "token_ids": ids.cpu().tolist(),
        "torch": torch.__version__,
        "timer": "cuda events" if timer.cuda else "perf_counter",
    }


def _explain(exc: RuntimeError, spec: RunSpec, device: Any) -> RunError:
    text = str(exc)
    details = traceback.format_exc()
    low = text.lower()
    if ("same device" in low or "expected all tensors" in low
            or ("device" in low and "cpu" in low and device.type != "cpu")):
        return RunError(
            f"baked cpu device: the program creates tensors on cpu while its inputs are on "
            f"{device} (run `pt2-inspector audit {spec.file}`, then `pt2-inspector retarget "
            f"{spec.file} --device {device.type} -o OUT.pt2`, or export on {device.type})",
            details, "device",
        )
    if "out of memory" in low:
        return RunError(f"out of memory on {device} (try a smaller batch)", details, "oom")
    first = (text.strip().splitlines() or [""])[0][:300]
    return RunError(f"the {spec.mode} model failed on {device}: {first}", details)


def check_device(torch: Any, name: str) -> Any:
    from inspector.jobs.devices import available

    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise RunError(f"bad device {name!r} ({exc})", code="spec") from None
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", 0)
    ids = [d["id"] for d in available(torch)]
    if str(device) not in ids:
        raise RunError(f"device {name} is not available here (torch sees: {', '.join(ids)}; "
                       "see `pt2-inspector devices`)", code="device")
    return device


def device_name(torch: Any, device: Any) -> str:
    from inspector.jobs.devices import available

    for d in available(torch):
        if d["id"] == str(device):
            return str(d.get("name", ""))
    return ""
