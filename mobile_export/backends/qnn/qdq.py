"""The float values a QDQ model's constants stand for."""

from __future__ import annotations

from typing import Any

import numpy as np


def dequantized(inits: dict[str, Any], node: Any) -> np.ndarray:
    """The float values a DequantizeLinear of initializers gives (per tensor, or per channel along its axis)."""
    from onnx import numpy_helper

    q, scale, zero = (numpy_helper.to_array(inits[n]) for n in node.input[:3])
    axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
    if np.ndim(scale) == 1:
        shape = [1] * q.ndim
        shape[axis] = -1
        scale, zero = scale.reshape(shape), zero.reshape(shape)
    return (q.astype(np.float32) - zero.astype(np.float32)) * scale
