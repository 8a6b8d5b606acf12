"""ALBERT's shared layer stored once in the .tflite: the converter folds a LayerNorm's scale into the Linear that
reads it, so where the same weights read a LayerNorm's output in one layer and another tensor in the first one
(query/key/value: the embedding projection in layer 1, the previous layer's LayerNorm in layers 2..N), it stores
a second, column-scaled copy. Here, on the float model before quantization, each such copy is found by value
(its columns the original's times one factor each), its readers pointed back at the original, and the factors
put back as one Mul on their input (a [tokens, hidden] multiply, against the matmul's [hidden, hidden] per token)."""

from __future__ import annotations

from typing import Any

import numpy as np

_MIN_BYTES = 64  # a fully-connected weight of at least 16 floats (a tiny test model's count too)
_RTOL = 1e-5  # a copy's columns equal the original's times their factor to float rounding


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
    energy = (original * original).sum(axis=0)
    factors = np.where(energy > 0, (original * copy).sum(axis=0) / np.where(energy > 0, energy, 1), 0.0)
    scale = float(np.abs(copy).max()) or 1.0
    if np.abs(copy - original * factors).max() > _RTOL * scale or np.allclose(factors, 1.0, rtol=0, atol=1e-7):
        return None
    return factors.astype(np.float32)


def unfold(model: Any) -> dict[str, int]:
    """Point the readers of every column-scaled copy of a fully-connected weight at the original and multiply their
    input by the factors instead, in place; returns the copies removed, their bytes and the Muls added."""
    from ai_edge_litert import schema_py_generated as schema

    graph = model.subgraphs[0]
    fc = schema.BuiltinOperator.FULLY_CONNECTED
    readers: dict[int, list[int]] = {}  # weight buffer -> operator indices, in graph order
    tensor_of: dict[int, int] = {}  # weight buffer -> the first reader's weight tensor
    for k, op in enumerate(graph.operators):
        if _builtin(model, op) == fc and len(op.inputs) > 1 and op.inputs[1] >= 0:
            buffer = graph.tensors[op.inputs[1]].buffer
            if _array(model, graph.tensors[op.inputs[1]]) is not None:
                readers.setdefault(buffer, []).append(k)
                tensor_of.setdefault(buffer, op.inputs[1])
    # the original of each group: its first reader comes first (layer 1 reads the weights as the model has them)
    order = sorted(readers, key=lambda b: readers[b][0])
    derived: dict[int, tuple[int, np.ndarray]] = {}
    for i, b in enumerate(order):
        if b in derived:
            continue
        base = _array(model, graph.tensors[tensor_of[b]])
        for c in order[i + 1 :]:
            if c in derived or graph.tensors[tensor_of[c]].shape != graph.tensors[tensor_of[b]].shape:
                continue
            factors = column_factors(base, _array(model, graph.tensors[tensor_of[c]]))  # type: ignore[arg-type]
            if factors is not None:
                derived[c] = (b, factors)
    if not derived:
        return {"copies": 0, "bytes": 0, "muls": 0}
    mul_code = _opcode(model, schema.BuiltinOperator.MUL)
    # input tensor -> (factors, the Mul's output): query, key and value of a layer read one LayerNorm, one Mul
    scaled: dict[int, list[tuple[np.ndarray, int]]] = {}
    inserts: list[tuple[int, Any]] = []
    for copy, (original, factors) in derived.items():
        for k in readers[copy]:
            op = graph.operators[k]
            found = [out for f, out in scaled.get(op.inputs[0], []) if np.allclose(f, factors, rtol=_RTOL, atol=0)]
            if not found:
                out = _scaled_input(model, graph, op.inputs[0], factors, len(inserts))
                scaled.setdefault(op.inputs[0], []).append((factors, out))
                inserts.append((k, _mul(schema, mul_code, op.inputs[0], out - 1, out)))
                found = [out]
            op.inputs = [found[0], tensor_of[original], *op.inputs[2:]]
    saved = sum(len(model.buffers[c].data) for c in derived)
    for c in derived:
        model.buffers[c].data = None
    for k, mul in sorted(inserts, key=lambda x: -x[0]):  # each Mul right before its first reader
        graph.operators.insert(k, mul)
    return {"copies": len(derived), "bytes": saved, "muls": len(inserts)}


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
