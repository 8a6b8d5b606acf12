"""The .onnx's int8 MatMuls with one activation scale per token (``quantize.onnx_per_token``), in ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from quantize.onnx_per_token import quantize_per_token, weight_codes  # noqa: E402

K, N = 48, 24


def _model(weights: dict[str, np.ndarray], readers: list[tuple[str, str]]):
    """A graph of MatMuls (node name, weight name) all reading the input ``x`` [batch, seq, K]."""
    nodes = [helper.make_node("MatMul", ["x", w], [name], name=name) for name, w in readers]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", K])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name, _ in readers],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _run(model, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def _emulated(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The scheme in numpy: each row's asymmetric uint8 codes (range includes 0) times the weight's int8 codes."""
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    lo, hi = np.minimum(rows.min(axis=1, keepdims=True), 0), np.maximum(rows.max(axis=1, keepdims=True), 0)
    scale = np.maximum(hi - lo, 1e-12) / 255
    zero = np.round(-lo / scale)
    q = np.clip(np.rint(rows / scale) + zero, 0, 255)
    codes, wscale = weight_codes(w)
    y = ((q - zero) * scale) @ (codes.astype(np.float64) * wscale)
    return y.reshape(*x.shape[:-1], -1)


def test_each_token_gets_its_own_scale():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((K, N)).astype(np.float32)
    x = rng.standard_normal((2, 5, K)).astype(np.float32)
    x[0, 0] *= 100  # an outlier token
    model = _model({"w": w}, [("y", "w")])
    assert quantize_per_token(model) == 1
    (y,) = _run(model, x)
    assert y.shape == (2, 5, N)
    want = _emulated(x, w)
    assert np.abs(y - want).max() <= 1e-4 * np.abs(want).max()
    ops = {n.op_type for n in model.graph.node}
    assert "MatMul" not in ops and {"QuantizeLinear", "MatMulIntegerToFloat"} <= ops


def test_an_outlier_token_costs_the_other_tokens_nothing_unlike_one_scale_per_tensor(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(1)
    w = rng.standard_normal((K, N)).astype(np.float32)
    x = rng.standard_normal((1, 16, K)).astype(np.float32)
    x[0, 0] *= 200  # [CLS]-like: two orders of magnitude above the rest
    exact = x @ w
    per_tensor = tmp_path / "tensor.onnx"
    onnx.save(_model({"w": w}, [("y", "w")]), str(tmp_path / "fp32.onnx"))
    quantize_dynamic(str(tmp_path / "fp32.onnx"), str(per_tensor), weight_type=QuantType.QInt8, per_channel=True)
    (tensor_y,) = _run(onnx.load(str(per_tensor)), x)
    model = _model({"w": w}, [("y", "w")])
    quantize_per_token(model)
    (token_y,) = _run(model, x)

    def rel(y):  # the error of the ordinary tokens, relative to their own outputs
        return np.abs(y[0, 1:] - exact[0, 1:]).max() / np.abs(exact[0, 1:]).max()

    assert rel(token_y) < 0.03
    assert rel(tensor_y) > 5 * rel(token_y)


def test_readers_of_one_input_share_its_quantization_and_an_excluded_matmul_stays_fp32():
    rng = np.random.default_rng(2)
    weights = {name: rng.standard_normal((K, N)).astype(np.float32) for name in ("wq", "wk", "wv", "wf")}
    readers = [("q", "wq"), ("k", "wk"), ("v", "wv"), ("kept", "wf")]
    model = _model(weights, readers)
    x = rng.standard_normal((1, 7, K)).astype(np.float32)
    assert quantize_per_token(model, exclude={"kept"}) == 3
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") == 1 and ops.count("MatMulIntegerToFloat") == 3
    assert [n.input[1] for n in model.graph.node if n.op_type == "MatMul"] == ["wf"]
    outs = _run(model, x)
    np.testing.assert_allclose(outs[3], x @ weights["wf"], rtol=1e-5, atol=1e-5)  # fp32, untouched
    for (name, w), y in zip(readers[:3], outs):
        want = _emulated(x, weights[w])
        assert np.abs(y - want).max() <= 1e-4 * np.abs(want).max(), name


def test_given_codes_are_stored_as_they_are():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((K, N)).astype(np.float32)
    codes = rng.integers(-127, 128, (K, N)).astype(np.int8)
    scale = rng.uniform(0.01, 0.02, N).astype(np.float32)
    model = _model({"w": w}, [("y", "w")])
    quantize_per_token(model, codes={"w": (codes, scale)})
    stored = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert np.array_equal(stored["w_quantized"], codes) and np.array_equal(stored["w_scale"], scale)
    assert "w" not in stored  # the fp32 weight is gone
