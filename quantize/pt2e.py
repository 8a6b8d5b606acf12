"""int8 dynamic per-channel quantization of an exported graph for the XNNPACK delegate (PT2E)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import cast

import torch

from .schemes import INT8_DYNAMIC_PER_CHANNEL, Scheme


def quantize_graph(
    graph_module: torch.fx.GraphModule,
    calibration: Iterable[tuple[torch.Tensor, ...]],
    scheme: Scheme = INT8_DYNAMIC_PER_CHANNEL,
    keep: Sequence[torch.Tensor] = (),
) -> torch.fx.GraphModule:
    """Insert int8 quantize/dequantize pairs for XNNPACK into ``graph_module``.

    Args:
        graph_module: ``torch.export.export(...).module()`` of the model.
        calibration: example inputs to run once through the prepared graph (dynamic activation
            quantization needs no statistics, but the observers must see a forward pass).
        scheme: only ``INT8_DYNAMIC_PER_CHANNEL`` is implemented.
        keep: Linear weights whose ``linear`` stays fp32 (a repair's mixed precision), found by value.

    Returns:
        The converted graph; each shared weight appears once, so it is quantized once.
    """
    if scheme != INT8_DYNAMIC_PER_CHANNEL:
        raise ValueError(f"PT2E side implements {INT8_DYNAMIC_PER_CHANNEL.name} only, not {scheme.name}")
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = XNNPACKQuantizer()
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=scheme.per_channel, is_dynamic=True))
    if keep:
        quantizer.set_filter_function(lambda node: not reads_kept_weight(graph_module, node, keep))
    prepared = prepare_pt2e(graph_module, quantizer)
    with torch.no_grad():
        for inputs in calibration:
            prepared(*inputs)
    return convert_pt2e(prepared)


def reads_kept_weight(graph_module: torch.fx.GraphModule, node: torch.fx.Node, keep: Sequence[torch.Tensor]) -> bool:
    """Whether ``node`` is a ``linear`` whose weight (a module attribute) equals one of ``keep``."""
    if node.target != torch.ops.aten.linear.default or len(node.args) < 2:
        return False
    weight = node.args[1]
    if not isinstance(weight, torch.fx.Node) or weight.op != "get_attr":
        return False
    value = cast(torch.Tensor, functools.reduce(getattr, str(weight.target).split("."), graph_module))
    return any(k.shape == value.shape and torch.equal(k, value) for k in keep)
