"""`profile` on more architectures this project never wrote, built from tiny configs
with the main venv's transformers: a CNN (ResNet, the shape of a torchvision model),
grouped-query attention with rotary embeddings (Qwen2), DistilBERT, and an
encoder-decoder with an audio front end (Whisper). Every op node must be timed under
torch's own node name, on the line the listing prints it (test_profile._check_names),
and the module rollup must name the model's own modules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_profile import _check_names, cli


def _programs() -> dict[str, Any]:
    import torch
    import transformers as tf
    from torch.export import Dim, export

    torch.manual_seed(0)
    batch, seq = Dim("batch", min=1, max=8), Dim("seq", min=2, max=32)
    text = (torch.zeros(2, 8, dtype=torch.long),)
    models = {
        "resnet": (tf.ResNetForImageClassification(tf.ResNetConfig(
            embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=3,
            layer_type="basic")), (torch.randn(2, 3, 32, 32),), None, ({0: batch},)),
        "qwen2": (tf.Qwen2ForCausalLM(tf.Qwen2Config(
            vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=4, num_key_value_heads=2, use_cache=False,
            max_position_embeddings=64)), text, None, ({0: batch, 1: seq},)),
        "distilbert": (tf.DistilBertForSequenceClassification(tf.DistilBertConfig(
            vocab_size=97, dim=32, n_layers=1, n_heads=2, hidden_dim=64,
            max_position_embeddings=64)), text, None, ({0: batch, 1: seq},)),
        "whisper": (tf.WhisperForConditionalGeneration(tf.WhisperConfig(
            vocab_size=97, pad_token_id=0, bos_token_id=1, eos_token_id=2,
            decoder_start_token_id=1, d_model=32, encoder_layers=1, decoder_layers=1,
            encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
            decoder_ffn_dim=64, num_mel_bins=8, max_source_positions=16,
            max_target_positions=16, use_cache=False)), (torch.randn(1, 8, 32),),
            {"decoder_input_ids": torch.zeros(1, 4, dtype=torch.long)}, None),
    }
    out = {}
    with torch.no_grad():
        for name, (model, args, kwargs, dynamic) in models.items():
            out[name] = export(model.eval(), args, kwargs, dynamic_shapes=dynamic)
    return out


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    import torch
    from torch.export.pt2_archive._package import package_pt2

    programs = _programs()
    out = tmp_path_factory.mktemp("hf-more") / "hf-more.pt2"
    with torch.no_grad():
        package_pt2(str(out), exported_programs=programs)
    return out, programs


@pytest.mark.slow
def test_every_op_node_is_timed_under_the_listing_names(archive):
    path, programs = archive
    proc = cli("profile", str(path), "--device", "cpu", "--warmup", "0", "--repeats", "1",
               "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert sorted(p["name"] for p in result["programs"]) == sorted(programs)
    assert _check_names(path, result, set()) == len(programs)
    modules = {p["name"]: {m["path"]: m["class"] for m in p["modules"]}
               for p in result["programs"]}
    assert modules["resnet"]["resnet.encoder.stages.0"].endswith("ResNetStage")
    assert modules["qwen2"]["model.layers.0.self_attn"].endswith("Qwen2Attention")
    assert any(c.endswith("WhisperEncoder") for c in modules["whisper"].values())
    convs = [o for o in next(p for p in result["programs"] if p["name"] == "resnet")["ops"]
             if "convolution" in o["target"] or "conv2d" in o["target"]]
    assert convs and all(o["ms"] > 0 for o in convs)
