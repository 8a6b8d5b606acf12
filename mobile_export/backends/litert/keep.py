"""A repair's fp32 Linears in the .tflite: litert-quantizer chooses per op by a regex over the op's scope (its
output tensor's name, which litert-torch builds from fused module paths, several modules per op); so the matmuls
whose weights are the kept Linears' (found by value, a LayerNorm-scaled copy included) get an output name of their
own, which one ``no_quantize`` entry of the recipe matches."""

from __future__ import annotations

from typing import Any

import numpy as np

from .unfold import _array, _builtin, column_factors

KEPT_SCOPE = "mobile_export_keep_fp32"  # the prefix of a kept matmul's output name
KEEP_RECIPE = {"regex": f"^{KEPT_SCOPE}/", "operation": "*", "algorithm_key": "no_quantize", "op_config": {}}
PER_CHANNEL_SCOPE = "mobile_export_per_channel"  # 4-bit weights whose width the block does not divide


def mark_per_channel(model: Any, block: int) -> int:
    """Rename the output of every op whose constant weight's last dimension ``block`` does not divide (ai-edge-
    quantizer refuses the whole model otherwise), in place, so that a recipe entry gives those one scale per row;
    returns how many."""
    from ai_edge_litert import schema_py_generated as schema

    ops = schema.BuiltinOperator
    slots = {ops.FULLY_CONNECTED: 1, ops.BATCH_MATMUL: 1, ops.EMBEDDING_LOOKUP: 1, ops.GATHER: 0}
    graph = model.subgraphs[0]
    marked = 0
    for op in graph.operators:
        slot = slots.get(_builtin(model, op))
        if slot is None or slot >= len(op.inputs) or op.inputs[slot] < 0 or not op.outputs:
            continue
        weight = graph.tensors[op.inputs[slot]]
        if model.buffers[weight.buffer].data is None or not len(weight.shape) or weight.shape[-1] % block == 0:
            continue
        graph.tensors[op.outputs[0]].name = f"{PER_CHANNEL_SCOPE}/{marked}"
        marked += 1
    return marked


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
