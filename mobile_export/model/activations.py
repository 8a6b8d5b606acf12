"""The ranges of every quantized weight's input channels on real text, at every depth of the shared layer.

Dynamic int8 gives an activation one scale per tensor (ONNX Runtime's DynamicQuantizeLinear) or per token
(XNNPACK: ExecuTorch 1.5.1 serializes a dynamic per-tensor quantize as ``PerTokenDynamicQuant``), never per
channel: a channel whose range is tens of times the others' spends the 8 bits. This module measures, in the
fp32 model, each Linear's input range per channel, per call (ALBERT runs its shared layer once per depth,
so one weight sees ``num_hidden_layers`` inputs), and names the channels that dominate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch

from quantize.smooth import matmul_input

from .reference import Example

OUTLIER_RATIO = 8.0  # a channel whose range is >= 8x the median channel's takes 3 of the 8 bits


@dataclass(frozen=True)
class ChannelRanges:
    """One Linear's input: the largest |value| of each channel, overall and at each call of one forward."""

    weight: str  # the module's name in the checkpoint's model
    by_call: np.ndarray  # [calls per forward, in_features]
    rows: torch.Tensor | None = None  # [at most ``channel_ranges``' rows, in_features]: input rows, evenly spaced

    @property
    def absmax(self) -> np.ndarray:
        """[in_features]: over every call and token."""
        return self.by_call.max(axis=0)

    @property
    def calls(self) -> int:
        """How many times the weight runs in one forward (the depth for the shared layer's weights)."""
        return int(self.by_call.shape[0])

    def spread(self) -> float:
        """The largest channel's range over the median channel's."""
        return _ratio(float(self.absmax.max()), self.absmax)

    def outliers(self, ratio: float = OUTLIER_RATIO) -> list[tuple[int, float]]:
        """(channel, its range over the median channel's) of the channels at or above ``ratio``, largest first."""
        ranges = self.absmax
        found = [(int(c), _ratio(float(ranges[c]), ranges)) for c in np.argsort(-ranges, kind="stable")]
        return [(c, r) for c, r in found if r >= ratio]


def _ratio(value: float, ranges: np.ndarray) -> float:
    median = float(np.median(ranges))
    return value / median if median > 0 else float("inf") if value > 0 else 1.0


@torch.no_grad()
def channel_ranges(model: torch.nn.Module, examples: Iterable[Example], rows: int = 0) -> dict[str, ChannelRanges]:
    """Each ``torch.nn.Linear`` of ``model`` (a transformers ALBERT) by name: its input channels' ranges over
    ``examples`` (batch 1, no padding), per call of one forward; with ``rows``, also at most that many of the input
    rows its matmul read (every call), evenly spaced."""
    linears = {name: m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    calls: dict[str, int] = {}
    seen: dict[str, list[np.ndarray]] = {name: [] for name in linears}
    read: dict[str, list[torch.Tensor]] = {name: [] for name in linears}

    def observe(name: str):
        def hook(module, args) -> None:
            x = matmul_input(module, args[0].detach()).float()  # a smoothed Linear's matmul reads its scaled input
            k = calls.get(name, 0)
            calls[name] = k + 1
            peak = x.abs().reshape(-1, x.shape[-1]).amax(dim=0).numpy()
            if rows:
                read[name].append(x.reshape(-1, x.shape[-1]))
            if k < len(seen[name]):
                np.maximum(seen[name][k], peak, out=seen[name][k])
            else:
                seen[name].append(peak.copy())

        return hook

    handles = [m.register_forward_pre_hook(observe(name)) for name, m in linears.items()]
    try:
        for ex in examples:
            calls.clear()
            model(**{k: torch.from_numpy(v) for k, v in ex.feeds.items()})
    finally:
        for h in handles:
            h.remove()
    return {
        name: ChannelRanges(name, np.stack(peaks), _spaced(read[name], rows)) for name, peaks in seen.items() if peaks
    }


def _spaced(parts: list[torch.Tensor], rows: int) -> torch.Tensor | None:
    """At most ``rows`` of the rows of ``parts``, evenly spaced; None without any."""
    if not parts:
        return None
    x = torch.cat(parts)
    return x[torch.linspace(0, len(x) - 1, min(rows, len(x))).long()]
