"""A quantized Gemm split back into MatMul and Add (``qnn.gemm.unfused``): the same outputs on ONNX Runtime's CPU
provider to within the output's quantization step; a Gemm of another form left as it is."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from mobile_export.backends.qnn.gemm import unfused


def _qdq_gemm(trans_b: int = 0) -> onnx.ModelProto:
    """x [4, 8] -> uint16 QDQ -> Gemm(x, uint8 per-column W, int32 bias) -> uint16 QDQ -> y [4, 6]."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(8, 6)).astype(np.float32)
    b = rng.normal(size=6).astype(np.float32) * 3
    w_scale = np.abs(w).max(axis=0) / 127
    w_codes = (np.round(w / w_scale) + 128).astype(np.uint8)
    x_scale, y_scale = np.float32(8 / 65535), np.float32(60 / 65535)
    b_scale = (x_scale * w_scale).astype(np.float32)
    if trans_b:
        w_codes = w_codes.T.copy()
    inits = [
        numpy_helper.from_array(np.array(x_scale, np.float32), "xs"),
        numpy_helper.from_array(np.array(32768, np.uint16), "xz"),
        numpy_helper.from_array(w_codes, "wq"),
        numpy_helper.from_array(w_scale.astype(np.float32), "ws"),
        numpy_helper.from_array(np.full(6, 128, np.uint8), "wz"),
        numpy_helper.from_array(np.round(b / b_scale).astype(np.int32), "bq"),
        numpy_helper.from_array(b_scale, "bs"),
        numpy_helper.from_array(np.zeros(6, np.int32), "bz"),
        numpy_helper.from_array(np.array(y_scale, np.float32), "ys"),
        numpy_helper.from_array(np.array(32768, np.uint16), "yz"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0 if trans_b else 1),
        helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["bd"], axis=0),
        helper.make_node("Gemm", ["xd", "wd", "bd"], ["g"], name="decoder", transB=trans_b),
        helper.make_node("QuantizeLinear", ["g", "ys", "yz"], ["gq"]),
        helper.make_node("DequantizeLinear", ["gq", "ys", "yz"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def test_a_gemm_split_into_matmul_and_add_gives_its_outputs():
    model = _qdq_gemm()
    x = np.random.default_rng(1).uniform(-3, 3, size=(4, 8)).astype(np.float32)
    before = _run(model, x)
    matmul = unfused(model, next(n for n in model.graph.node if n.op_type == "Gemm"))
    onnx.checker.check_model(model, full_check=True)
    assert matmul is not None and matmul.op_type == "MatMul" and list(matmul.input) == ["xd", "wd"]
    ops = [n.op_type for n in model.graph.node]
    assert "Gemm" not in ops and ops.count("Add") == 1
    assert "bq" not in {t.name for t in model.graph.initializer}  # the int32 bias, requantized per tensor
    after = _run(model, x)
    step = 60 / 65535
    assert np.abs(after - before).max() <= 3 * step, np.abs(after - before).max()
    assert np.abs(before).max() > 100 * step  # outputs of some size, not zeros compared


@pytest.mark.parametrize("change", ["transB", "no-bias"])
def test_a_gemm_of_another_form_is_left_as_it_is(change):
    model = _qdq_gemm(trans_b=1 if change == "transB" else 0)
    gemm = next(n for n in model.graph.node if n.op_type == "Gemm")
    if change == "no-bias":
        del gemm.input[2]
    before = model.SerializeToString()
    assert unfused(model, gemm) is None
    assert model.SerializeToString() == before
