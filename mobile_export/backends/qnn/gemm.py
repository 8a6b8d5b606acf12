"""A quantized Gemm split back into MatMul and Add. QNN's preprocessing fuses each Linear's MatMul and bias Add into
a Gemm; a masked-LM decoder that reads the word table's shared codes computes wrong on the HTP as a Gemm (-2.1 dB
on a tiny RoBERTa; right on the CPU provider) and right as a MatMul and an Add (measured: the same outputs as the
Gemm with its own matrix, 39.96 dB, and 39.99 dB once it reads the shared codes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .qdq import dequantized


def _attr(node: Any, name: str, default: float) -> float:
    return next((a.f if a.type == 1 else a.i for a in node.attribute if a.name == name), default)


def unfused(model: Any, gemm: Any) -> Any | None:
    """Replace ``gemm`` (a node of ``model``: ``Y = A @ B + C`` over dequantized inputs, its output quantized) with a
    MatMul, a quantize-dequantize pair at the product's range (the output's range widened by the bias's, at the
    output's precision) and an Add of the bias requantized per tensor at that precision; the MatMul, or None (the
    graph unchanged) for a Gemm of another form (transposed, scaled, no bias, an output not quantized)."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    made = {o: n for n in graph.node for o in n.output}
    readers = [n for n in graph.node if gemm.output[0] in n.input]
    if (
        len(gemm.input) != 3
        or any(_attr(gemm, a, 0) for a in ("transA", "transB"))
        or any(_attr(gemm, a, 1.0) != 1.0 for a in ("alpha", "beta"))
        or len(readers) != 1
        or readers[0].op_type != "QuantizeLinear"
        or any(n not in inits for n in readers[0].input[1:3])
    ):
        return None
    bias_dq = made.get(gemm.input[2])
    if bias_dq is None or bias_dq.op_type != "DequantizeLinear" or any(n not in inits for n in bias_dq.input[:3]):
        return None
    out_q = readers[0]
    scale = float(numpy_helper.to_array(inits[out_q.input[1]]))
    zero = numpy_helper.to_array(inits[out_q.input[2]])
    top = float(np.iinfo(zero.dtype).max)
    low = float(np.iinfo(zero.dtype).min)
    bias = dequantized(inits, bias_dq).reshape(-1)
    # the product is the output less the bias: its range is the output's, widened by the bias's either way
    lo = min((low - float(zero)) * scale - float(bias.max()), 0.0)
    hi = max((top - float(zero)) * scale - float(bias.min()), 0.0)
    mm_scale = (hi - lo) / (top - low)
    mm_zero = np.array(np.clip(round(low - lo / mm_scale), low, top), zero.dtype)
    b_lo, b_hi = min(float(bias.min()), 0.0), max(float(bias.max()), 0.0)
    b_scale = max(b_hi - b_lo, 1e-12) / (top - low)
    b_zero = np.array(np.clip(round(low - b_lo / b_scale), low, top), zero.dtype)
    codes = np.clip(np.round(bias / b_scale) + b_zero, low, top).astype(zero.dtype)
    name = (gemm.name or gemm.output[0]) + "/unfused"
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(mm_scale, np.float32), name + "_product_scale"),
            numpy_helper.from_array(mm_zero, name + "_product_zero_point"),
            numpy_helper.from_array(codes, name + "_bias_quantized"),
            numpy_helper.from_array(np.array(b_scale, np.float32), name + "_bias_scale"),
            numpy_helper.from_array(b_zero, name + "_bias_zero_point"),
        ]
    )
    product = [name + "_product", name + "_product_scale", name + "_product_zero_point"]
    nodes = [
        helper.make_node("MatMul", list(gemm.input[:2]), [product[0]], name=name + "/matmul"),
        helper.make_node("QuantizeLinear", product, [name + "_product_q"], name=name + "/quantize"),
        helper.make_node(
            "DequantizeLinear", [name + "_product_q", *product[1:]], [name + "_product_dq"], name=name + "/dequantize"
        ),
        helper.make_node(
            "DequantizeLinear",
            [name + "_bias_quantized", name + "_bias_scale", name + "_bias_zero_point"],
            [name + "_bias"],
            name=name + "/bias",
        ),
        helper.make_node("Add", [name + "_product_dq", name + "_bias"], [gemm.output[0]], name=name + "/add"),
    ]
    at = list(graph.node).index(gemm)
    graph.node.remove(gemm)
    for k, node in enumerate(nodes):
        graph.node.insert(at + k, node)
    if not any(bias_dq.output[0] in n.input for n in graph.node):
        graph.node.remove(bias_dq)
        for n in bias_dq.input:
            if n in inits and not any(n in x.input for x in graph.node):
                graph.initializer.remove(inits[n])
    # the MatMul as the graph holds it (a repeated field stores a copy; the bias's removal moved it)
    return next(n for n in graph.node if n.name == name + "/matmul")
