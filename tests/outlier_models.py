"""Tiny ALBERTs with activation outlier channels, for the diagnosis and repair tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

LAYER = "albert.encoder.albert_layer_groups.0.albert_layers.0"
PLANTED = (3, 11)  # inside the embedding width (16) and the hidden width (32)


def plant_exact(model, factor: float) -> None:
    """Outlier channels that leave the fp32 function unchanged: the embeddings LayerNorm's channels PLANTED
    scaled up and the projection's matching input columns scaled down; likewise the value projection's
    output channels and the attention output's input columns (the attention mix is linear in the values)."""
    pairs = [("albert.embeddings.LayerNorm", "albert.encoder.embedding_hidden_mapping_in"),
             (f"{LAYER}.attention.value", f"{LAYER}.attention.dense")]
    with torch.no_grad():
        for producer, consumer in pairs:
            p, c = model.get_submodule(producer), model.get_submodule(consumer)
            for ch in PLANTED:
                if isinstance(p, torch.nn.Linear):
                    p.weight[ch, :] *= factor
                else:
                    p.weight[ch] *= factor
                p.bias[ch] *= factor
                c.weight[:, ch] /= factor


def plant_residual(model, factor: float) -> None:
    """Outlier channels in the residual stream, which no rescaling folds exactly: the shared layer's last
    LayerNorm's channels PLANTED scaled up (its output is the next depth's query/key/value input, the residual
    the next depth adds to, and the pooler's input). The fp32 function changes: this is another model."""
    norm = model.get_submodule(f"{LAYER}.full_layer_layer_norm")
    with torch.no_grad():
        for c in PLANTED:
            norm.weight[c] *= factor
            norm.bias[c] *= factor


def planted_checkpoint(source: Path, dest: Path, factor: float, plant=plant_exact) -> Path:
    """A copy of the checkpoint folder ``source`` at ``dest`` with ``plant(model, factor)`` applied."""
    from mobile_export.model.loading import load_checkpoint

    shutil.copytree(source, dest)
    loaded = load_checkpoint(str(source))
    plant(loaded.model, factor)
    for stale in dest.glob("*.safetensors"):
        stale.unlink()
    loaded.model.save_pretrained(dest)
    return dest
