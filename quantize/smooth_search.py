"""Input scales chosen by measurement: for each group of Linears that read one tensor, SmoothQuant's scales at the
migration strength (alpha) whose emulated int8 of the group's outputs is closest to fp32 on the sample's inputs, or
none where no strength beats the unscaled Linears. The caller keeps a group's scales only where the whole model's
emulated int8 gains: a better local output can still cost the model downstream (a tiny ALBERT with 40x residual
outliers: the value's outputs 8 dB closer to fp32, the model's int8 2-4 dB further from it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import torch

from .simulate import fake_quant_activation, fake_quant_weight
from .smooth import smoothing_scales

ALPHAS = (0.3, 0.5, 0.65, 0.8, 0.9)  # migration strengths tried (SmoothQuant: 0.5 for most models, up to 0.85)
MIN_GAIN = 1.05  # an input scale must cut the group's emulated error by 5% to be worth its Mul


def reader_groups(absmax: Mapping[str, torch.Tensor]) -> list[list[str]]:
    """The Linears of ``absmax`` grouped by the tensor they read: siblings (one parent module) whose input ranges
    are equal (query, key and value), each Linear alone otherwise."""
    groups: list[list[str]] = []
    for name in absmax:
        parent = name.rsplit(".", 1)[0] if "." in name else ""
        for group in groups:
            first = group[0]
            if first.rsplit(".", 1)[0] == parent and torch.equal(absmax[first], absmax[name]):
                group.append(name)
                break
        else:
            groups.append([name])
    return groups


def group_error(x: torch.Tensor, weights: Sequence[torch.Tensor], scales: torch.Tensor, granularity: str) -> float:
    """The error of the Linears ``weights`` on rows ``x`` [N, in] when the input is divided by ``scales`` and both
    sides go through int8 as the runtime does (``granularity``), against fp32: each Linear's squared error relative
    to its output's energy, summed (query, key and value count alike, whatever their outputs' sizes)."""
    xq = fake_quant_activation(x / scales, granularity)
    total = 0.0
    for w in weights:
        ref = x @ w.T
        err = float(((xq @ fake_quant_weight(w * scales[None, :]).T - ref) ** 2).sum())
        total += err / max(float((ref**2).sum()), torch.finfo(torch.float32).tiny)
    return total


def best_scales(
    x: torch.Tensor, weights: Sequence[torch.Tensor], absmax: torch.Tensor, granularity: str
) -> tuple[torch.Tensor, float] | None:
    """The smoothing scales of the alpha in ``ALPHAS`` with the smallest ``group_error`` on ``x`` and how many times
    smaller that error is than with no scale; None when none is ``MIN_GAIN`` better."""
    joined = torch.cat(list(weights))
    plain = group_error(x, weights, torch.ones_like(absmax), granularity)
    found: tuple[float, torch.Tensor] | None = None
    for alpha in ALPHAS:
        scales = smoothing_scales(absmax, joined, alpha)
        error = group_error(x, weights, scales, granularity)
        if found is None or error < found[0]:
            found = (error, scales)
    if found is None or found[0] * MIN_GAIN >= plain:
        return None
    return found[1], plain / max(found[0], torch.finfo(torch.float32).tiny)


@torch.no_grad()
def candidate_scales(
    model: torch.nn.Module,
    inputs: Mapping[str, torch.Tensor],
    granularity: str,
    threshold: float = 1.0,
    skip: frozenset[str] = frozenset(),
) -> list[tuple[list[str], torch.Tensor]]:
    """Each group of Linears of ``inputs`` (each Linear's sampled matmul input rows [N, in], every depth) whose
    input has a channel at least ``threshold`` times the median channel's range, with its best input scales
    (``best_scales``), the largest local gain first; ``skip``: Linears left out, and a decoder tied to the word table
    (its columns are the table's). Nothing is changed: the caller gives the scales it keeps
    (``smooth.give_input_scales``)."""
    tied = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    absmax = {
        n: x.abs().amax(dim=0)
        for n, x in inputs.items()
        if n not in skip and id(cast(torch.nn.Linear, model.get_submodule(n)).weight) not in tied
    }
    found = []
    for group in reader_groups(absmax):
        ranges = absmax[group[0]]
        median = float(ranges.median())
        if median <= 0 or float(ranges.max()) < threshold * median:
            continue
        weights = [cast(torch.nn.Linear, model.get_submodule(n)).weight.detach() for n in group]
        best = best_scales(inputs[group[0]].float(), weights, ranges, granularity)
        if best is not None:
            found.append((best[1], group, best[0]))
    return [(group, scales) for _, group, scales in sorted(found, key=lambda f: -f[0])]
