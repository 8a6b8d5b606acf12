"""The NPU file's activation ranges: calibrated once by ONNX Runtime (MinMax over the calibration texts), then
widened by a headroom before the model is quantized with them, so that a text whose activations exceed what the
calibration texts showed is not clipped. Measured on a tiny classifier: one text's logit 1.7x the calibrated maximum
was cut to it (13.6 dB against fp32; every tensor inside the model at 27 dB or more)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np


# each calibrated range is multiplied by this (about zero) at 16-bit activations: one bit of 16 (6 dB of a tensor's
# rounding error, measured 84-107 dB before) buys room for twice the calibrated extremes; 8-bit activations have no
# bit to spare (their rounding error is what limits w8a8), so their ranges stay as calibrated
HEADROOM = {16: 2.0, 8: 1.0}
# the ranges repair's factor for the activations the diagnosis found clipped: twice the default
REPAIRED = {bits: 2 * factor for bits, factor in HEADROOM.items()}


def widened(lowest: np.ndarray, highest: np.ndarray, factor: float) -> tuple[np.ndarray, np.ndarray]:
    """``[lowest, highest]`` scaled by ``factor`` about zero (an end on zero's other side stays: the quantizer's range
    holds zero anyway). The masked attention scores' range doubles too: at 16 bits a step of 0.003 beside the mask's
    -100 still resolves real scores."""
    low = np.where(lowest < 0, lowest * factor, lowest).astype(lowest.dtype)
    return low, np.where(highest > 0, highest * factor, highest).astype(highest.dtype)


# ops whose output the HTP takes only at its input's scale: a range widened on one side is widened on the other
_SAME_SCALE = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Expand", "Identity", "Slice", "Gather"}


def tied(model: Any, names: Iterable[str]) -> set[str]:
    """``names`` with every activation joined to one of them through an op that keeps its input's scale; a group
    that reaches a weight, a model input or a Cast's output (whose scale the range cache does not set) is left out."""
    links: dict[str, set[str]] = {}
    for node in model.graph.node:
        if node.op_type in _SAME_SCALE and node.input and node.output:
            a, b = node.input[0], node.output[0]
            links.setdefault(a, set()).add(b)
            links.setdefault(b, set()).add(a)
    fixed = {t.name for t in model.graph.initializer} | {i.name for i in model.graph.input}
    fixed |= {o for n in model.graph.node if n.op_type == "Cast" for o in n.output}
    found: set[str] = set()
    for name in names:
        group, todo = {name}, [name]
        while todo:
            for other in links.get(todo.pop(), ()):
                if other not in group:
                    group.add(other)
                    todo.append(other)
        if not group & fixed:
            found |= group
    return found


def _widen_cache(cache: Path, factor: float, factors: dict[str, float]) -> None:
    """Rewrite the calibration cache with every range widened by ``factor`` (``factors``' own where it names the
    tensor)."""
    from onnxruntime.quantization.calibrate import TensorData, TensorsData, load_tensors_data, save_tensors_data

    ranges = load_tensors_data(cache)
    data: dict[str, Any] = {}
    for name, tensor in ranges.data.items():
        low, high = widened(np.asarray(tensor.lowest), np.asarray(tensor.highest), factors.get(name, factor))
        data[name] = TensorData(lowest=low, highest=high)
    save_tensors_data(TensorsData(ranges.calibration_method, data), cache)


def quantize_with_headroom(source: Path, dest: Path, config: Any, factor: float, factors: dict[str, float]) -> None:
    """Quantize ``source`` to ``dest`` as ``config`` (a StaticQuantConfig) says, its calibrated activation ranges
    widened by ``factor`` (by ``factors``' own for the tensors it names): one calibration pass, then (when widened)
    a second quantization from the cached ranges."""
    from onnxruntime.quantization import quantize_static

    cache = dest.with_name(dest.name + ".ranges.tmp")

    def run(reader: Any) -> None:
        quantize_static(
            str(source),
            str(dest),
            reader,
            calibrate_method=config.calibrate_method,
            quant_format=config.quant_format,
            activation_type=config.activation_type,
            weight_type=config.weight_type,
            op_types_to_quantize=config.op_types_to_quantize,
            nodes_to_quantize=config.nodes_to_quantize,
            nodes_to_exclude=config.nodes_to_exclude,
            per_channel=config.per_channel,
            reduce_range=config.reduce_range,
            use_external_data_format=config.use_external_data_format,
            calibration_providers=config.calibration_providers,
            extra_options=config.extra_options,
            calibration_cache_path=str(cache),
        )

    try:
        run(config.calibration_data_reader)
        if factor != 1.0 or factors:
            _widen_cache(cache, factor, factors)
            run(None)
    finally:
        cache.unlink(missing_ok=True)
