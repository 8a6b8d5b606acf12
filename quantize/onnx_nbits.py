"""int4 block-wise weights for ONNX Runtime: ``MatMulNBits`` for every weight MatMul, ``GatherBlockQuantized``
for the word-embedding table.

ONNX Runtime's ``MatMulNBitsQuantizer`` (round to nearest, symmetric) does the quantization;
``accuracy_level=4`` makes ``MatMulNBits`` quantize its activations to int8 at run time and compute
in int8 (the "8da4w" scheme ExecuTorch uses on XNNPACK). The graph is prepared as for int8
(``onnx_dynamic.dedupe_initializers``: each shared weight one constant, so it is quantized once) and
its ``Gemm`` nodes on a constant weight (the pooler and the classifier) become ``MatMul`` + ``Add``,
which is the only form the quantizer takes. A weight whose input width is not a multiple of the
group size (ALBERT's 312-wide models) is padded with zeros to whole groups by the quantizer; the
padding costs bytes, never accuracy.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from .onnx_dynamic import OnnxQuantStats, count_ops, graphs, prepare_file

WORD_EMBEDDINGS = "word_embeddings"


def gemm_to_matmul(model) -> int:
    """Rewrite every ``Gemm`` (alpha = beta = 1, A not transposed) whose weight is an initializer of
    its own graph as ``MatMul`` on the [in, out] weight, plus ``Add`` of the bias, in place.

    Returns:
        How many nodes were rewritten.
    """
    import numpy as np
    from onnx import helper, numpy_helper

    rewritten = 0
    for graph, _ in graphs(model.graph):
        inits = {i.name: i for i in graph.initializer}
        nodes = []
        for node in graph.node:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            if (node.op_type != "Gemm" or node.input[1] not in inits or attrs.get("transA", 0)
                    or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0):
                nodes.append(node)
                continue
            weight = numpy_helper.to_array(inits[node.input[1]])
            if attrs.get("transB", 0):
                weight = weight.T
            name = f"{node.input[1]}.in_out"
            graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(weight), name))
            bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
            product = f"{node.output[0]}.matmul" if bias else node.output[0]
            nodes.append(helper.make_node("MatMul", [node.input[0], name], [product], name=f"{node.name}.matmul"))
            if bias:
                nodes.append(helper.make_node("Add", [product, bias], [node.output[0]], name=f"{node.name}.bias"))
            rewritten += 1
        if rewritten:
            used = {n for node in nodes for n in node.input}
            used |= {n for sub, _ in graphs(model.graph) for node in sub.node for n in node.input}
            kept = [i for i in graph.initializer if i.name in used]
            del graph.initializer[:]
            graph.initializer.extend(kept)
            del graph.node[:]
            graph.node.extend(nodes)
    return rewritten


def padded_widths(model, group_size: int) -> list[int]:
    """Input widths of the weight MatMuls that are not a multiple of ``group_size`` (padded to whole groups)."""
    from onnx import numpy_helper

    widths = set()
    for graph, constants in graphs(model.graph):
        inits = {i.name: i for i in graph.initializer}
        for node in graph.node:
            if node.op_type == "MatMul" and node.input[1] in inits:
                k = int(numpy_helper.to_array(inits[node.input[1]]).shape[0])
                if k % group_size:
                    widths.add(k)
    return sorted(widths)


def quantize_file_int4(src: Path, dst: Path, group_size: int) -> tuple[OnnxQuantStats, dict]:
    """Quantize ``src`` (fp32 ONNX) into ``dst``: int4 ``MatMulNBits`` weights and a 4-bit word-embedding
    ``GatherBlockQuantized``, ``group_size`` values per scale.

    Returns:
        (the weight-MatMul counts, facts for the report: group size, padded widths, quantized lookups).
    """
    import numpy as np
    import onnx
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    prepared = prepare_file(src, dst)
    model = onnx.load(str(dst))
    rewritten = gemm_to_matmul(model)
    padded = padded_widths(model, group_size)
    # Only the word-embedding table is looked up in 4 bits; position and token-type tables are small
    # and every token reads them, so they stay fp32.
    keep = [node.name for graph, _ in graphs(model.graph) for node in graph.node
            if node.op_type == "Gather" and WORD_EMBEDDINGS not in node.input[0]]
    config = DefaultWeightOnlyQuantConfig(block_size=group_size, is_symmetric=True, accuracy_level=4,
                                          quant_format=QuantFormat.QOperator, op_types_to_quantize=("MatMul", "Gather"),
                                          quant_axes=(("MatMul", 0), ("Gather", 1)))
    logger = logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer")
    level = logger.level
    # It logs one INFO line per node it passes over, and warns that it raises the opset to 21 (the
    # first with the INT4 tensor type the 4-bit table needs), which the export records instead.
    logger.setLevel(logging.ERROR)
    try:
        quantizer = MatMulNBitsQuantizer(model, nodes_to_exclude=keep, algo_config=config)
        with np.errstate(divide="ignore", invalid="ignore"):  # an all-zero row (padding id): scale 0, codes 0
            quantizer.process()
    finally:
        logger.setLevel(level)
    quantizer.model.save_model_to_file(str(dst), use_external_data_format=False)
    result = onnx.load(str(dst))
    stats = replace(prepared, quantized_matmuls=count_ops(result, "MatMulNBits"))
    facts = {"group_size": group_size, "padded_input_widths": padded, "gemm_rewritten": rewritten,
             "int4_lookups": count_ops(result, "GatherBlockQuantized")}
    return stats, facts
