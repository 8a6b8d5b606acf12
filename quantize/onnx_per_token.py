"""int8 MatMuls for ONNX Runtime whose activations get one scale per token, as XNNPACK's dynamic int8 does.

ONNX Runtime's own dynamic quantization (``DynamicQuantizeLinear``) gives a whole activation tensor one scale. A
trained encoder's activations carry outliers in a few tokens ([CLS], [SEP], punctuation): one scale then spends
its 8 bits on them and every other token loses its resolution (all-MiniLM-L6-v2: 18.9 dB, a text's cosine to fp32
down to 0.98). Here every row (token) of a MatMul's input gets its own asymmetric uint8 range, in standard
operators plus ONNX Runtime's ``MatMulIntegerToFloat``:

    lo, hi = min(ReduceMin(x), 0), max(ReduceMax(x), 0)          per row, over the last axis
    s = (hi - lo) / 255;  z = round(-lo / s);  q = QuantizeLinear(x, s, z, axis=-1, block_size=K)
    y = s * MatMulIntegerToFloat([z .. z, q], [V; Wq], 1, w_scale)

``Wq`` is the weight's symmetric int8 codes per output column. ONNX Runtime's integer MatMuls take one zero point
for the whole input, not one per row, so the zero point's share ``z * colsum(Wq)`` rides in the integer product
itself: the input gets ``R`` more columns holding its row's ``z``, the weight ``R`` more rows ``V`` of int8 values
that add up to ``-colsum(Wq)`` (``R = ceil(max |colsum| / 127)``), so the sum over them is exact in int32 and the
output needs one multiply by the row's scale, not three passes over it. ``V`` and the stacked weight are computed
in the graph from the stored codes, which ONNX Runtime folds when it loads the model (the file stores ``Wq`` alone).
Inputs that several MatMuls read (query, key and value read one LayerNorm's output) are quantized once. The
arithmetic is exact up to the int8 rounding of ``q`` and ``Wq``. Blocked ``QuantizeLinear`` (one scale per row of an
N-D input) needs opset 21: the model's is raised to it (no operator an encoder uses changed meaning from 18 on).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

QUANTIZED_SUFFIX = "_quantized"  # the weight's int8 codes, as ONNX Runtime's quantizer names them
SCALE_SUFFIX = "_scale"  # the weight's per-column scales
ZERO_POINT_SUFFIX = "_zero_point"  # the weight's zero point: 0 (symmetric)
STACKED_SUFFIX = "_zs"  # the codes under the rows carrying each output's zero-point share
MS_DOMAIN = "com.microsoft"
OPSET = 21  # blocked QuantizeLinear: one scale per row of an N-D input
_EPS = 1e-12  # an all-zero row gets this range (its codes are all the zero point)
_LEVEL = 127  # the largest int8 value a zero-point row holds


def weight_codes(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 codes and per-column scales of a ``[K, N]`` MatMul weight (a zero column gets scale 1)."""
    scale = np.abs(weight).max(axis=0) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    codes = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
    return codes, scale


def zero_share_rows(codes: np.ndarray) -> int:
    """How many int8 rows add up to ``-colsum(codes)`` in every column (at least one)."""
    return max(1, math.ceil(int(np.abs(codes.astype(np.int64).sum(axis=0)).max()) / _LEVEL))


def stacks(graph) -> dict[str, Any]:
    """The stacked weights ``quantize_per_token`` computes in ``graph`` (it puts them all in the main graph, which
    a Loop body reads them from): each one's name -> its ``Concat`` node (input 0 the zero-point rows, input 1 the
    stored int8 codes)."""
    return {
        n.output[0]: n
        for n in graph.node
        if n.op_type == "Concat" and len(n.input) == 2 and STACKED_SUFFIX in n.output[0]
    }


def quantize_per_token(
    model, exclude: Collection[str] = (), codes: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None
) -> int:
    """Make every MatMul on a constant 2-D fp32 weight an int8 MatMul with per-token activation scales, in place.

    Args:
        model: an ONNX ModelProto; subgraphs (ALBERT's Loop body) included. Every weight gets its int8 form in the
            main graph (a body reads it from the outer scope), so it is stored (and packed) once.
        exclude: names of MatMul nodes left in fp32 (a repair's mixed precision).
        codes: weight initializer name -> (int8 codes ``[K, N]``, scales ``[N]``) to use instead of rounding the
            weight (a tied decoder takes its word table's own codes).

    Returns:
        How many MatMul nodes were rewritten.
    """
    from onnx import TensorProto, helper, numpy_helper

    from .onnx_graph import drop_unread_initializers, graphs, unique_namer

    given = dict(codes or {})
    main = model.graph
    stored: dict[str, Any] = {}  # initializer name -> the tensor (any graph's: its int8 form goes to the main one)
    for graph, _ in graphs(main):
        for init in graph.initializer:
            stored.setdefault(init.name, init)
    taken = set(stored) | {o for graph, _ in graphs(main) for n in graph.node for o in (*n.output, n.name)}
    fresh = unique_namer(taken)
    constants = _constants(main, fresh)
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # weight -> its int8 codes and scales
    done: dict[str, tuple[str, str, str]] = {}  # weight -> its (codes, scales, zero point) initializers
    rewritten = 0

    def rewritable(node, readable) -> Any:
        """The fp32 weight tensor ``node`` multiplies by when it is a MatMul to rewrite, else None."""
        weight = node.input[1] if node.op_type == "MatMul" and len(node.input) == 2 else ""
        tensor = stored.get(weight) if weight in readable else None
        if tensor is None or tensor.data_type != TensorProto.FLOAT or len(tensor.dims) != 2 or node.name in exclude:
            return None
        if weight not in arrays:
            arrays[weight] = given.get(weight) or weight_codes(numpy_helper.to_array(tensor).astype(np.float32))
        return tensor

    # every weight's int8 form and stack in the main graph (a Loop body reads them from the outer scope): folded
    # there, a stack is a main-graph initializer, which ONNX Runtime prepacks once and then releases
    stacked: dict[tuple[str, int], str] = {}  # (weight, R) -> the stacked codes
    prelude: list = []  # the nodes computing the stacks, first in the main graph (they read initializers only)
    # a subgraph before the graph that holds it: rewriting a graph's node list copies its nodes, Loop bodies included
    for graph, readable in reversed(list(graphs(main))):
        found = [(node, rewritable(node, readable)) for node in graph.node]
        widths: dict[str, int] = {}  # input -> the zero-point rows its readers need (the most any one needs)
        for node, tensor in found:
            if tensor is not None:
                need = zero_share_rows(arrays[node.input[1]][0])
                widths[node.input[0]] = max(widths.get(node.input[0], 0), need)
        if not widths:
            continue
        nodes, rows = [], {}  # rows: input name -> (its codes with the zero-point columns, its row scales)
        for node, tensor in found:
            if tensor is None:
                nodes.append(node)
                continue
            weight, x, r = node.input[1], node.input[0], widths[node.input[0]]
            if weight not in done:
                done[weight] = _store_weight(main, tensor, arrays[weight], fresh)
            if (weight, r) not in stacked:
                stacked[weight, r] = fresh(f"pt/w{len(stacked)}{STACKED_SUFFIX}")
                prelude += _stacked(done[weight][0], r, stacked[weight, r], constants, fresh)
            if x not in rows:
                quantize, rows[x] = _quantize_rows(
                    x, int(tensor.dims[0]), r, constants, fresh, fresh(f"pt/r{rewritten}")
                )
                nodes += quantize
            weight_parts = (stacked[weight, r], *done[weight][1:])
            nodes += _multiply(node, rows[x], weight_parts, constants, fresh, fresh(f"pt/m{rewritten}"))
            rewritten += 1
        del graph.node[:]
        graph.node.extend(nodes)
    if prelude:
        nodes = prelude + list(main.node)
        del main.node[:]
        main.node.extend(nodes)
    if rewritten:
        if not any(o.domain == MS_DOMAIN for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = max(o.version, OPSET)
    drop_unread_initializers(model)  # the fp32 weights now quantized (or, with nothing rewritten, the constants)
    return rewritten


def _constants(graph, fresh) -> dict[str, str]:
    """The scalars every rewritten MatMul reads, as main-graph initializers (subgraphs read them from the outer
    scope); role -> initializer name."""
    from onnx import numpy_helper

    values: dict[str, np.ndarray] = {
        "last": np.array([-1], np.int64),
        "axis0": np.array([0], np.int64),
        "zero": np.array(0.0, np.float32),
        "eps": np.array(_EPS, np.float32),
        "levels": np.array(255.0, np.float32),
        "level": np.array(float(_LEVEL), np.float32),
        "one": np.array(1.0, np.float32),
        "zero_u8": np.array(0, np.uint8),
    }
    names = {}
    for role, value in values.items():
        names[role] = fresh(f"per_token/{role}")
        graph.initializer.append(numpy_helper.from_array(value, names[role]))
    return names


def _store_weight(graph, tensor, quantized: tuple[np.ndarray, np.ndarray], fresh) -> tuple[str, str, str]:
    """Add the int8 codes, per-column scales and zero point of ``tensor`` (a ``[K, N]`` fp32 weight) to ``graph``."""
    from onnx import TensorProto, helper, numpy_helper

    codes, scale = quantized  # a tied decoder's codes are given: its fp32 weight (the table's size) is not read
    names = (
        fresh(tensor.name + QUANTIZED_SUFFIX),
        fresh(tensor.name + SCALE_SUFFIX),
        fresh(tensor.name + ZERO_POINT_SUFFIX),
    )
    flat = scale.astype(np.float32).reshape(-1)
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.ascontiguousarray(codes, dtype=np.int8), names[0]),
            # as values, not raw bytes, as ONNX Runtime's quantizer stores scales: the file keeps them inline (the
            # data file gives each raw tensor of 1 KiB or more a 4 KiB page)
            helper.make_tensor(names[1], TensorProto.FLOAT, [flat.size], flat.tolist()),
            # the weight's own zero point (0): ONNX Runtime's s8-to-u8 rewrite (session.x64quantprecision) reads
            # input 5 of the node, and 1.29 (the JVM library) aborts on a node without it
            helper.make_tensor(names[2], TensorProto.INT8, [], [0]),
        ]
    )
    return names


def _stacked(codes: str, r: int, out: str, c: dict[str, str], fresh) -> list:
    """Nodes computing ``out`` = ``[V; codes]`` (``[r + K, N]`` int8) from the stored codes alone, ``V``'s ``r`` rows
    adding up to ``-colsum(codes)`` in each column (row j takes what is left of it, at most 127). ONNX Runtime folds
    them when it loads the model. ``r`` is stored as one scalar (a graph's bytes do not depend on the weights'
    values), and sums of int8 codes are exact in float32 below 2^24."""
    from onnx import TensorProto, helper, numpy_helper

    names = ("limit", "steps", "column", "float", "sum", "share", "size", "sign", "left", "rows", "signed", "int8")
    n = {k: fresh(f"{out}/{k}") for k in names}
    limit = numpy_helper.from_array(np.array(r * _LEVEL, np.float32))
    return [
        helper.make_node("Constant", [], [n["limit"]], value=limit),
        helper.make_node("Range", [c["zero"], n["limit"], c["level"]], [n["steps"]]),  # 0, 127, ... [r]
        helper.make_node("Unsqueeze", [n["steps"], c["last"]], [n["column"]]),  # [r, 1]
        helper.make_node("Cast", [codes], [n["float"]], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", [n["float"], c["axis0"]], [n["sum"]], keepdims=1),
        helper.make_node("Neg", [n["sum"]], [n["share"]]),
        helper.make_node("Abs", [n["share"]], [n["size"]]),
        helper.make_node("Sign", [n["share"]], [n["sign"]]),
        helper.make_node("Sub", [n["size"], n["column"]], [n["left"]]),
        helper.make_node("Clip", [n["left"], c["zero"], c["level"]], [n["rows"]]),
        helper.make_node("Mul", [n["rows"], n["sign"]], [n["signed"]]),
        helper.make_node("Cast", [n["signed"]], [n["int8"]], to=TensorProto.INT8),
        helper.make_node("Concat", [n["int8"], codes], [out], axis=0),
    ]


def _quantize_rows(x: str, width: int, r: int, c: dict[str, str], fresh, p: str) -> tuple[list, tuple[str, str]]:
    """Nodes that quantize each row of ``x`` to uint8 with its own range and put ``r`` columns of its zero point
    before it; (nodes, (those codes [..., r + K], the row scales [..., 1]))."""
    from onnx import TensorProto, helper, numpy_helper

    n = {
        k: fresh(f"{p}/{k}")
        for k in ("hi0", "lo0", "hi", "lo", "span", "eps", "s", "lz", "nz", "z", "u8", "q", "r", "zr", "qa")
    }
    return [
        helper.make_node("Constant", [], [n["r"]], value=numpy_helper.from_array(np.array([r], np.int64))),
        helper.make_node("ReduceMax", [x, c["last"]], [n["hi0"]], keepdims=1),
        helper.make_node("ReduceMin", [x, c["last"]], [n["lo0"]], keepdims=1),
        helper.make_node("Max", [n["hi0"], c["zero"]], [n["hi"]]),
        helper.make_node("Min", [n["lo0"], c["zero"]], [n["lo"]]),
        helper.make_node("Sub", [n["hi"], n["lo"]], [n["span"]]),
        helper.make_node("Max", [n["span"], c["eps"]], [n["eps"]]),
        helper.make_node("Div", [n["eps"], c["levels"]], [n["s"]]),
        helper.make_node("Div", [n["lo"], n["s"]], [n["lz"]]),
        helper.make_node("Round", [n["lz"]], [n["nz"]]),
        helper.make_node("Neg", [n["nz"]], [n["z"]]),
        helper.make_node("Cast", [n["z"]], [n["u8"]], to=TensorProto.UINT8),
        helper.make_node("QuantizeLinear", [x, n["s"], n["u8"]], [n["q"]], axis=-1, block_size=width),
        helper.make_node("Expand", [n["u8"], n["r"]], [n["zr"]]),
        helper.make_node("Concat", [n["zr"], n["q"]], [n["qa"]], axis=-1),
    ], (n["qa"], n["s"])


def _multiply(node, rows: tuple[str, str], weight: tuple[str, str, str], c, fresh, p: str) -> list:
    """Nodes that replace MatMul ``node`` with the int8 product of its quantized rows and ``weight``."""
    from onnx import helper

    q, s = rows
    stacked, scale, zero = weight
    acc = fresh(f"{p}/acc")
    return [
        helper.make_node(
            "MatMulIntegerToFloat", [q, stacked, c["one"], scale, c["zero_u8"], zero], [acc], domain=MS_DOMAIN
        ),
        helper.make_node("Mul", [acc, s], list(node.output), name=node.name),
    ]
