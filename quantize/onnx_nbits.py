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

from .onnx_dynamic import OnnxQuantStats, prepare_file
from .onnx_graph import count_ops, drop_unread_initializers, gemm_to_matmul, graphs, unique_namer
from .schemes import INT4_KERNELS

IDS_INPUT = "input_ids"  # the word-embedding lookup is the Gather of these ids, whatever its table is named
MAX_GROUP_MULTIPLE = 18  # 7 * 18 = 126: a 4-bit code times its group's multiple stays an int8 code


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


def int4_codes(weight, group_size: int):
    """Symmetric 4-bit codes of a [K, N] MatMul weight in groups of ``group_size`` along K (K padded with
    zeros to whole groups), with group scales that int8 represents exactly.

    Each column gets one int8 scale ``c`` (its largest group scale / 18) and each group the scale
    ``k * c`` with a whole ``k`` in 1..18 (the group's own max/7 rounded up to a multiple of ``c``). Then
    ``codes * k`` are the exact int8 codes of the 4-bit weight (|7 * 18| <= 127): widening to int8 adds
    no rounding. A group far below its column's largest gets steps no finer than ``c`` (int8's).

    Returns:
        (codes int8 in [-7, 7], shape [Kp, N]; k float32 [groups, 1, N]; column scale float32 [N]).
    """
    import numpy as np

    k, n = weight.shape
    groups = -(-k // group_size)
    padded = np.zeros((groups * group_size, n), dtype=np.float32)
    padded[:k] = weight
    blocks = padded.reshape(groups, group_size, n)
    wanted = np.abs(blocks).max(axis=1) / 7.0  # [groups, N]: each group's own 4-bit scale
    column = wanted.max(axis=0) / MAX_GROUP_MULTIPLE
    column = np.where(column > 0, column, 1.0).astype(np.float32)
    multiple = np.clip(np.ceil(wanted / column[None, :] - 1e-6), 1, MAX_GROUP_MULTIPLE).astype(np.float32)
    scale = multiple * column[None, :]
    codes = np.clip(np.round(blocks / scale[:, None, :]), -7, 7).astype(np.int8)
    return codes.reshape(groups * group_size, n), multiple.reshape(groups, 1, n), column


def widen_matmuls(model, group_size: int) -> int:
    """Store every MatMul weight in 4 bits and compute it in int8 (``--int4-kernel int8``), in place.

    A MatMul on a constant [K, N] weight becomes int8 dynamic quantization of its input, ``MatMulInteger``
    and a per-column rescale (ONNX Runtime's own int8 pattern, which it fuses into
    ``DynamicQuantizeMatMul``), reading ``w8 = Cast<int8>(Cast<float>(codes4) * multiple)`` (exact, see
    ``int4_codes``): only Cast, Reshape, Mul and Slice on initializers, which ONNX Runtime folds when the
    session loads (DequantizeLinear it would keep and run every call). The file holds 4-bit codes and one
    multiple a group; memory and speed are int8's. The widening nodes go into the main graph, so a Loop body reads
    the folded weight from the outer scope and the weight is stored once for every layer.

    Returns:
        How many MatMuls were rewritten.
    """
    import ml_dtypes
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    main = model.graph
    fresh = unique_namer(
        {i.name for g, _ in graphs(main) for i in g.initializer}
        | {o for g, _ in graphs(main) for node in g.node for o in node.output}
    )
    widening, rewritten = [], 0
    everywhere = {i.name: i for g, _ in graphs(main) for i in g.initializer}
    # Subgraphs first: rewriting a graph's node list copies its nodes, and a Loop node copied before its
    # body was rewritten would carry the old body.
    for graph, constants in reversed(list(graphs(main))):
        inits = {name: everywhere[name] for name in constants if name in everywhere}
        nodes = []
        for node in graph.node:
            weight = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
            if weight is None or len(weight.dims) != 2 or weight.data_type != TensorProto.FLOAT:
                nodes.append(node)
                continue
            w = numpy_helper.to_array(weight)
            codes, multiple, column = int4_codes(w, group_size)
            base = weight.name
            names = {
                k: fresh(f"{base}.{k}")
                for k in (
                    "codes4",
                    "multiple",
                    "col_scale",
                    "zero",
                    "grouped",
                    "rows",
                    "w8",
                    "f",
                    "g",
                    "m",
                    "flat",
                    "cut",
                    "starts",
                    "ends",
                )
            }
            q4 = numpy_helper.from_array(codes.astype(ml_dtypes.int4), names["codes4"])  # packed two a byte
            main.initializer.extend(
                [
                    q4,
                    numpy_helper.from_array(multiple, names["multiple"]),
                    numpy_helper.from_array(column, names["col_scale"]),
                    numpy_helper.from_array(np.zeros(column.shape, np.int8), names["zero"]),
                    numpy_helper.from_array(
                        np.array(multiple.shape[:1] + (group_size, w.shape[1]), np.int64), names["grouped"]
                    ),
                    numpy_helper.from_array(np.array(codes.shape, np.int64), names["rows"]),
                ]
            )
            chain = [
                helper.make_node("Cast", [names["codes4"]], [names["f"]], to=TensorProto.FLOAT),
                helper.make_node("Reshape", [names["f"], names["grouped"]], [names["g"]]),
                helper.make_node("Mul", [names["g"], names["multiple"]], [names["m"]]),
                helper.make_node("Reshape", [names["m"], names["rows"]], [names["flat"]]),
            ]
            widened = names["flat"]
            if codes.shape[0] != w.shape[0]:  # drop the padding rows
                main.initializer.extend(
                    [
                        numpy_helper.from_array(np.array([0], np.int64), names["starts"]),
                        numpy_helper.from_array(np.array([w.shape[0]], np.int64), names["ends"]),
                    ]
                )
                chain.append(helper.make_node("Slice", [widened, names["starts"], names["ends"]], [names["cut"]]))
                widened = names["cut"]
            chain.append(helper.make_node("Cast", [widened], [names["w8"]], to=TensorProto.INT8))
            widening += chain
            x, y = node.input[0], node.output[0]
            q = {k: fresh(f"{y}.{k}") for k in ("xq", "xs", "xz", "acc", "accf", "scale")}
            nodes += [
                helper.make_node("DynamicQuantizeLinear", [x], [q["xq"], q["xs"], q["xz"]]),
                helper.make_node(
                    "MatMulInteger",
                    [q["xq"], names["w8"], q["xz"], names["zero"]],
                    [q["acc"]],
                    name=f"{node.name}_int4w_int8" if node.name else "",
                ),
                helper.make_node("Cast", [q["acc"]], [q["accf"]], to=TensorProto.FLOAT),
                helper.make_node("Mul", [q["xs"], names["col_scale"]], [q["scale"]]),
                helper.make_node("Mul", [q["accf"], q["scale"]], [y]),
            ]
            rewritten += 1
        del graph.node[:]
        graph.node.extend(nodes)
    nodes = widening + list(main.node)
    del main.node[:]
    main.node.extend(nodes)
    drop_unread_initializers(model)  # the fp32 weights now widened from their 4-bit codes
    return rewritten


def quantize_file_int4(src: Path, dst: Path, group_size: int, kernel: str = "nbits") -> tuple[OnnxQuantStats, dict]:
    """Quantize ``src`` (fp32 ONNX) into ``dst``: 4-bit weights on every weight MatMul and a 4-bit
    word-embedding ``GatherBlockQuantized``, ``group_size`` values per scale.

    Args:
        kernel: ``nbits``: ``MatMulNBits`` with ``accuracy_level=4`` (4-bit weights in RAM too, int8
            compute; MLAS's 4-bit kernels, ~2.5x slower than its int8 GEMM at 128 tokens on x86, see
            BENCHMARKS.md). ``int8``: the 4-bit weights widened to int8 when the session loads, computed by
            ONNX Runtime's int8 GEMM (``widen_matmuls``: int8's speed and RAM, 4-bit's file; the widening
            rounds to one int8 scale per column, which costs accuracy where a group's values are far
            below its column's largest).

    Returns:
        (the weight-MatMul counts, facts for the report: group size, kernel, padded widths, quantized lookups).
    """
    import numpy as np
    import onnx
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    if kernel not in INT4_KERNELS:
        raise ValueError(f"int4 kernel must be one of {INT4_KERNELS}, not {kernel}")
    prepared = prepare_file(src, dst)
    model = onnx.load(str(dst))
    rewritten = gemm_to_matmul(model)
    padded = padded_widths(model, group_size)
    widened = widen_matmuls(model, group_size) if kernel == "int8" else 0
    # Only the word-embedding table is looked up in 4 bits; position and token-type tables are small
    # and every token reads them, so they stay fp32. The table is found by the ids it reads: a tied table
    # carries the decoder's name when the exporter meets the decoder first (DistilBERT's vocab_projector).
    keep = [
        node.name
        for graph, _ in graphs(model.graph)
        for node in graph.node
        if node.op_type == "Gather" and node.input[1] != IDS_INPUT
    ]
    config = DefaultWeightOnlyQuantConfig(
        block_size=group_size,
        is_symmetric=True,
        accuracy_level=4,
        quant_format=QuantFormat.QOperator,
        op_types_to_quantize=("MatMul", "Gather"),
        quant_axes=(("MatMul", 0), ("Gather", 1)),
    )
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
    quantized = widened if kernel == "int8" else count_ops(result, "MatMulNBits")
    stats = replace(prepared, quantized_matmuls=quantized)
    facts = {
        "group_size": group_size,
        "kernel": kernel,
        "padded_input_widths": padded,
        "gemm_rewritten": rewritten,
        "int4_lookups": count_ops(result, "GatherBlockQuantized"),
    }
    return stats, facts
