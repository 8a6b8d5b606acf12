"""int8 dynamic per-channel quantization of an ONNX graph with ONNX Runtime, reaching shared weights.

The torch exporter can store one shared ALBERT weight several times (constant-folded transposes),
or reach it through Identity nodes; ONNX Runtime's quantizer then leaves most MatMuls in fp32 or
quantizes copies. ``dedupe_initializers`` fixes the graph first: identical initializers become one,
Identity-of-initializer nodes are bypassed, and every MatMul sees the weight as a constant input.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .schemes import INT8_DYNAMIC_PER_CHANNEL, Scheme


@dataclass(frozen=True)
class OnnxQuantStats:
    """What quantization reached: MatMul/Gemm nodes with a constant weight, and how many became int8."""

    weight_matmuls: int
    quantized_matmuls: int
    activation_matmuls: int  # attention's Q.K^T and P.V, which stay fp32 by design
    deduplicated_initializers: int


def dedupe_initializers(model) -> int:
    """Merge identical initializers and bypass Identity nodes over initializers, in place.

    Returns:
        How many initializer copies and Identity nodes were removed.
    """
    from onnx import numpy_helper

    graph = model.graph
    graph_outputs = {o.name for o in graph.output}
    seen: dict[tuple, str] = {}
    rename: dict[str, str] = {}
    keep = []
    for init in graph.initializer:
        arr = numpy_helper.to_array(init)
        key = (init.data_type, tuple(init.dims), hashlib.sha256(arr.tobytes()).hexdigest())
        if key in seen:
            rename[init.name] = seen[key]
        else:
            seen[key] = init.name
            keep.append(init)
    constants = {i.name for i in keep}
    nodes = []
    for node in graph.node:
        src = rename.get(node.input[0], node.input[0]) if node.input else None
        if node.op_type == "Identity" and src in constants and node.output[0] not in graph_outputs:
            rename[node.output[0]] = src
            continue
        nodes.append(node)
    for node in nodes:
        for i, name in enumerate(node.input):
            while name in rename:
                name = rename[name]
            node.input[i] = name
    for out in graph.output:
        if out.name in rename:  # never rename a graph output
            raise ValueError(f"graph output {out.name} is an initializer alias")
    removed = len(graph.initializer) - len(keep) + (len(graph.node) - len(nodes))
    del graph.initializer[:]
    graph.initializer.extend(keep)
    del graph.node[:]
    graph.node.extend(nodes)
    return removed


def count_matmuls(model) -> tuple[int, int]:
    """(MatMul/Gemm with a constant second input, MatMul/Gemm on two activations)."""
    constants = {i.name for i in model.graph.initializer}
    weight = act = 0
    for node in model.graph.node:
        if node.op_type in ("MatMul", "Gemm"):
            if node.input[1] in constants:
                weight += 1
            else:
                act += 1
    return weight, act


def quantize_file(src: Path, dst: Path, scheme: Scheme = INT8_DYNAMIC_PER_CHANNEL) -> OnnxQuantStats:
    """Quantize ``src`` (fp32 ONNX) into ``dst`` with ONNX Runtime dynamic quantization.

    Args:
        src: fp32 model; it is de-duplicated first (written to ``dst`` as an intermediate).
        dst: where the int8 model is written (no external data).
        scheme: only ``INT8_DYNAMIC_PER_CHANNEL`` is implemented.
    """
    if scheme != INT8_DYNAMIC_PER_CHANNEL:
        raise ValueError(f"ONNX side implements {INT8_DYNAMIC_PER_CHANNEL.name} only, not {scheme.name}")
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(src))
    removed = dedupe_initializers(model)
    weight_mm, act_mm = count_matmuls(model)
    onnx.save(model, str(dst))
    # ORT's own option names; translated from the scheme in this one place.
    extra = {"WeightSymmetric": scheme.weight_symmetric, "ActivationSymmetric": False,
             "EnableSubgraph": False, "MatMulConstBOnly": True}
    quantize_dynamic(str(dst), str(dst), weight_type=QuantType.QInt8, per_channel=scheme.per_channel,
                     op_types_to_quantize=["MatMul", "Gemm"], extra_options=extra)
    qmodel = onnx.load(str(dst))
    quantized = Counter(n.op_type for n in qmodel.graph.node)["MatMulInteger"]
    return OnnxQuantStats(weight_matmuls=weight_mm, quantized_matmuls=quantized,
                          activation_matmuls=act_mm, deduplicated_initializers=removed)
