"""The NPU file's word table at 8 bits with one scale per row. The HTP's Gather takes one scale per tensor, which
a trained table spends on its few largest rows: all-MiniLM-L6-v2's table is 30.0 dB at one scale, 43.4 dB at one
per row. So the float model's table is divided by each row's largest magnitude before it is quantized (every row
then spans [-1, 1] and one scale fits them all), and the Gather's output multiplied back by its rows' scales, read
by a second Gather from a [vocab, 1] vector stored at 16 bits: vocab x 2 bytes (61 KB at 30k words)."""

from __future__ import annotations

from typing import Any

import numpy as np

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
