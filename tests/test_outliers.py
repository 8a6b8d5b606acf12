"""Outlier channels: the fp32 model's per-channel input ranges name the channels that dominate a weight's
dynamic int8 scale, at every depth of the shared layer, and name none on a model without them."""

from __future__ import annotations

import torch

from mobile_export.model.activations import OUTLIER_RATIO, channel_ranges
from mobile_export.model.loading import load_checkpoint
from mobile_export.model.reference import tokenize
from mobile_export.parity.texts import builtin_texts

LAYER = "albert.encoder.albert_layer_groups.0.albert_layers.0"
PLANTED = (3, 17)


def _ranges(ckpt, plant: float | None = None):
    loaded = load_checkpoint(ckpt)
    if plant:  # the shared layer's last LayerNorm: its output is the next depth's query/key/value input
        norm = loaded.model.get_submodule(f"{LAYER}.full_layer_layer_norm")
        with torch.no_grad():
            for c in PLANTED:
                norm.weight[c] *= plant
                norm.bias[c] *= plant
    return channel_ranges(loaded.model, tokenize(loaded.tokenizer, builtin_texts()[:12], 64)), loaded


def test_planted_layernorm_channels_are_named_at_the_depths_they_reach(tiny_checkpoint):
    ranges, loaded = _ranges(tiny_checkpoint("text-classification", num_hidden_layers=3), plant=40.0)
    query = ranges[f"{LAYER}.attention.query"]
    assert query.calls == loaded.config.num_hidden_layers == 3
    assert {c for c, _ in query.outliers()} == set(PLANTED)
    assert min(r for _, r in query.outliers()) >= 20  # 40x gamma and beta: far above the median channel
    # depth 0 reads the embedding projection, not the planted LayerNorm: only depths 1 and 2 carry them
    first, later = query.by_call[0], query.by_call[1:].max(axis=0)
    assert max(first[list(PLANTED)]) < OUTLIER_RATIO * float(torch.tensor(first).median())
    assert min(later[list(PLANTED)]) >= 20 * float(torch.tensor(later).median())
    for name in ("key", "value"):
        assert {c for c, _ in ranges[f"{LAYER}.attention.{name}"].outliers()} == set(PLANTED)
    # the FFN reads the attention LayerNorm's output, which normalizes the planted channels away
    assert not ranges[f"{LAYER}.ffn"].outliers()


def test_no_channel_is_named_without_outliers(tiny_checkpoint):
    ranges, _ = _ranges(tiny_checkpoint("text-classification", num_hidden_layers=3))
    shared = {k: v for k, v in ranges.items() if k.startswith(LAYER)}
    assert len(shared) == 6  # query, key, value, attention dense, ffn, ffn_output
    for name in ("attention.query", "attention.key", "attention.value", "ffn"):
        assert not shared[f"{LAYER}.{name}"].outliers(), (name, shared[f"{LAYER}.{name}"].spread())
