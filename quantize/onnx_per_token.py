"""int8 MatMuls for ONNX Runtime whose activations get one scale per token, as XNNPACK's dynamic int8 does.

ONNX Runtime's own dynamic quantization (``DynamicQuantizeLinear``) gives a whole activation tensor one scale. A
trained encoder's activations carry outliers in a few tokens ([CLS], [SEP], punctuation): one scale then spends
its 8 bits on them and every other token loses its resolution (all-MiniLM-L6-v2: 18.9 dB, a text's cosine to fp32
down to 0.98). Here every row (token) of a MatMul's input gets its own asymmetric uint8 range, in standard
operators plus ONNX Runtime's ``MatMulIntegerToFloat``:

    x2 = Reshape(x, [-1, K]);  lo, hi = min(ReduceMin(x2), 0), max(ReduceMax(x2), 0)     per row
    s = (hi - lo) / 255;  z = round(-lo / s);  q = QuantizeLinear(x2, s, z, axis=0)       uint8 per row
    y = s * MatMulIntegerToFloat(q, Wq, 1, w_scale) - (s * z) * c                          c = colsum(Wq) * w_scale

``Wq`` is the weight's symmetric int8 codes per output column (what ``quantize_dynamic`` stored before), and the
zero point's share ``z * colsum(Wq)`` is subtracted in float (``c`` is computed in the graph from the stored codes,
which ONNX Runtime folds at load) (ONNX Runtime's integer MatMuls take one zero point
for the whole input, not one per row). Inputs that several MatMuls read (query, key and value read one
LayerNorm's output) are quantized once. The arithmetic is exact up to the int8 rounding of ``q`` and ``Wq``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np

QUANTIZED_SUFFIX = "_quantized"  # the weight's int8 codes, as ONNX Runtime's quantizer names them
SCALE_SUFFIX = "_scale"  # the weight's per-column scales
ZERO_POINT_SUFFIX = "_zero_point"  # the weight's zero point: 0 (symmetric)
COLUMN_SUFFIX = "_column_sums"  # colsum(codes) * scale: the zero point's share of each output
MS_DOMAIN = "com.microsoft"
_EPS = 1e-12  # an all-zero row gets this range (its codes are all the zero point)


def weight_codes(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 codes and per-column scales of a ``[K, N]`` MatMul weight (a zero column gets scale 1)."""
    scale = np.abs(weight).max(axis=0) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    codes = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
    return codes, scale


def quantize_per_token(
    model, exclude: Collection[str] = (), codes: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None
) -> int:
    """Make every MatMul on a constant 2-D fp32 weight an int8 MatMul with per-token activation scales, in place.

    Args:
        model: an ONNX ModelProto; subgraphs (ALBERT's Loop body) included. A weight the body reads from the main
            graph gets its int8 form in the main graph, so it is still stored (and packed) once.
        exclude: names of MatMul nodes left in fp32 (a repair's mixed precision).
        codes: weight initializer name -> (int8 codes ``[K, N]``, scales ``[N]``) to use instead of rounding the
            weight (a tied decoder takes its word table's own codes).

    Returns:
        How many MatMul nodes were rewritten.
    """
    from onnx import TensorProto, helper

    from .onnx_graph import drop_unread_initializers, graphs, unique_namer

    codes = dict(codes or {})
    main = model.graph
    stored: dict[str, tuple] = {}  # initializer name -> (the graph that stores it, the tensor)
    for graph, _ in graphs(main):
        for init in graph.initializer:
            stored.setdefault(init.name, (graph, init))
    taken = set(stored) | {o for graph, _ in graphs(main) for n in graph.node for o in (*n.output, n.name)}
    fresh = unique_namer(taken)
    constants = _constants(main, fresh)
    done: dict[str, tuple[str, str, str]] = {}  # weight -> its (codes, scales, zero point) initializers
    rewritten = 0
    # a subgraph before the graph that holds it: rewriting a graph's node list copies its nodes, Loop bodies included
    for graph, readable in reversed(list(graphs(main))):
        nodes, rows = [], {}  # rows: input name -> (codes, scale [M,1], scale*zero point [M,1], leading shape)
        sums: dict[str, str] = {}  # weight -> its column sums in this graph, computed from constants
        prelude: list = []
        before = rewritten
        for node in graph.node:
            weight = node.input[1] if node.op_type == "MatMul" and len(node.input) == 2 else ""
            home, tensor = stored.get(weight, (None, None)) if weight in readable else (None, None)
            if tensor is None or tensor.data_type != TensorProto.FLOAT or len(tensor.dims) != 2 or node.name in exclude:
                nodes.append(node)
                continue
            if weight not in done:
                done[weight] = _store_weight(home, tensor, codes.get(weight), fresh)
            if weight not in sums:
                sums[weight] = fresh(tensor.name + COLUMN_SUFFIX)
                prelude += _column_sums(*done[weight][:2], sums[weight], constants, fresh)
            if node.input[0] not in rows:
                quantize, rows[node.input[0]] = _quantize_rows(
                    node.input[0], int(tensor.dims[0]), constants, fresh, fresh(f"per_token/rows{rewritten}")
                )
                nodes += quantize
            prefix = fresh(f"per_token/mm{rewritten}")  # short: every rewrite adds its nodes' names to the graph
            weight_parts = (*done[weight], sums[weight])
            nodes += _multiply(node, rows[node.input[0]], weight_parts, int(tensor.dims[1]), constants, fresh, prefix)
            rewritten += 1
        if rewritten != before:
            del graph.node[:]
            graph.node.extend(prelude + nodes)
    if rewritten and not any(o.domain == MS_DOMAIN for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    drop_unread_initializers(model)  # the fp32 weights now quantized (or, with nothing rewritten, the constants)
    return rewritten


def _constants(graph, fresh) -> dict[str, str]:
    """The scalars and shapes every rewritten MatMul reads, as main-graph initializers (subgraphs read them from
    the outer scope); role -> initializer name."""
    from onnx import numpy_helper

    values: dict[str, np.ndarray] = {
        "rows": np.array([-1], np.int64),
        "axis0": np.array([0], np.int64),
        "axis1": np.array([1], np.int64),
        "zero": np.array(0.0, np.float32),
        "eps": np.array(_EPS, np.float32),
        "levels": np.array(255.0, np.float32),
        "one": np.array(1.0, np.float32),
        "zero_u8": np.array(0, np.uint8),
    }
    names = {}
    for role, value in values.items():
        names[role] = fresh(f"per_token/{role}")
        graph.initializer.append(numpy_helper.from_array(value, names[role]))
    return names


def _store_weight(graph, tensor, given: tuple[np.ndarray, np.ndarray] | None, fresh) -> tuple[str, str, str]:
    """Add the int8 codes, per-column scales and zero point of ``tensor`` (a ``[K, N]`` fp32 weight) to ``graph``."""
    from onnx import TensorProto, helper, numpy_helper

    # a tied decoder's codes are given: its fp32 weight (the table's size) is not read at all
    codes, scale = given if given is not None else weight_codes(numpy_helper.to_array(tensor).astype(np.float32))
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


def _column_sums(codes: str, scale: str, out: str, c: dict[str, str], fresh) -> list:
    """Nodes computing ``colsum(codes) * scale`` as ``out`` [1, N] from the stored constants alone: ONNX Runtime
    folds them when it loads the model, so the file stores nothing more (a stored vector of its own would take a
    4 KiB page of the data file per weight). The sums of int8 codes are exact in float32 below 2^24."""
    from onnx import TensorProto, helper

    as_float, summed = fresh(f"{out}/float"), fresh(f"{out}/sum")
    return [
        helper.make_node("Cast", [codes], [as_float], to=TensorProto.FLOAT, name=as_float),
        helper.make_node("ReduceSum", [as_float, c["axis0"]], [summed], keepdims=1, name=summed),
        helper.make_node("Mul", [summed, scale], [out], name=fresh(f"{out}/scaled")),
    ]


def _quantize_rows(x: str, width: int, c: dict[str, str], fresh, p: str) -> tuple[list, tuple[str, str, str, str]]:
    """Nodes that quantize each row of ``x`` to uint8 with its own range; (nodes, (codes [M, K], scale [M, 1],
    scale * zero point [M, 1], x's leading dimensions))."""
    from onnx import TensorProto, helper

    n = {
        k: f"{p}/{k}"
        for k in (
            "width",
            "x2",
            "hi0",
            "lo0",
            "hi",
            "lo",
            "span",
            "span_eps",
            "s",
            "neg_lo",
            "z_real",
            "z",
            "s_flat",
            "z_flat",
            "z_u8",
            "q",
            "sz",
            "lead",
        )
    }
    nodes = [
        helper.make_node("Constant", [], [n["width"]], value_ints=[-1, width], name=fresh(f"{p}/width")),
        helper.make_node("Reshape", [x, n["width"]], [n["x2"]], name=fresh(f"{p}/rows")),
        helper.make_node("ReduceMax", [n["x2"], c["axis1"]], [n["hi0"]], keepdims=1, name=fresh(f"{p}/max")),
        helper.make_node("ReduceMin", [n["x2"], c["axis1"]], [n["lo0"]], keepdims=1, name=fresh(f"{p}/min")),
        helper.make_node("Max", [n["hi0"], c["zero"]], [n["hi"]], name=fresh(f"{p}/hi")),
        helper.make_node("Min", [n["lo0"], c["zero"]], [n["lo"]], name=fresh(f"{p}/lo")),
        helper.make_node("Sub", [n["hi"], n["lo"]], [n["span"]], name=fresh(f"{p}/span")),
        helper.make_node("Max", [n["span"], c["eps"]], [n["span_eps"]], name=fresh(f"{p}/span_eps")),
        helper.make_node("Div", [n["span_eps"], c["levels"]], [n["s"]], name=fresh(f"{p}/scale")),
        helper.make_node("Neg", [n["lo"]], [n["neg_lo"]], name=fresh(f"{p}/neg_lo")),
        helper.make_node("Div", [n["neg_lo"], n["s"]], [n["z_real"]], name=fresh(f"{p}/zero_real")),
        helper.make_node("Round", [n["z_real"]], [n["z"]], name=fresh(f"{p}/zero_point")),
        helper.make_node("Reshape", [n["s"], c["rows"]], [n["s_flat"]], name=fresh(f"{p}/scale_flat")),
        helper.make_node("Reshape", [n["z"], c["rows"]], [n["z_flat"]], name=fresh(f"{p}/zero_flat")),
        helper.make_node("Cast", [n["z_flat"]], [n["z_u8"]], to=TensorProto.UINT8, name=fresh(f"{p}/zero_u8")),
        helper.make_node(
            "QuantizeLinear", [n["x2"], n["s_flat"], n["z_u8"]], [n["q"]], axis=0, name=fresh(f"{p}/quantize")
        ),
        helper.make_node("Mul", [n["s"], n["z"]], [n["sz"]], name=fresh(f"{p}/scale_zero")),
        helper.make_node("Shape", [x], [n["lead"]], end=-1, name=fresh(f"{p}/lead")),
    ]
    return nodes, (n["q"], n["s"], n["sz"], n["lead"])


def _multiply(
    node, rows: tuple[str, str, str, str], weight: tuple[str, str, str, str], width: int, c, fresh, p: str
) -> list:
    """Nodes that replace MatMul ``node`` with the int8 product of its quantized rows and ``weight``."""
    from onnx import helper

    q, s, sz, lead = rows
    codes, scale, zero, sums = weight
    n = {k: f"{p}/{k}" for k in ("width", "acc", "scaled", "offset", "flat", "shape")}
    return [
        helper.make_node(
            "MatMulIntegerToFloat",
            [q, codes, c["one"], scale, c["zero_u8"], zero],
            [n["acc"]],
            domain=MS_DOMAIN,
            name=fresh(f"{p}/int8"),
        ),
        helper.make_node("Mul", [n["acc"], s], [n["scaled"]], name=fresh(f"{p}/row_scale")),
        helper.make_node("Mul", [sz, sums], [n["offset"]], name=fresh(f"{p}/zero_share")),
        helper.make_node("Sub", [n["scaled"], n["offset"]], [n["flat"]], name=fresh(f"{p}/zero_point")),
        helper.make_node("Constant", [], [n["width"]], value_ints=[width], name=fresh(f"{p}/out_width")),
        helper.make_node("Concat", [lead, n["width"]], [n["shape"]], axis=0, name=fresh(f"{p}/out_shape")),
        helper.make_node("Reshape", [n["flat"], n["shape"]], list(node.output), name=node.name or fresh(p)),
    ]
