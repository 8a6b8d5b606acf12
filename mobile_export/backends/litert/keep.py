"""A repair's fp32 Linears in the .tflite: ai-edge-quantizer chooses per op by a regex over the op's scope (its
output tensor's name, which litert-torch builds from fused module paths, several modules per op); so the matmuls
whose weights are the kept Linears' (found by value, a LayerNorm-scaled copy included) get an output name of their
own, which one ``no_quantize`` entry of the recipe matches."""

from __future__ import annotations

from typing import Any

import numpy as np

from .unfold import _array, _builtin, column_factors

KEPT_SCOPE = "mobile_export_keep_fp32"  # the prefix of a kept matmul's output name
KEEP_RECIPE = {"regex": f"^{KEPT_SCOPE}/", "operation": "*", "algorithm_key": "no_quantize", "op_config": {}}


def mark_kept(model: Any, weights: list[np.ndarray]) -> int:
    """Rename the output of every fully-connected op whose weight is one of ``weights`` (``[out, in]``, as torch's
    Linear stores them), or a column-scaled copy of one, in place; returns how many ops were marked."""
    from ai_edge_litert import schema_py_generated as schema

    graph = model.subgraphs[0]
    marked = 0
    for op in graph.operators:
        if _builtin(model, op) != schema.BuiltinOperator.FULLY_CONNECTED or len(op.inputs) < 2:
            continue
        stored = _array(model, graph.tensors[op.inputs[1]])
        if stored is None:
            continue
        for w in weights:
            if w.shape == stored.shape and (
                np.allclose(w, stored, rtol=1e-5, atol=1e-7) or column_factors(w, stored) is not None
            ):
                graph.tensors[op.outputs[0]].name = f"{KEPT_SCOPE}/{marked}"
                marked += 1
                break
    return marked
