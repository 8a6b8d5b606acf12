"""Every fully-connected op of the .tflite on the checkpoint's own weights: the converter folds a LayerNorm's scale
(and shift, into the bias) into each Linear that reads it, so the file would store ``W * gamma`` and quantize the
LayerNorm's unscaled output. That costs twice on int8: a LayerNorm's unscaled output has wider outlier channels
than its scaled one (per-row activation scales spend their range on them), and ALBERT's shared layer gets a
second, column-scaled copy where the same weights read a LayerNorm's output in layers 2..N and the embedding
projection in layer 1. Here, on the float model before quantization, each such copy is found by value (its
columns one of the checkpoint's Linear weights times one factor each), pointed back at that weight (stored once)
and the factors put back as one Mul on its input (a [tokens, hidden] multiply, against the matmul's [hidden,
hidden] per token; the readers of one input share it). The shift stays in the bias: it is a constant there."""

from __future__ import annotations

from typing import Any

import numpy as np

_MIN_BYTES = 64  # a fully-connected weight of at least 16 floats (a tiny test model's count too)
_RTOL = 1e-5  # a copy's columns equal the original's times their factor to float rounding
_PROBE_ROWS = 4  # rows a candidate pair is first compared on, before the whole matrix


def _builtin(model: Any, op: Any) -> int:
    code = model.operatorCodes[op.opcodeIndex]
    return int(max(code.builtinCode, code.deprecatedBuiltinCode))


def _array(model: Any, tensor: Any) -> np.ndarray | None:
    data = model.buffers[tensor.buffer].data
    if data is None or len(data) < _MIN_BYTES or tensor.type != 0 or len(tensor.shape) != 2:  # FLOAT32 matrices
        return None
    return np.frombuffer(np.asarray(data, np.uint8).tobytes(), np.float32).reshape(tuple(tensor.shape))


def column_factors(original: np.ndarray, copy: np.ndarray) -> np.ndarray | None:
    """The factor of each column (input channel) with ``copy == original * factors`` to float rounding, None
    when ``copy`` is not such a copy (or is ``original`` itself)."""
    if original.shape != copy.shape or not _probably_scaled(original, copy):
        return None
    energy = (original * original).sum(axis=0)
    factors = np.where(energy > 0, (original * copy).sum(axis=0) / np.where(energy > 0, energy, 1), 0.0)
    scale = float(np.abs(copy).max()) or 1.0
    if np.abs(copy - original * factors).max() > _RTOL * scale or np.allclose(factors, 1.0, rtol=0, atol=1e-7):
        return None
    return factors.astype(np.float32)


def _probably_scaled(original: np.ndarray, copy: np.ndarray) -> bool:
    """Whether the first rows of ``copy`` are those of ``original`` column-scaled: a cheap test before the whole
    matrix (every fully-connected weight is tried against every Linear of its shape)."""
    head, rows = original[:_PROBE_ROWS], copy[:_PROBE_ROWS]
    energy = (head * head).sum(axis=0)
    factors = np.where(energy > 0, (head * rows).sum(axis=0) / np.where(energy > 0, energy, 1), 0.0)
    scale = float(np.abs(rows).max()) or 1.0
    return bool(np.abs(rows - head * factors).max() <= 10 * _RTOL * scale)


def unfold(model: Any, originals: list[np.ndarray]) -> dict[str, int]:
    """Point every fully-connected op whose weight is a column-scaled copy of one of ``originals`` (the model's
    Linear weights, ``[out, in]``) at that weight, stored once, and multiply its input by the factors instead, in
    place; returns the ops rescaled, the copies dropped (a weight stored twice), their bytes and the Muls added."""
    from ai_edge_litert import schema_py_generated as schema

    graph = model.subgraphs[0]
    fc = schema.BuiltinOperator.FULLY_CONNECTED
    ops: list[tuple[int, Any, np.ndarray]] = []  # (index, op, its float weight)
    for k, op in enumerate(graph.operators):
        if _builtin(model, op) == fc and len(op.inputs) > 1 and op.inputs[1] >= 0:
            weight = _array(model, graph.tensors[op.inputs[1]])
            if weight is not None:
                ops.append((k, op, weight))
    home: dict[int, int] = {}  # original -> the weight tensor holding it as it is (the first found)
    rescaled: list[tuple[int, Any, int, np.ndarray]] = []  # (op index, op, original, factors)
    for k, op, w in ops:
        for i, original in enumerate(originals):
            if w.shape != original.shape or not _probably_scaled(original, w):  # factors of 1 pass it too
                continue
            if np.allclose(w, original, rtol=_RTOL, atol=0):
                home.setdefault(i, op.inputs[1])
                break
            factors = column_factors(original, w)
            if factors is not None:
                rescaled.append((k, op, i, factors))
                break
    if not rescaled:
        return {"rescaled": 0, "copies": 0, "bytes": 0, "muls": 0}
    mul_code = _opcode(model, schema.BuiltinOperator.MUL)
    # input tensor -> (factors, the Mul's output): query, key and value of a layer read one LayerNorm, one Mul
    scaled: dict[int, list[tuple[np.ndarray, int]]] = {}
    inserts: list[tuple[int, Any]] = []
    emptied: set[int] = set()
    for k, op, i, factors in rescaled:
        buffer = graph.tensors[op.inputs[1]].buffer
        if i not in home:  # this copy's buffer now holds the original, for every reader after it
            model.buffers[buffer].data = np.frombuffer(originals[i].astype(np.float32).tobytes(), np.uint8)
            home[i] = op.inputs[1]
        elif graph.tensors[home[i]].buffer != buffer:
            emptied.add(buffer)
        found = [out for f, out in scaled.get(op.inputs[0], []) if np.allclose(f, factors, rtol=_RTOL, atol=0)]
        if not found:
            out = _scaled_input(model, graph, op.inputs[0], factors, len(inserts))
            scaled.setdefault(op.inputs[0], []).append((factors, out))
            inserts.append((k, _mul(schema, mul_code, op.inputs[0], out - 1, out)))
            found = [out]
        op.inputs = [found[0], home[i], *op.inputs[2:]]
    saved = sum(len(model.buffers[b].data) for b in emptied)
    for b in emptied:
        model.buffers[b].data = None
    for k, mul in sorted(inserts, key=lambda x: -x[0]):  # each Mul right before its first reader
        graph.operators.insert(k, mul)
    return {"rescaled": len(rescaled), "copies": len(emptied), "bytes": saved, "muls": len(inserts)}


def _opcode(model: Any, builtin: int) -> int:
    """The index of ``builtin``'s operator code, added when the model has none."""
    from ai_edge_litert import schema_py_generated as schema

    for k, code in enumerate(model.operatorCodes):
        if max(code.builtinCode, code.deprecatedBuiltinCode) == builtin:
            return k
    code = schema.OperatorCodeT()
    code.builtinCode, code.deprecatedBuiltinCode, code.version = builtin, builtin, 1
    model.operatorCodes.append(code)
    return len(model.operatorCodes) - 1


def _scaled_input(model: Any, graph: Any, source: int, factors: np.ndarray, n: int) -> int:
    """Add the factors' constant tensor and the scaled input's tensor; returns the latter's index (the factors'
    is the one before it)."""
    from ai_edge_litert import schema_py_generated as schema

    buffer = schema.BufferT()
    buffer.data = np.frombuffer(factors.astype(np.float32).tobytes(), np.uint8)
    model.buffers.append(buffer)
    constant = schema.TensorT()
    constant.shape, constant.type, constant.buffer = [len(factors)], 0, len(model.buffers) - 1
    constant.name = f"mobile_export/unfolded_scale_{n}"
    like = graph.tensors[source]
    out = schema.TensorT()
    out.shape, out.type, out.buffer = list(like.shape), like.type, 0
    out.shapeSignature = list(like.shapeSignature) if like.shapeSignature is not None else None
    out.name = f"mobile_export/unfolded_input_{n}"
    graph.tensors.extend([constant, out])
    return len(graph.tensors) - 1


def _mul(schema: Any, code: int, x: int, factors: int, out: int) -> Any:
    op = schema.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = code, [x, factors], [out]
    op.builtinOptionsType = schema.BuiltinOptions.MulOptions
    op.builtinOptions = schema.MulOptionsT()
    return op
