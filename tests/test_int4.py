"""int4 block-wise weights in the .onnx: every task through ONNX Runtime, the gate both ways,
sharing, and the choices a user can get wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from blocks import restamp
from onnx import numpy_helper

from mobile_export import Backend, ExportOptions, Quant, Thresholds, export
from mobile_export.backends import detect_quant
from mobile_export.cli.main import main
from mobile_export.core.thresholds import INT4_MIN_SQNR_DB
from quantize.onnx_graph import count_ops

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

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
    result = export(ckpt, tmp_path / "o", ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT4, format_options={"int4_kernel": kernel},
                                                         thresholds=TINY_LIMITS, measure_memory=False))
    [artifact] = result.report["artifacts"]
    path = tmp_path / "o" / "model.onnx"
    assert artifact["parity"]["passed"] and artifact["scheme"] == "int4-blockwise-g32"
    assert artifact["stats"]["int4"]["group_size"] == 32
    assert result.report["options"]["int4_group_size"] == 32
    # every weight MatMul (the Loop body's included) is 4-bit, and so is the word-embedding lookup
    n = artifact["parity"]["coverage"]["quantized_weight_matmuls"]
    assert n > 0 and artifact["parity"]["coverage"]["fp32_weight_matmuls"] == 0
    assert f"{n} int4 / 0 fp32 weight MatMuls" in (tmp_path / "o" / "report.md").read_text()  # not "int8"
    assert artifact["stats"]["int4"]["kernel"] == kernel
    model = onnx.load(str(path))
    assert count_ops(model, "GatherBlockQuantized") == 1
    everything = [model.graph] + [a.g for n in model.graph.node for a in n.attribute if a.type == a.GRAPH]
    if kernel == "nbits":
        assert count_ops(model, "MatMulNBits") == n
        for node in (n for g in everything for n in g.node if n.op_type == "MatMulNBits"):
            attrs = {a.name: a.i for a in node.attribute}  # int8 activations: compute level 4
            assert attrs["accuracy_level"] == 4 and attrs["bits"] == 4 and attrs["block_size"] == 32
    else:
        # each weight is stored as 4-bit codes (INT4) and widened to int8 by nodes ONNX Runtime folds at load
        assert count_ops(model, "MatMulInteger") == n
        codes = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT4]
        assert len(codes) == n + 1  # + the word table
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
    [entry] = json.loads((tmp_path / "o" / "manifest.json").read_text())["artifacts"]
    assert "MatMulNBits" in entry["kernels"] and "onnxruntime-android" in entry["kernels"]  # what the app needs
    size = artifact["size"]
    if task == "fill-mask":  # the tied decoder is a MatMulNBits of its own at 4 bits (not shared yet), and said so
        assert "NOT preserved (tied embeddings stored twice" in size["sharing_verdict"], size["sharing_verdict"]
        assert set(size["extra_copies_bytes"]) == {"word embeddings"}
        # the extra copy is the decoder's codes (padded to whole groups: the 16-wide table is not) and scales
        vocab = result.report["model"]["config"]["vocab_size"]
        assert size["extra_copies_bytes"]["word embeddings"] >= vocab * 32 // 2 + vocab * 4
        assert size["other_constants_bytes"] <= (vocab if kernel == "int8" else 0)  # its zero points, int8 kernel
    else:
        assert size["sharing_preserved"], size["sharing_verdict"]
        assert size["other_constants_bytes"] == 0
    assert size["int4_group_size"] == 32
    # the tiny model's 48-wide FFN output (and 16-wide embedding) are not multiples of 32: padded, and said so
    padded = artifact["stats"]["int4"]["padded_input_widths"]
    assert 48 in padded and all(k % 32 for k in padded), padded


def test_int4_stores_about_half_of_int8(wide_export):
    sizes = {}
    for quant in (Quant.INT8, Quant.INT4):
        r = wide_export(Backend.ONNX, quant)
        sizes[quant] = r.report["artifacts"][0]["size"]["groups"]["shared encoder layer"]
        [entry] = json.loads((r.out / "manifest.json").read_text())["artifacts"]
        assert ("kernels" in entry) is (quant is Quant.INT4)  # int8 needs nothing beyond the standard runtime
    # 4 bits + one fp32 scale per 32 values = 0.625 B per weight, against 1 B + a scale per row
    assert 0.55 * sizes[Quant.INT8] < sizes[Quant.INT4] < 0.7 * sizes[Quant.INT8], sizes


@pytest.fixture(scope="module")
def demo_int4(tmp_path_factory):
    """The demo model exported to int4 .onnx by the CLI, with int4's default parity limits."""
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
    restamp(drifted / "model.onnx")
    code = main(["parity", str(DEMO), str(drifted / "model.onnx"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "SQNR" in err and f"< {INT4_MIN_SQNR_DB:.1f} dB" in err, err
    assert "Traceback" not in err


def test_int4_choices_a_user_can_get_wrong(tiny_checkpoint, tmp_path, capsys):
    ckpt = str(tiny_checkpoint())
    code = main(["export", ckpt, "--out", str(tmp_path / "a"), "--quant", "int4", "--backend", "ort", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "does not offer --quant int4" in err and "--backend executorch / onnx" in err, err
    code = main(["export", ckpt, "--out", str(tmp_path / "a"), "--quant", "int4", "--group-size", "16", "--quiet"])
    err = capsys.readouterr().err  # XNNPACK takes groups of 32k only; the .onnx alone may use 16
    assert code == 2 and "--group-size 16" in err and "multiple of 32" in err and "--backend onnx" in err, err
    code = main(["export", ckpt, "--out", str(tmp_path / "b"), "--quant", "int4", "--backend", "onnx",
                 "--group-size", "48", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--group-size 48" in err, err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b" / "model.onnx").exists()


def test_an_option_of_a_format_left_out_is_refused_and_taken_by_its_format():
    """--int4-kernel is the .onnx's (and .ort's) own option: set without either, it shapes nothing and is
    refused; with the .onnx, the .onnx's options carry it and the .pte's do not."""
    from mobile_export.backends.executorch.options import PteOptions
    from mobile_export.backends.onnx.options import OnnxOptions
    from mobile_export.core.errors import BadInputError

    with pytest.raises(BadInputError, match="--int4-kernel int8 shapes the .onnx / .ort; add --backend onnx"):
        ExportOptions(backends=(Backend.EXECUTORCH,), quant=Quant.INT4, format_options={"int4_kernel": "int8"})
    options = ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX), quant=Quant.INT4, format_options={"int4_kernel": "int8"})
    assert options.options_for(Backend.ONNX) == OnnxOptions(int4_kernel="int8")
    assert options.options_for(Backend.EXECUTORCH) == PteOptions()
    with pytest.raises(BadInputError, match="--int4-kernel fast is not one of nbits, int8"):
        ExportOptions(backends=(Backend.ONNX,), format_options={"int4_kernel": "fast"})


# ---------------------------------------------------------------------------------------------- .pte


def test_int4_table_packs_as_the_kernel_unpacks():
    """Int4Embedding's packing is what ExecuTorch's embedding_4bit reads: the lookup (the op's reference
    implementation) gives back codes x group scales, and each value is within half a step of the table."""
    import torch

    from quantize.xnnpack_int4 import Int4Embedding, int4_groups

    torch.manual_seed(0)
    table = torch.randn(50, 96) * 0.05
    table[3] = 0.0  # an all-zero row keeps codes 0
    lookup = Int4Embedding(table, 32)
    ids = torch.tensor([[0, 3, 7, 49, 7]])
    got = lookup(ids)[0]
    codes, scales = int4_groups(table, 32)
    want = (codes.float().reshape(50, 3, 32) * scales[..., None]).reshape(50, 96)[ids[0]]
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    steps = scales.repeat_interleave(32, dim=1)[ids[0]]
    assert torch.all((got - table[ids[0]]).abs() <= steps / 2 + 1e-7)  # nothing clipped
    assert codes.min() == -8 or codes.max() == 7  # the full range is used
    assert torch.count_nonzero(got[1]) == 0
    assert lookup.weight_int4.shape == (50, 48) and lookup.weight_int4.dtype == torch.uint8
    assert Int4Embedding(torch.randn(4, 48), 32).group_size == 24  # groups must tile a narrower row
    with pytest.raises(ValueError, match="even width"):
        Int4Embedding(torch.randn(4, 15), 32)


def test_int4_pte_pads_widths_and_holds_4bit_weights(tiny_checkpoint, tmp_path):
    """The tiny model's 16-wide embedding and 48-wide FFN output are not multiples of 32: their Linears
    are widened with zero columns, every Linear runs as XNNPACK 4-bit, the table is looked up in 4 bits."""
    from mobile_export.backends import executorch as et
    from mobile_export.backends.executorch.serializer import read_program

    ckpt = tiny_checkpoint("text-classification", initializer_range=0.02)
    result = export(ckpt, tmp_path / "o", ExportOptions(backends=(Backend.EXECUTORCH,), quant=Quant.INT4,
                                                         thresholds=TINY_LIMITS))
    [artifact] = result.report["artifacts"]
    path = tmp_path / "o" / "model.pte"
    stats = artifact["stats"]["int4"]
    assert artifact["parity"]["passed"] and artifact["scheme"] == "int4-blockwise-g32"
    assert stats["padded_input_widths"] == {"16->32": 1, "48->64": 1}, stats
    assert stats["tables"] == ["embed.embeddings.word_embeddings"] and stats["table_group_size"] == 16
    # embedding projection, q/k/v/dense, FFN in and out, pooler, classifier: all 4-bit inside XNNPACK
    assert stats["linears"] == 9 and len(et.int4_weight_group_sizes(path)) == 9 and set(et.int4_weight_group_sizes(path)) == {32}
    assert et.int4_group_size(path) == 32 and detect_quant(path) is Quant.INT4
    plans = {p.name: [o.name for o in p.operators] for p in read_program(path).program.execution_plan}
    assert et.INT4_TABLE_OP in plans["embed"]
    [entry] = json.loads((tmp_path / "o" / "manifest.json").read_text())["artifacts"]
    assert et.INT4_TABLE_OP in entry["kernels"]  # the app's runtime must have that kernel
    size = artifact["size"]
    vocab = result.report["model"]["config"]["vocab_size"]
    assert size["groups"]["word embeddings"] == vocab * 16 // 2 + vocab * 4  # codes two a byte + a scale per row
    assert size["sharing_preserved"], size["sharing_verdict"]
    # a freshly initialised model's biases are all zero: one blob many operators read is not a packed copy
    assert size["memory_sharing_preserved"], size["memory_sharing_verdict"]


@pytest.fixture(scope="module")
def demo_int4_pte(tmp_path_factory):
    """The demo model exported to int4 .pte by the CLI, with int4's default parity limits."""
    out = tmp_path_factory.mktemp("demo-int4-pte") / "o"
    assert main(["export", str(DEMO), "--out", str(out), "--backend", "executorch", "--quant", "int4",
                 "--no-memory", "--quiet"]) == 0
    return out, json.loads((out / "report.json").read_text())


def test_demo_int4_pte_passes_default_thresholds(demo_int4_pte):
    """The trained demo model passes int4's own default limits in the ExecuTorch runtime too, its 312-wide
    layers padded to 320 (XNNPACK takes groups of 32k inputs)."""
    _, report = demo_int4_pte
    [artifact] = report["artifacts"]
    assert artifact["parity"]["passed"] and artifact["parity"]["sqnr_db"] > INT4_MIN_SQNR_DB + 5
    padded = artifact["stats"]["int4"]["padded_input_widths"]
    assert set(padded) == {"312->320"} and padded["312->320"] >= 6, padded  # q, k, v, dense, FFN in, pooler (+ head)


def _scale_xnnpack_group_scales(path: Path, factor: float) -> int:
    """Multiply, in place, every bf16 group scale XNNPACK's 4-bit weights read from the .pte's named data."""
    from mobile_export.backends.executorch.inspection import xnnpack_graphs
    from mobile_export.backends.executorch.serializer import extended_header, program_of

    data = bytearray(path.read_bytes())
    header = extended_header(bytes(data[:64]))
    program = program_of(bytes(data[:header.program_size]))
    keys = set()
    for graph in xnnpack_graphs(path):
        names = [c.get("named_key", "") for c in graph.get("constant_data", [])]
        for value in graph.get("xvalues", []):
            union = value.get("xvalue_union", {})
            if union.get("tensor_value", {}).get("datatype") == "xnn_datatype_qbint4":
                keys.add(names[union["quant_params"]["scale_buffer_idx"]])
    for entry in program.named_data:
        if entry.key in keys:
            segment = program.segments[entry.segment_index]
            start = header.segment_base_offset + segment.offset
            bf16 = np.frombuffer(bytes(data[start:start + segment.size]), dtype=np.uint16)
            as_float = (bf16.astype(np.uint32) << 16).view(np.float32) * np.float32(factor)
            data[start:start + segment.size] = (as_float.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    path.write_bytes(bytes(data))
    return len(keys)


def test_int4_pte_gate_refuses_a_drifting_artifact(demo_int4_pte, tmp_path, capsys):
    """The demo's int4 .pte with every XNNPACK group scale 40% too large: parity exits 3 and says by how much;
    the untouched file passes the same command."""
    import shutil

    out, _ = demo_int4_pte
    assert main(["parity", str(DEMO), str(out / "model.pte"), "--quiet"]) == 0
    drifted = tmp_path / "model.pte"
    shutil.copy(out / "model.pte", drifted)
    assert _scale_xnnpack_group_scales(drifted, 1.4) >= 6
    restamp(drifted)
    code = main(["parity", str(DEMO), str(drifted), "--quiet"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "SQNR" in err and f"< {INT4_MIN_SQNR_DB:.1f} dB" in err, err
    assert "Traceback" not in err


def test_int4_linears_store_the_no_clipping_codes():
    """quantize_int4 gives every Linear the table's scale rule (``int4_groups``: no clipping), torchao
    stores those codes and scales, and a width that is not a multiple of 32 is padded with zeros."""
    import copy

    import torch

    from quantize.xnnpack_int4 import PaddedLinear, int4_groups, quantize_int4

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(96, 40), torch.nn.Linear(40, 8))
    before = copy.deepcopy(model)
    stats = quantize_int4(model, 32)
    assert stats["linears"] == 2 and stats["padded_input_widths"] == {"40->64": 1}
    assert isinstance(model[1], PaddedLinear)
    codes, scales = int4_groups(before[0].weight, 32)
    stored = model[0].weight
    assert torch.equal(stored.qdata.to(torch.int8), codes)
    torch.testing.assert_close(stored.scale.reshape(scales.shape), scales, rtol=1e-6, atol=0)
    assert torch.count_nonzero(model[1].linear.weight.qdata[:, 40:]) == 0  # the padding stays zero
    x = torch.randn(3, 96)
    with torch.no_grad():
        want, got = before(x), model(x)
    assert 10 * torch.log10((want ** 2).sum() / ((want - got) ** 2).sum()) > 15  # 4-bit weights, int8 activations
