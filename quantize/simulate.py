"""Dynamic int8 of a Linear, emulated in PyTorch as each runtime does it, so that the error of each weight can
be measured without exporting once per weight (``mobile_export.parity.attribution``).

Weights: symmetric int8, one scale per output channel (both backends). Activations, quantized at run time:
``tensor``: one asymmetric uint8 scale for the whole input (ONNX Runtime's DynamicQuantizeLinear);
``token``: one asymmetric int8 scale per row (XNNPACK's dynamically quantized fully-connected, which is what
ExecuTorch 1.5.1 makes of the XNNPACK quantizer's dynamic per-tensor activation).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import cast

import torch

from .smooth import matmul_input, module_input

GRANULARITIES = ("tensor", "token")


def fake_quant_activation(x: torch.Tensor, granularity: str, valid: torch.Tensor | None = None) -> torch.Tensor:
    """``x`` through an asymmetric 8-bit quantize-dequantize whose range includes 0, per ``granularity``.

    ``x``'s first dimension is the batch: each example gets its own range, as in a batch-1 runtime call.
    ``valid`` [batch, seq] (bool) marks the real tokens of a padded batch; padding is left out of ranges."""
    if granularity == "tensor":
        dims = tuple(range(1, x.dim()))
        if valid is not None and x.dim() == 3 and x.shape[1] == valid.shape[1]:
            keep = valid[:, :, None]
            lo = x.masked_fill(~keep, float("inf")).amin(dim=dims, keepdim=True).clamp(max=0)
            hi = x.masked_fill(~keep, float("-inf")).amax(dim=dims, keepdim=True).clamp(min=0)
        else:
            lo = x.amin(dim=dims, keepdim=True).clamp(max=0) if dims else x.clamp(max=0)
            hi = x.amax(dim=dims, keepdim=True).clamp(min=0) if dims else x.clamp(min=0)
    elif granularity == "token":
        lo = x.amin(dim=-1, keepdim=True).clamp(max=0)
        hi = x.amax(dim=-1, keepdim=True).clamp(min=0)
    else:
        raise ValueError(f"granularity must be one of {GRANULARITIES}, not {granularity!r}")
    scale = ((hi - lo) / 255).clamp(min=torch.finfo(torch.float32).tiny)
    zero = torch.round(-lo / scale)
    return (torch.clamp(torch.round(x / scale) + zero, 0, 255) - zero) * scale


def fake_quant_weight(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` [out, in] through symmetric int8, one scale per output channel."""
    scale = (weight.abs().amax(dim=1, keepdim=True) / 127).clamp(min=torch.finfo(torch.float32).tiny)
    return torch.clamp(torch.round(weight / scale), -127, 127) * scale


@contextlib.contextmanager
def quantized(
    model: torch.nn.Module,
    names: Iterable[str],
    granularity: str,
    valid: torch.Tensor | None = None,
    cache: dict[str, torch.Tensor] | None = None,
) -> Iterator[None]:
    """Within the block, the Linears ``names`` of ``model`` compute as dynamic int8 (weights restored after);
    ``valid``: the real tokens of the padded batch the block runs (``fake_quant_activation``); ``cache``: each
    Linear's int8 weight by name, kept across blocks on the same model (an attribution enters hundreds)."""
    saved = []
    handles = []
    try:
        for name in names:
            linear = cast(torch.nn.Linear, model.get_submodule(name))
            saved.append((linear, linear.weight.data))
            weight = cache.get(name) if cache is not None else None
            if weight is None:
                weight = fake_quant_weight(linear.weight.data)
                if cache is not None:
                    cache[name] = weight
            linear.weight.data = weight

            def hook(m: torch.nn.Module, args: tuple) -> tuple:  # a smoothed Linear's matmul reads its scaled input
                return (module_input(m, fake_quant_activation(matmul_input(m, args[0]), granularity, valid)),)

            handles.append(linear.register_forward_pre_hook(hook))
        yield
    finally:
        for h in handles:
            h.remove()
        for linear, weight in saved:
            linear.weight.data = weight
