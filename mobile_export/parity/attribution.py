"""Which weight the int8 error comes from: each Linear quantized alone, and all but it, against fp32, in
PyTorch's emulation of the runtime's dynamic int8 (``quantize.simulate``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from quantize.simulate import quantized

from ..core.figures import sqnr_from_sums


def pooled_sqnr_db(reference: Sequence[np.ndarray], other: Sequence[np.ndarray]) -> float:
    """SQNR of ``other`` against ``reference`` over every output of every example together."""
    signal = noise = 0.0
    for r, o in zip(reference, other):
        r64 = r.astype(np.float64)
        signal += float(np.sum(r64 * r64))
        noise += float(np.sum((r64 - o) ** 2))
    return sqnr_from_sums(signal, noise)


@dataclass(frozen=True)
class WeightError:
    """What one weight's int8 costs the model's outputs (SQNR in dB against fp32)."""

    weight: str
    alone_db: float  # only this weight quantized
    without_db: float  # every weight quantized except this one


@torch.no_grad()
def weight_errors(
    model: torch.nn.Module,
    names: Sequence[str],
    run: Callable[[], list[np.ndarray]],
    granularity: str,
    valid: torch.Tensor | None = None,
    reference: list[np.ndarray] | None = None,
    cache: dict[str, torch.Tensor] | None = None,
) -> tuple[float, list[WeightError]]:
    """(SQNR with every weight of ``names`` quantized, each weight's share); ``run`` gives the outputs that
    are compared (the same examples each call; ``valid``: the real tokens when it runs a padded batch;
    ``reference``: the outputs to compare with, when not ``run``'s own with nothing quantized; ``cache``: the
    int8 weights already computed for ``model``, ``quantize.simulate.quantized``)."""
    reference = run() if reference is None else reference
    cache = {} if cache is None else cache
    with quantized(model, names, granularity, valid, cache):
        every = pooled_sqnr_db(reference, run())
    errors = []
    for name in names:
        with quantized(model, [name], granularity, valid, cache):
            alone = pooled_sqnr_db(reference, run())
        with quantized(model, [n for n in names if n != name], granularity, valid, cache):
            without = pooled_sqnr_db(reference, run())
        errors.append(WeightError(name, alone, without))
    return every, errors
