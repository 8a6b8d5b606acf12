"""int4 block-wise weights in the .onnx (issue 19): every task through ONNX Runtime, the gate both ways,
sharing, and the choices a user can get wrong."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from mobile_export import Backend, ExportOptions, Quant, Thresholds, export
from mobile_export.api import detect_quant
from mobile_export.cli import main
from mobile_export.config import INT4_MIN_SQNR_DB
from quantize.onnx_dynamic import count_ops

DEMO = Path(__file__).resolve().parents[1] / "mobile_export" / "demo" / "model"
TASKS = ["text-classification", "token-classification", "question-answering", "fill-mask", "feature-extraction"]
# The tiny test models have random weights drawn 10x wider than a trained ALBERT's (initializer_range
# 0.2): 4-bit rounding moves their outputs by 8-15 dB SQNR where the trained demo model keeps 31 dB
# (test_demo_int4_passes_default_thresholds). Their round trips check the machinery with limits that
# still catch a broken artifact (a wrong scale or layout is below 0 dB); decisive agreement stays 98%.
TINY_LIMITS = Thresholds(min_agreement=0.98, min_sqnr_db=5.0, min_example_sqnr_db=3.0)


@pytest.mark.parametrize("task,kernel", [(t, "int8") for t in TASKS] + [("text-classification", "nbits"),
                                                                        ("fill-mask", "nbits")])
def test_int4_roundtrip_every_task(tiny_checkpoint, tmp_path, task, kernel):
    ckpt = tiny_checkpoint(task)
    result = export(ckpt, tmp_path / "o", ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT4, int4_kernel=kernel,
                                                         thresholds=TINY_LIMITS, measure_memory=False))
    [artifact] = result.report["artifacts"]
    path = tmp_path / "o" / "model.onnx"
    assert artifact["parity"]["passed"] and artifact["scheme"] == "int4-blockwise-g32"
    assert artifact["stats"]["int4"]["group_size"] == 32
    assert result.report["options"]["int4_group_size"] == 32
    # every weight MatMul (the Loop body's included) is 4-bit, and so is the word-embedding lookup
    assert artifact["stats"]["quantized_matmuls"] == artifact["stats"]["weight_matmuls"] > 0
    assert artifact["parity"]["coverage"]["fp32_weight_matmuls"] == 0
    assert artifact["stats"]["int4"]["kernel"] == kernel
    model = onnx.load(str(path))
    assert count_ops(model, "GatherBlockQuantized") == 1
    everything = [model.graph] + [a.g for n in model.graph.node for a in n.attribute if a.type == a.GRAPH]
    if kernel == "nbits":
        assert count_ops(model, "MatMulNBits") == artifact["stats"]["quantized_matmuls"]
        for node in (n for g in everything for n in g.node if n.op_type == "MatMulNBits"):
            attrs = {a.name: a.i for a in node.attribute}  # int8 activations: compute level 4
            assert attrs["accuracy_level"] == 4 and attrs["bits"] == 4 and attrs["block_size"] == 32
    else:
        # each weight is stored as 4-bit codes (INT4) and widened to int8 by nodes ONNX Runtime folds at load
        assert count_ops(model, "MatMulInteger") == artifact["stats"]["quantized_matmuls"]
        codes = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT4]
        assert len(codes) == artifact["stats"]["quantized_matmuls"] + 1  # + the word table
        assert not [t for g in everything for t in g.initializer if t.data_type == onnx.TensorProto.INT8
                    and len(t.dims) == 2]  # no int8 weight matrix in the file
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.optimized_model_filepath = str(tmp_path / "loaded.onnx")
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        loaded = onnx.load(str(tmp_path / "loaded.onnx"), load_external_data=False)
        left = {n.op_type for g in [loaded.graph] + [a.g for n in loaded.graph.node for a in n.attribute
                                                      if a.type == a.GRAPH] for n in g.node}
        widening = [n for g in [loaded.graph] + [a.g for n in loaded.graph.node for a in n.attribute
                                                 if a.type == a.GRAPH] for n in g.node
                    if any(i.endswith(".codes4") for i in n.input)]
        assert not widening, widening  # the widening was folded when the session loaded...
        assert "DynamicQuantizeMatMul" in left, left  # ...and the int8 GEMM fused, as for --quant int8
    assert detect_quant(path) is Quant.INT4
    size = artifact["size"]
    if task == "fill-mask":  # the tied decoder is a MatMulNBits of its own at 4 bits (not shared yet), and said so
        assert "NOT preserved (tied embeddings stored twice" in size["sharing_verdict"], size["sharing_verdict"]
        assert set(size["extra_copies_bytes"]) == {"word embeddings"}
        # its codes are padded to whole groups (the 16-wide table is not): that blob matches no parameter
        vocab = result.report["model"]["config"]["vocab_size"]  # (+ its zero points with --int4-kernel int8)
        assert vocab * 32 // 2 <= size["other_constants_bytes"] <= vocab * 32 // 2 + vocab
    else:
        assert size["sharing_preserved"], size["sharing_verdict"]
        assert size["other_constants_bytes"] == 0
    assert size["int4_group_size"] == 32
    # the tiny model's 48-wide FFN output (and 16-wide embedding) are not multiples of 32: padded, and said so
    padded = artifact["stats"]["int4"]["padded_input_widths"]
    assert 48 in padded and all(k % 32 for k in padded), padded


def test_int4_stores_about_half_of_int8(tiny_checkpoint, tmp_path):
    wide = dict(hidden_size=256, intermediate_size=1024, num_attention_heads=4, embedding_size=32,
                max_position_embeddings=64, initializer_range=0.02)  # test_sharing's WIDE model
    ckpt = tiny_checkpoint("feature-extraction", **wide)
    sizes = {}
    for quant in (Quant.INT8, Quant.INT4):
        r = export(ckpt, tmp_path / quant.value, ExportOptions(backends=(Backend.ONNX,), quant=quant, measure_memory=False,
                                                                thresholds=TINY_LIMITS if quant is Quant.INT4 else None))
        sizes[quant] = r.report["artifacts"][0]["size"]["groups"]["shared encoder layer"]
    # 4 bits + one fp32 scale per 32 values = 0.625 B per weight, against 1 B + a scale per row
    assert 0.55 * sizes[Quant.INT8] < sizes[Quant.INT4] < 0.7 * sizes[Quant.INT8], sizes


@pytest.fixture(scope="module")
def demo_int4(tmp_path_factory):
    """The demo model exported to int4 .onnx by the CLI, with int4's default parity limits."""
    import json

    out = tmp_path_factory.mktemp("demo-int4") / "o"
    assert main(["export", str(DEMO), "--out", str(out), "--backend", "onnx", "--quant", "int4", "--no-memory",
                 "--quiet"]) == 0
    return out, json.loads((out / "report.json").read_text())


def test_demo_int4_passes_default_thresholds(demo_int4):
    """A trained model (the demo) passes int4's own default limits in ONNX Runtime."""
    _, report = demo_int4
    [artifact] = report["artifacts"]
    assert artifact["parity"]["passed"] and artifact["parity"]["sqnr_db"] > INT4_MIN_SQNR_DB + 5
    assert artifact["stats"]["int4"]["padded_input_widths"] == [312]  # hidden 312: 10 groups, the last padded


def test_int4_gate_refuses_a_drifting_artifact(demo_int4, tmp_path, capsys):
    """The same demo export with the shared layer's 4-bit scales off by 40%: parity exits 3 and says
    how far it is."""
    out, _ = demo_int4
    path = out / "model.onnx"
    model = onnx.load(str(path))
    [loop] = [n for n in model.graph.node if n.op_type == "Loop"]
    body = next(a.g for a in loop.attribute if a.name == "body")
    scales = {n.input[2] for n in body.node if n.op_type == "MatMulNBits"}
    for t in model.graph.initializer:
        if t.name in scales:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(1.4), t.name))
    drifted = tmp_path / "drifted"
    drifted.mkdir()
    onnx.save(model, str(drifted / "model.onnx"), save_as_external_data=True, location="model.onnx.data")
    code = main(["parity", str(DEMO), str(drifted / "model.onnx"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "SQNR" in err and f"< {INT4_MIN_SQNR_DB:.1f} dB" in err, err
    assert "Traceback" not in err


def test_int4_choices_a_user_can_get_wrong(tiny_checkpoint, tmp_path, capsys):
    ckpt = str(tiny_checkpoint())
    code = main(["export", ckpt, "--out", str(tmp_path / "a"), "--quant", "int4", "--backend", "executorch", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "does not offer --quant int4" in err and "--backend onnx" in err, err
    code = main(["export", ckpt, "--out", str(tmp_path / "b"), "--quant", "int4", "--backend", "onnx",
                 "--group-size", "48", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--group-size 48" in err, err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b" / "model.onnx").exists()
