"""The seed's toy image-to-text model: a ViT encoder and a GPT-2 decoder, random weights.

As in the seed blog: `VisionEncoderDecoderConfig.from_encoder_decoder_configs(
AutoConfig.for_model("vit"), AutoConfig.for_model("gpt2"))` with a 1024-token vocabulary,
no KV cache, start 1 / pad 0 / end 2, at most 256 tokens. No downloads: the weights are
random, drawn from a recorded seed, so the same preset + seed gives the same model.

Presets:
  seed  the blog's sizes: ViT-base (224x224, patch 16) + GPT-2 (12 layers, hidden 768),
        about 201M parameters.
  tiny  hidden 64, 2 layers, 2 heads on both sides; the image stays 3x224x224 (the
        encoder's static input, as in the seed) but with 32x32 patches (49 tokens), so a
        whole export takes a few seconds. Used by the tests and the demo archive.

Only this module knows how the model is built; `config_to_json`/`model_from_json`
let an archive carry the config (its `extra/` record) and issue 6's eager mode rebuild
exactly the same module tree from it.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

VOCAB_SIZE = 1024
START_TOKEN = 1
PAD_TOKEN = 0
END_TOKEN = 2
MAX_LENGTH = 256
IMAGE_SHAPE = (3, 224, 224)

# Overrides on top of AutoConfig.for_model(...) defaults, per preset.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "seed": {"encoder": {}, "decoder": {}},
    "tiny": {
        "encoder": {
            "hidden_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "intermediate_size": 128,
            "patch_size": 32,
        },
        "decoder": {"n_embd": 64, "n_layer": 2, "n_head": 2, "n_positions": MAX_LENGTH},
    },
}
PRESET_NAMES = tuple(PRESETS)


def build_config(preset: str = "tiny"):
    """The VisionEncoderDecoderConfig of a preset (transformers imported here, not at
    module level, so `inspector.jobs.toy` can be named without loading it)."""
    from transformers import AutoConfig, VisionEncoderDecoderConfig

    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r} (choose from {', '.join(PRESET_NAMES)})")
    enc = AutoConfig.for_model("vit", **PRESETS[preset]["encoder"])
    dec = AutoConfig.for_model(
        "gpt2",
        vocab_size=VOCAB_SIZE,
        use_cache=False,
        bos_token_id=START_TOKEN,
        eos_token_id=END_TOKEN,
        pad_token_id=PAD_TOKEN,
        **PRESETS[preset]["decoder"],
    )
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
    config.decoder_start_token_id = START_TOKEN
    config.pad_token_id = PAD_TOKEN
    config.eos_token_id = END_TOKEN
    config.max_length = MAX_LENGTH
    config.decoder.use_cache = False
    return config


def config_to_json(config) -> dict[str, Any]:
    """Plain-JSON description of the config (no code, no class paths to import)."""
    return {
        "encoder": config.encoder.to_dict(),
        "decoder": config.decoder.to_dict(),
        "decoder_start_token_id": config.decoder_start_token_id,
        "pad_token_id": config.pad_token_id,
        "eos_token_id": config.eos_token_id,
        "max_length": config.max_length,
    }


def config_from_json(data: dict[str, Any]):
    """Inverse of `config_to_json`. Only the two known model types are accepted: the
    dicts come from an archive, and transformers would otherwise pick any class."""
    from transformers import AutoConfig, VisionEncoderDecoderConfig

    enc_d = dict(data["encoder"])
    dec_d = dict(data["decoder"])
    if enc_d.pop("model_type", "vit") != "vit" or dec_d.pop("model_type", "gpt2") != "gpt2":
        raise ValueError("the archive's toy config is not a ViT encoder + GPT-2 decoder")
    for d in (enc_d, dec_d):
        for key in ("auto_map", "transformers_version", "architectures"):
            d.pop(key, None)
    enc = AutoConfig.for_model("vit", **enc_d)
    dec = AutoConfig.for_model("gpt2", **dec_d)
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
    config.decoder_start_token_id = int(data.get("decoder_start_token_id", START_TOKEN))
    config.pad_token_id = int(data.get("pad_token_id", PAD_TOKEN))
    config.eos_token_id = int(data.get("eos_token_id", END_TOKEN))
    config.max_length = int(data.get("max_length", MAX_LENGTH))
    config.decoder.use_cache = False
    return config


def model_from_config(config, seed: int | None = 0) -> nn.Module:
    """VisionEncoderDecoderModel in eval mode, random weights from `seed`
    (None: leave the global RNG as it is, e.g. when weights are loaded afterwards)."""
    from transformers import VisionEncoderDecoderModel

    if seed is not None:
        torch.manual_seed(seed)
    model = VisionEncoderDecoderModel(config)
    # As in the seed: the pooler's output is never used by the decoder.
    model.encoder.pooler = None
    return model.eval()


class DecoderWrapper(nn.Module):
    """The decoder with positional arguments (torch.export's dynamic_shapes are keyed
    by position), returning the logits only.

    With `cache_position=True` the positions come in as a third input (int64, one per
    token) instead of an `arange` inside the model: the seed blog's fix, which keeps
    that `device=cpu` arange out of the exported graph. transformers 5 calls them
    `position_ids`; they are the same numbers. (Its mask builders still create
    aranges of their own: measured 9 -> 8 aranges, 15 -> 14 device literals.)
    """

    def __init__(self, model: nn.Module, cache_position: bool = False) -> None:
        super().__init__()
        self.decoder = model.decoder
        self.cache_position = cache_position

    def forward(
        self,
        input_ids: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        cache_position: torch.Tensor | None = None,
    ) -> torch.Tensor:
        position_ids = None if cache_position is None else cache_position.unsqueeze(0)
        out = self.decoder(
            input_ids=input_ids,
            encoder_hidden_states=encoder_hidden_states,
            position_ids=position_ids,
            use_cache=False,
            return_dict=True,
        )
        return out.logits


def example_inputs(
    config, batch: int, seq_len: int, cache_position: bool, device: str = "cpu", seed: int = 0
) -> tuple[tuple[torch.Tensor], tuple[torch.Tensor, ...]]:
    """(encoder args, decoder args) for export: small, deterministic."""
    gen = torch.Generator().manual_seed(seed)
    pixels = torch.randn((batch, *IMAGE_SHAPE), generator=gen).to(device)
    hidden = config.encoder.hidden_size
    n_tokens = (IMAGE_SHAPE[1] // config.encoder.patch_size) ** 2 + 1
    enc_states = torch.randn((batch, n_tokens, hidden), generator=gen).to(device)
    ids = torch.randint(3, VOCAB_SIZE, (batch, seq_len), generator=gen).to(device)
    ids[:, 0] = START_TOKEN
    dec_args: tuple[torch.Tensor, ...] = (ids, enc_states)
    if cache_position:
        dec_args = (*dec_args, torch.arange(seq_len, device=device))
    return (pixels,), dec_args

