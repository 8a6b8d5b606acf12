"""Rescalings that leave the fp32 function unchanged and move an outlier channel's range from a weight's
input into the weight (SmoothQuant's migration), folded into the weights where ALBERT's graph allows it
exactly, so the artifact gains no operator.

A channel j of a Linear's input x can be divided by s_j and the Linear's input column j multiplied by s_j
when whatever produces x can absorb 1/s_j and x reaches nothing else. In ALBERT that holds for two pairs:
the embeddings LayerNorm (its scale and shift) before the projection to the hidden width, and each layer's
value projection (its output rows) before the attention output (the attention mix is linear in the values,
per channel). The shared layer runs at every depth with the same weights, so its scale vector comes from
the input ranges over every depth at once. Other inputs (query/key/value and the FFN read LayerNorm outputs
that also feed the residual stream; the FFN output reads a GELU) have no exact fold: there the Linear itself
divides its input by the scales before its matmul (``SmoothedLinear``: one elementwise Mul and 4 bytes per input
channel in the artifact, the same function in fp32), and Linears that read one tensor (query, key and value) share
one scale vector, so their Muls are one node in the .onnx (the exporter's optimizer merges equal ones) and
their input one quantization.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

ALPHA = 0.5  # SmoothQuant's migration strength: the range split evenly between activation and weight


INPUT_SCALE = "input scale"  # a Fold's producer when the consumers divide their own input (``SmoothedLinear``)


@dataclass(frozen=True)
class Fold:
    """One producer -> consumer pair rescaled: its largest scale and how many channels moved; a fold into the
    producer stores nothing, an input scale (``producer == INPUT_SCALE``, ``consumer`` the Linears that read one
    tensor, comma-separated) stores its scale vector."""

    producer: str
    consumer: str
    largest_scale: float
    channels: int  # channels whose scale is not 1
    stored_bytes: int = 0  # what the artifact gains: 4 bytes per input channel for an input scale


class SmoothedLinear(torch.nn.Linear):
    """A Linear that multiplies its input by ``input_scale`` (1 / s per channel) before its matmul, its weight's
    columns having been multiplied by s: the fp32 function unchanged, the input's outlier channels moved into the
    weight. Exported as an elementwise Mul before the MatMul; quantizers see the Mul's output."""

    input_scale: torch.Tensor

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return super().forward(input * self.input_scale)


def matmul_input(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """What ``module``'s matmul reads when it is called with ``x`` (a forward pre-hook's view of a Linear)."""
    return x * module.input_scale if isinstance(module, SmoothedLinear) else x


def module_input(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The call input whose matmul input is ``x`` (``matmul_input`` undone: a pre-hook that edits the matmul's)."""
    return x / module.input_scale if isinstance(module, SmoothedLinear) else x


# (the producer's name ends with, that ending, what replaces it in the consumer's name) for every encoder family:
# the embeddings' LayerNorm before a projection that reads nothing else (ALBERT's; ELECTRA's), and the attention's
# value projection before its output projection (the mix over positions is linear in the values)
FOLDS = (
    ("embeddings.LayerNorm", "embeddings.LayerNorm", "encoder.embedding_hidden_mapping_in"),  # ALBERT
    ("embeddings.LayerNorm", "embeddings.LayerNorm", "embeddings_project"),  # ELECTRA
    ("attention.value", "value", "dense"),  # ALBERT
    ("attention.self.value", "self.value", "output.dense"),  # BERT, ELECTRA, RoBERTa, XLM-R
    ("attention.v_lin", "v_lin", "out_lin"),  # DistilBERT
)


def foldable_pairs(model: torch.nn.Module) -> list[tuple[str, str]]:
    """(producer, consumer) module names of ``model`` (a transformers encoder) with an exact per-channel fold."""
    names = dict(model.named_modules())
    pairs = []
    for name in names:
        for ending, old, new in FOLDS:
            consumer = name[: -len(old)] + new
            if name.endswith(ending) and consumer in names:
                pairs.append((name, consumer))
                break
    return pairs


def smoothing_scales(absmax: torch.Tensor, weight: torch.Tensor, alpha: float = ALPHA) -> torch.Tensor:
    """s_j = max|x_j|^alpha / max|W[:, j]|^(1 - alpha), 1 where either range is 0 (SmoothQuant, eq. 4)."""
    w = weight.abs().amax(dim=0).to(torch.float64)
    a = absmax.to(torch.float64)
    s = a.pow(alpha) / w.pow(1 - alpha)
    s = torch.where((a > 0) & (w > 0) & torch.isfinite(s), s, torch.ones_like(s))
    return s.to(torch.float32)


@torch.no_grad()
def fold(model: torch.nn.Module, producer: str, consumer: str, scales: torch.Tensor) -> None:
    """Divide ``producer``'s output channels by ``scales`` and multiply ``consumer``'s input columns by them."""
    p: Any = model.get_submodule(producer)  # a Linear or a LayerNorm
    c = cast(torch.nn.Linear, model.get_submodule(consumer))
    if isinstance(p, torch.nn.Linear):
        p.weight.div_(scales[:, None])
    else:  # a LayerNorm: its scale and shift
        p.weight.div_(scales)
    if p.bias is not None:
        p.bias.div_(scales)
    c.weight.mul_(scales[None, :])


def smooth(
    model: torch.nn.Module, absmax: Mapping[str, torch.Tensor], alpha: float = ALPHA, threshold: float = 1.0
) -> list[Fold]:
    """Fold smoothing scales into every exact pair of ``model`` whose consumer's input ranges ``absmax``
    (per channel, over every depth) has a channel at least ``threshold`` times its median; the folds made."""
    done = []
    for producer, consumer in foldable_pairs(model):
        if consumer not in absmax:
            continue
        ranges = absmax[consumer]
        median = float(ranges.median())
        if median <= 0 or float(ranges.max()) < threshold * median:
            continue
        scales = smoothing_scales(ranges, cast(torch.nn.Linear, model.get_submodule(consumer)).weight.detach(), alpha)
        fold(model, producer, consumer, scales)
        done.append(Fold(producer, consumer, float(scales.max()), int((scales != 1).sum())))
    return done


@torch.no_grad()
def give_input_scales(model: torch.nn.Module, group: Sequence[str], scales: torch.Tensor) -> Fold:
    """Make the Linears ``group`` of ``model`` (readers of one tensor) divide their input by ``scales`` before their
    matmul (``SmoothedLinear``), their weights' columns multiplied by them: the fp32 function unchanged."""
    for name in group:
        m = cast(torch.nn.Linear, model.get_submodule(name))
        m.weight.mul_(scales[None, :])
        if isinstance(m, SmoothedLinear):
            m.input_scale.div_(scales)
        else:
            m.__class__ = SmoothedLinear
            m.register_buffer("input_scale", (1.0 / scales).to(m.weight.dtype))
    return Fold(INPUT_SCALE, ",".join(group), float(scales.max()), int((scales != 1).sum()), 4 * scales.numel())
