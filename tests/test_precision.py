"""ONNX Runtime's int8 precision mode: chosen from the host, exact where chosen, and named in every report.

Expectations that depend on the host's kernels say so: on a host whose u8s8 kernel saturates (x86-64
without VNNI) the project's sessions differ from ONNX Runtime's default and must be closer to fp32; on
every other host both are the same exact integer GEMM. The saturating kernel itself is exercised on
every host by tests/test_x86_emulated.py (qemu's Haswell CPU), which `make test-arm64` runs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.backends.onnx.precision import _WEIGHT_INPUTS, Precision, exact_model, precision_for, saturates
from mobile_export.core.host import Host, this_host


@pytest.mark.parametrize(
    "arch,features,mode",
    [
        ("x86_64", ("avx2",), Precision.EXACT),  # AVX2 only (older EPYC, Haswell..Skylake client)
        ("x86_64", ("avx2", "avx512f", "avx512bw"), Precision.EXACT),  # AVX-512 without VNNI (Skylake-SP)
        ("x86_64", ("avx2", "avx512f", "avx512bw", "avx512_vnni"), Precision.NATIVE),
        ("x86_64", ("avx2", "avx_vnni"), Precision.NATIVE),  # Alder Lake and later client CPUs
        ("x86_64", ("avx2", "avx512f", "avx512bw", "amx_int8"), Precision.NATIVE),
        ("aarch64", ("asimddp",), Precision.NATIVE),
        ("aarch64", (), Precision.NATIVE),
    ],
)
def test_the_mode_follows_the_hosts_kernels(arch, features, mode):
    host = Host(arch=arch, cpu="test CPU", features=features)
    assert precision_for(host) is mode
    assert saturates(host) is (mode is Precision.EXACT)
    assert mode.describe(host).startswith(mode.value)


def test_host_features_come_from_the_process_cpu(monkeypatch):
    import numpy._core._multiarray_umath as umath

    from mobile_export.core import host as host_module

    probed = dict(umath.__cpu_features__)
    flags = " ".join(n for n, p in host_module.X86_FEATURES.items() if p and probed.get(p))
    same = f"model name\t: Test CPU 9000\nflags\t\t: fpu {flags} avx_vnni\n"
    other = "model name\t: Host CPU\nflags\t\t: fpu sse2\n"  # what qemu-user shows: the host's cpuinfo
    if not probed.get("AVX2"):
        pytest.skip("needs an x86-64 host with AVX2 (numpy's probe must report features to compare)")
    cpu, found = host_module._x86(same)
    assert cpu == "Test CPU 9000" and "avx_vnni" in found and "avx2" in found
    cpu, found = host_module._x86(other)
    assert "emulated" in cpu and "avx_vnni" not in found and "avx2" in found  # numpy's CPUID wins


@pytest.fixture(scope="module")
def loop_onnx(tiny_checkpoint, tmp_path_factory):
    """A tiny random ALBERT's int8 .onnx and .ort (random weights use the whole s8 range), and its checkpoint."""
    ckpt = tiny_checkpoint("text-classification")
    out = tmp_path_factory.mktemp("precision") / "o"
    result = export(ckpt, out, ExportOptions(backends=(Backend.ONNX, Backend.ORT), quant=Quant.INT8,
                                             measure_memory=False))
    result.checkpoint = ckpt
    return result


def _body(model):
    loop = next(n for n in model.graph.node if n.op_type == "Loop")
    return loop.attribute[0].g


def test_exact_model_moves_the_loop_bodys_weights_to_u8(loop_onnx):
    """The per-token form stacks each weight's codes under its zero-point rows in the graph (folded at load, so no
    option of ONNX Runtime reaches it): every such stack, the Loop body's included, becomes u8 (codes and rows
    moved by 128, the node's zero point 128), the same integers."""
    import onnx
    from onnx import numpy_helper

    from quantize.onnx_per_token import stacks

    path = loop_onnx.out / "model.onnx"
    original = onnx.load(str(path))
    exact = exact_model(path)
    assert exact is not None
    inits = {i.name: i for i in exact.graph.initializer}
    before = {i.name: i for i in original.graph.initializer}
    body_graph = _body(exact)
    body = [n for n in body_graph.node if n.op_type in _WEIGHT_INPUTS]
    assert len(body) == 6  # query, key, value, attention output, FFN, FFN output
    stacked = stacks(exact.graph)
    for node in body:
        concat = stacked[node.input[1]]  # computed in the main graph, which stores the shared layer
        assert concat in exact.graph.node
        codes, zp = inits[concat.input[1]], inits[node.input[_WEIGHT_INPUTS[node.op_type][1]]]
        assert codes.data_type == onnx.TensorProto.UINT8 and zp.data_type == onnx.TensorProto.UINT8
        rows = next(n for n in exact.graph.node if n.output[0] == concat.input[0])
        assert rows.op_type == "Cast" and rows.attribute[0].i == onnx.TensorProto.UINT8
        s8 = numpy_helper.to_array(before[concat.input[1].removesuffix("_s8_2_u8")])
        u8 = numpy_helper.to_array(codes, base_dir=str(path.parent))
        # the same integers: (w - zp) is unchanged for every element (the s8 zero point is 0)
        assert int(numpy_helper.to_array(zp)) == 128
        assert np.array_equal(u8.astype(np.int32) - 128, s8.astype(np.int32))
    assert not any(n.endswith("_s8_2_u8") for n in before)


def test_exact_model_leaves_7_bit_weights_but_not_zero_point_rows(loop_onnx, tmp_path):
    """A stored int8 weight within [-64, 64] cannot saturate and is left as it is; the per-token form's stacked
    weights are converted whatever their codes (their zero-point rows reach 127)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from mobile_export.backends.onnx.layout import externalize
    from quantize.onnx_per_token import stacks

    path = loop_onnx.out / "model.onnx"
    model = onnx.load(str(path))
    read = {n.input[1] for n in _body(model).node if n.op_type in _WEIGHT_INPUTS}
    body_weights = {c.input[1] for out, c in stacks(model.graph).items() if out in read}
    for i, init in enumerate(model.graph.initializer):
        if init.name in body_weights:  # shrink every body weight into [-64, 64]
            arr = numpy_helper.to_array(init) // 2
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr.astype(np.int8), init.name))
    small = tmp_path / "model.onnx"
    onnx.save(model, str(small))
    externalize(small, 21)
    converted = exact_model(small)
    assert converted is not None
    assert all(i.data_type == TensorProto.UINT8 for i in converted.graph.initializer if i.name.endswith("_s8_2_u8"))
    assert {n.removesuffix("_s8_2_u8") for n in (i.name for i in converted.graph.initializer)} >= body_weights

    def plain(codes: np.ndarray):  # one int8 GEMM on a stored weight, no stack
        graph = helper.make_graph(
            [helper.make_node("MatMulIntegerToFloat", ["x", "w", "a_s", "w_s", "a_z", "w_z"], ["y"],
                              domain="com.microsoft")],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
            initializer=[numpy_helper.from_array(codes, "w"), numpy_helper.from_array(np.ones(1, np.float32), "a_s"),
                         numpy_helper.from_array(np.ones(2, np.float32), "w_s"),
                         numpy_helper.from_array(np.zeros((), np.uint8), "a_z"),
                         numpy_helper.from_array(np.zeros((), np.int8), "w_z")],
        )
        target = tmp_path / f"plain{int(np.abs(codes).max())}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                          helper.make_opsetid("com.microsoft", 1)]), str(target))
        return target

    assert exact_model(plain(np.full((4, 2), 64, np.int8)), everywhere=True) is None
    assert exact_model(plain(np.full((4, 2), 100, np.int8)), everywhere=True) is not None


def test_the_projects_session_is_exact_on_every_host(loop_onnx):
    """Host-dependent by design: where the u8s8 kernel does not saturate, both modes are the same exact
    GEMM (equal outputs); where it saturates, the project's mode is the one closer to fp32."""
    from mobile_export.backends.onnx import Runner
    from mobile_export.model.loading import load_checkpoint
    from mobile_export.model.reference import reference_outputs, tokenize
    from mobile_export.parity.texts import builtin_texts

    loaded = load_checkpoint(loop_onnx.checkpoint)
    examples = tokenize(loaded.tokenizer, builtin_texts()[:24], 64)
    path = loop_onnx.out / "model.onnx"
    native, exact = Runner(path, precision=Precision.NATIVE), Runner(path, precision=Precision.EXACT)
    fp32 = np.concatenate([r[0] for r in reference_outputs(loaded.model, loaded.task, examples)])
    a = np.concatenate([native.run(ex.feeds)[0] for ex in examples])
    b = np.concatenate([exact.run(ex.feeds)[0] for ex in examples])
    if saturates(this_host()):
        err_a, err_b = float(np.sum((a - fp32) ** 2)), float(np.sum((b - fp32) ** 2))
        assert err_b < err_a, (err_a, err_b)
    else:
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert Runner(path).precision is precision_for()


def _assert_no_weight_can_saturate(path, least: int) -> None:
    from mobile_export.backends import ort as ort_format

    tensors = {t.Name().decode(): t for t in ort_format.initializers(path)}
    gemms = {"MatMulInteger": 1, "DynamicQuantizeMatMul": 1, "MatMulIntegerToFloat": 1}
    weights = [graph.Nodes(n).Inputs(gemms[graph.Nodes(n).OpType().decode()]).decode()
               for graph, _ in ort_format._graphs(path) for n in range(graph.NodesLength())
               if graph.Nodes(n).OpType().decode() in gemms]
    assert len(weights) >= least, weights
    for name in weights:
        t = tensors[name]
        if t.DataType() == 3:  # int8: only if it cannot saturate
            assert int(np.abs(t.RawDataAsNumpy().view(np.int8).astype(np.int16)).max()) <= 64, name
        else:
            assert t.DataType() == 2, (name, t.DataType())


def test_ort_file_stores_no_weight_that_can_saturate(loop_onnx):
    """A .ort is not optimized again when loaded: its GEMM weights must already be u8 (or 7-bit s8)."""
    _assert_no_weight_can_saturate(loop_onnx.out / "model.ort", 8)  # the layer's six, the pooler and the classifier


def test_a_tied_decoders_ort_weight_cannot_saturate(tiny_checkpoint, shared_export):
    """A fill-mask decoder multiplies by Transpose(word table), which no initializer rewrite reaches: the .ort
    must still hold it as u8 (an AVX2 host saturated it: 20 of 1,984 decisions stayed decisive)."""
    ckpt = tiny_checkpoint("fill-mask", "sentencepiece")
    result = shared_export(ckpt, ExportOptions(backends=(Backend.ORT,), quant=Quant.INT8, measure_memory=False))
    _assert_no_weight_can_saturate(result.out / "model.ort", 9)  # the layer's six, mapping, MLM dense, decoder


def test_reports_name_the_checking_machine(loop_onnx):
    report = json.loads((loop_onnx.out / "report.json").read_text())
    host = report["host"]
    me = this_host()
    assert host["cpu"] == me.cpu and host["int8_features"] == list(me.features)
    assert host["precision"]["onnxruntime"] == precision_for().describe(me)
    assert "executorch" in host["precision"]
    md = (loop_onnx.out / "report.md").read_text()
    assert f"- checked on: {me.cpu}" in md and f"- onnxruntime int8 mode: {precision_for().value}" in md
    assert "checked on:" in (loop_onnx.out / "report.html").read_text()
