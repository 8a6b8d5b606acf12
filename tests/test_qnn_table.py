"""The NPU file's word table at 8 bits with a scale per row (``backends.qnn.table``): the rewritten float model is
the same function, and one 8-bit scale over the normalized rows keeps a table with a few large rows."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from mobile_export.backends.qnn.table import SCALE_SUFFIX, row_scaled


def _lookup(table: np.ndarray) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["embedding"], name="lookup")],
        "lookup",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, None])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [1, None, table.shape[1]])],
        [numpy_helper.from_array(table, "table")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _run(model: onnx.ModelProto, ids: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"input_ids": ids})[0]


def _u8(x: np.ndarray) -> np.ndarray:
    """One asymmetric 8-bit scale over the whole tensor, as QNN's quantizer gives the Gather's data."""
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = (hi - lo) / 255
    zero = np.round(-lo / scale)
    return ((np.clip(np.round(x / scale) + zero, 0, 255) - zero) * scale).astype(np.float32)


def _sqnr(x: np.ndarray, y: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(x.astype(np.float64) ** 2) / np.sum((x.astype(np.float64) - y) ** 2)))


def test_row_scaled_table_is_the_same_lookup_and_keeps_small_rows_at_8_bits():
    rng = np.random.default_rng(0)
    table = (rng.standard_normal((500, 32)) * 0.05).astype(np.float32)
    table[:5] *= 40  # a few rows far larger than the rest, as in a trained table
    table[7] = 0.0  # a padding row stays zero
    ids = rng.integers(0, 500, size=(1, 64))
    ids[0, :3] = [7, 0, 499]
    model = _lookup(table)
    before = _run(model, ids)
    scales = row_scaled(model, "table")
    assert scales == "table" + SCALE_SUFFIX
    np.testing.assert_allclose(_run(model, ids), before, rtol=1e-6, atol=1e-7)  # the same function in float

    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    normalized, scale = inits["table"], inits[scales]
    assert scale.shape == (500, 1) and np.abs(normalized).max() <= 1.0 and not normalized[7].any()
    one_scale = _sqnr(table, _u8(table))
    per_row = _sqnr(table, _u8(normalized) * scale)
    # both ways: a table of equal rows gains nothing, one with a few large rows gains most of its 8 bits back
    assert per_row > one_scale + 15, (one_scale, per_row)
    even = (rng.standard_normal((500, 32)) * 0.05).astype(np.float32)
    flat = _lookup(even)
    row_scaled(flat, "table")
    flat_inits = {i.name: numpy_helper.to_array(i) for i in flat.graph.initializer}
    assert abs(_sqnr(even, _u8(flat_inits["table"]) * flat_inits[scales]) - _sqnr(even, _u8(even))) < 6
