"""The NPU file's word table at 8 bits with one scale per row. The HTP's Gather takes one scale per tensor, which
a trained table spends on its few largest rows: all-MiniLM-L6-v2's table is 30.0 dB at one scale, 43.4 dB at one
per row. So the float model's table is divided by each row's largest magnitude before it is quantized (every row
then spans [-1, 1] and one scale fits them all), and the Gather's output multiplied back by its rows' scales, read
by a second Gather from a [vocab, 1] vector stored at 16 bits: vocab x 2 bytes (61 KB at 30k words)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .gemm import unfused
from .qdq import dequantized

SCALE_SUFFIX = ".row_scale"  # the per-row scales' initializer: the table's name and this


def row_scaled(model: Any, table: str) -> str:
    """Rewrite ``model`` (an ONNX ModelProto) so the Gather of ``table`` reads it divided by each row's largest
    magnitude and its output is multiplied back by the row's scale (a second Gather); the scales' initializer name.
    Exact in float up to rounding: the quantizer then sees rows of one range."""
    from onnx import helper, numpy_helper

    graph = model.graph
    init = next(i for i in graph.initializer if i.name == table)
    values = numpy_helper.to_array(init).astype(np.float32)
    scale = np.abs(values).max(axis=1, keepdims=True)
    scale[scale == 0] = 1.0  # an all-zero row (padding) stays zero
    init.CopyFrom(numpy_helper.from_array((values / scale).astype(np.float32), table))
    scales = table + SCALE_SUFFIX
    graph.initializer.append(numpy_helper.from_array(scale.astype(np.float32), scales))
    at, gather = next((k, n) for k, n in enumerate(graph.node) if n.op_type == "Gather" and n.input[0] == table)
    out = gather.output[0]
    gather.output[0] = out + ".normalized"
    looked_up = helper.make_node("Gather", [scales, gather.input[1]], [out + SCALE_SUFFIX], name=gather.name + "/scale")
    rescaled = helper.make_node("Mul", [gather.output[0], out + SCALE_SUFFIX], [out], name=gather.name + "/rescale")
    graph.node.insert(at + 1, looked_up)
    graph.node.insert(at + 2, rescaled)
    return scales


def tied_decoder_once(model: Any) -> int:
    """Point a masked-LM decoder whose weight is the word table's transpose (a tied table, quantized twice: the
    lookup's uint8 rows of one scale and the decoder's own matrix) at the lookup's codes: a DequantizeLinear per row
    (the table's scale times the row's scale, as the lookup multiplies them) and a Transpose before its MatMul (a
    decoder fused with its bias into a Gemm is split back first). The HTP takes it (one uint8 initializer read by
    both; BENCHMARKS "The NPU for short texts"); returns the bytes no longer stored, 0 when there is no tied
    decoder."""
    from onnx import helper, numpy_helper

    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    made = {o: n for n in graph.node for o in n.output}
    lookup = next(
        (
            n
            for n in graph.node
            if n.op_type == "Gather"
            and n.input[0].endswith("_DequantizeLinear_Output")
            and (made.get(n.input[0]) is not None)
            and made[n.input[0]].input[0] in inits
            and (made[n.input[0]].input[0].removesuffix("_quantized") + SCALE_SUFFIX + "_quantized") in inits
        ),
        None,
    )
    if lookup is None:
        return 0
    table_dq = made[lookup.input[0]]
    base = table_dq.input[0].removesuffix("_quantized")
    rows_dq = made.get(base + SCALE_SUFFIX + "_DequantizeLinear_Output")
    if rows_dq is None:
        return 0
    codes = numpy_helper.to_array(inits[table_dq.input[0]])
    scale_table = float(numpy_helper.to_array(inits[table_dq.input[1]]))
    zero_table = numpy_helper.to_array(inits[table_dq.input[2]])
    rows = dequantized(inits, rows_dq).reshape(-1)
    table = dequantized(inits, table_dq) * rows[:, None]
    for node in list(graph.node):
        if node.op_type not in ("MatMul", "Gemm"):
            continue
        weight = made.get(node.input[1])
        if weight is None or weight.op_type != "DequantizeLinear" or weight.input[0] not in inits:
            continue
        if numpy_helper.to_array(inits[weight.input[0]]).shape != codes.shape[::-1]:
            continue
        values = dequantized(inits, weight)
        if np.abs(values - table.T).max() > 0.02 * np.abs(table).max():  # another matrix of the same shape
            continue
        if node.op_type == "Gemm":
            # the decoder and its bias, fused by QNN's preprocessing (BERT's, ELECTRA's and RoBERTa's families):
            # reading the shared codes, a Gemm computes wrong on the HTP, a MatMul and an Add right (``gemm``)
            node = unfused(model, node)
            if node is None:
                return 0
        name = base + ".decoder"
        graph.initializer.extend(
            [
                numpy_helper.from_array((scale_table * rows).astype(np.float32), name + "_scale"),
                numpy_helper.from_array(np.full(rows.shape, zero_table, codes.dtype), name + "_zero_point"),
            ]
        )
        per_row = helper.make_node(
            "DequantizeLinear",
            [table_dq.input[0], name + "_scale", name + "_zero_point"],
            [name + "_rows"],
            name=name + "/dequantize",
            axis=0,
        )
        transposed = helper.make_node(
            "Transpose", [name + "_rows"], [name + "_T"], name=name + "/transpose", perm=[1, 0]
        )
        node.input[1] = name + "_T"
        at = list(graph.node).index(node)
        graph.node.insert(at, transposed)
        graph.node.insert(at, per_row)
        saved = codes.nbytes
        if not any(weight.output[0] in n.input for n in graph.node):
            graph.node.remove(weight)
            for n in weight.input:
                if not any(n in x.input for x in graph.node):
                    graph.initializer.remove(inits[n])
        return saved
    return 0
