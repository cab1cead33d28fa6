"""Will a run fit? An estimate of the generator's peak memory, checked before it starts.

`run --batch 4096 --max-tokens 256` on CPU was accepted and grew past 6 GB in ten
minutes before anything said no. The generator's loop (jobs/timed_generation.py) re-runs the
decoder on the whole growing sequence (no KV cache) and keeps every position's
logits, so its peak is at the last step, where the largest tensors alive together
are (per layer, under no_grad, one layer's at a time):

  pixels            B x 3 x 224 x 224
  encoder           B x N x d_enc (hidden, kept)  +  B x N x i_enc (MLP)
                    +  B x h_enc x N x N (attention scores and their softmax)
  decoder at T      B x T x vocab (logits)  +  B x T x 4 d_dec (MLP)
                    +  B x h_dec x T x T (self-attention scores and softmax)
                    +  B x T x d_dec x 4 (residual, norms, q/k/v)

in fp32 (bf16 autocast halves the activations), plus the weights. N is the encoder's
token count ((224 / patch)^2 + 1). A lower bound by design: refusing a run that would
have fit is worse than letting a borderline one try (torch's OOM is still caught).

The budget is what the device has free: CUDA `mem_get_info`, elsewhere the system's
MemAvailable (MPS shares it). `PT2I_MEMORY_LIMIT` (bytes, or with K/M/G) caps it: on
a shared machine, or to test the refusal on any machine.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from inspector.core.errors import InspectorError

IMAGE = (3, 224, 224)
LIMIT_ENV = "PT2I_MEMORY_LIMIT"


class RunTooLargeError(InspectorError):
    """The run's estimated peak memory exceeds what the device has."""


@dataclass(frozen=True)
class Dims:
    """The toy model's sizes that set its activation memory."""

    enc_hidden: int = 768
    enc_intermediate: int = 3072
    enc_heads: int = 12
    patch: int = 16
    dec_hidden: int = 768
    dec_heads: int = 12
    vocab: int = 1024

    @classmethod
    def from_toy_config(cls, config: Any) -> Dims:
        """From extra/pt2_inspector.json's `toy_config`; odd values keep the
        full-size defaults, a missing config gives the tiny preset's sizes."""
        enc = config.get("encoder") if isinstance(config, dict) else None
        dec = config.get("decoder") if isinstance(config, dict) else None
        if not isinstance(enc, dict) or not isinstance(dec, dict):
            return SMALLEST  # no config: assume the smallest toy (a lower bound)
        d = cls()

        def pick(src: dict[str, Any], key: str, default: int) -> int:
            v = src.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 20 else default

        return cls(pick(enc, "hidden_size", d.enc_hidden),
                   pick(enc, "intermediate_size", d.enc_intermediate),
                   pick(enc, "num_attention_heads", d.enc_heads),
                   pick(enc, "patch_size", d.patch),
                   pick(dec, "n_embd", d.dec_hidden), pick(dec, "n_head", d.dec_heads),
                   pick(dec, "vocab_size", d.vocab))


SMALLEST = Dims(enc_hidden=64, enc_intermediate=128, enc_heads=2, patch=32, dec_hidden=64,
                dec_heads=2, vocab=1024)  # the tiny preset (jobs/toy.py)


def estimate_run_bytes(dims: Dims, batch: int, tokens: int, weight_bytes: int = 0,
                       bf16: bool = False) -> int:
    """Lower bound on the generator's peak memory, in bytes (see the module doc)."""
    act = 2 if bf16 else 4
    b, t = batch, tokens + 1  # the start token, then one per step
    n = (IMAGE[1] // max(dims.patch, 1)) * (IMAGE[2] // max(dims.patch, 1)) + 1
    pixels = b * IMAGE[0] * IMAGE[1] * IMAGE[2] * 4  # made in fp32 before autocast
    encoder_kept = b * n * dims.enc_hidden * act
    encoder_peak = b * n * dims.enc_intermediate * act + 2 * b * dims.enc_heads * n * n * act
    decoder_peak = (b * t * dims.vocab * act + b * t * 4 * dims.dec_hidden * act
                    + 2 * b * dims.dec_heads * t * t * act + 4 * b * t * dims.dec_hidden * act
                    + b * dims.dec_heads * t * n * act)
    return weight_bytes + pixels + encoder_kept + max(encoder_peak, decoder_peak)


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9]{1,15})\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not m:
        raise RunTooLargeError(f"{LIMIT_ENV}={text[:40]!r} is not a size (bytes, or 512M, 8G)")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()]
    return int(m.group(1)) * scale


def system_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux); elsewhere the physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fp:
            for line in fp:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def available_bytes(torch: Any, device: Any) -> tuple[int | None, str]:
    """(bytes the run may use, what they are), capped by PT2I_MEMORY_LIMIT."""
    have: int | None
    if getattr(device, "type", "cpu") == "cuda":
        try:
            have, what = int(torch.cuda.mem_get_info(device)[0]), f"free on {device}"
        except Exception:
            have, what = None, f"free on {device}"
    else:
        have, what = system_available_bytes(), "of available RAM"
    limit = os.environ.get(LIMIT_ENV)
    if limit:
        cap = parse_size(limit)
        if have is None or cap < have:
            have, what = cap, f"allowed by {LIMIT_ENV}"
    return have, what


def check_run_memory(dims: Dims, batch: int, tokens: int, weight_bytes: int, bf16: bool,
                     have: int | None, what: str, device: str) -> int:
    """Raise RunTooLargeError when the estimate exceeds `have`; return the estimate."""
    need = estimate_run_bytes(dims, batch, tokens, weight_bytes, bf16)
    if have is not None and need > have:
        fit = max_batch(dims, tokens, weight_bytes, bf16, have)
        hint = (f"batch {fit} fits at {tokens} tokens" if fit else
                f"even batch 1 does not fit at {tokens} tokens: use fewer --max-tokens")
        raise RunTooLargeError(
            f"batch {batch} x {tokens} tokens needs about {_gb(need)} on {device}, more "
            f"than the {_gb(have)} {what} ({hint})")
    return need


def max_batch(dims: Dims, tokens: int, weight_bytes: int, bf16: bool, have: int) -> int:
    """The largest batch whose estimate fits in `have` (0 if none); the estimate grows
    with the batch, so a bisection finds it."""
    lo, hi = 0, 4096
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_run_bytes(dims, mid, tokens, weight_bytes, bf16) <= have:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"
