"""The parity gate both ways on real artifacts: it fails an artifact that is wrong on long inputs only,
a half-quantized .onnx, compute left outside the XNNPACK delegate and a shared layer stored twice with
identical bytes; it passes the same artifacts when they are right."""

from __future__ import annotations

import pytest

from blocks import without_strings

from mobile_export import Backend, ExportOptions, Quant, backends, export
from mobile_export.cli.main import main


@pytest.fixture(scope="module")
def exported(tiny_checkpoint, tmp_path_factory):
    """A tiny classifier exported int8 (.onnx) and fp32 (.onnx), each passing the default gate."""
    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    out = {}
    for quant in (Quant.INT8, Quant.FP32):
        dest = tmp_path_factory.mktemp(f"gate-{quant.value}")
        export(ckpt, dest, ExportOptions(backends=(Backend.ONNX,), quant=quant, measure_memory=False))
        out[quant] = dest / "model.onnx"
    return ckpt, out


def _parity(argv, capsys):
    code = main(["parity", *map(str, argv), "--quiet"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err
    return code, cap.out + cap.err


def test_wrong_on_long_inputs_only_fails_naming_the_bucket(exported, monkeypatch, capsys):
    ckpt, arts = exported
    code, text = _parity([ckpt, str(arts[Quant.INT8])], capsys)
    assert code == 0, text  # the unmodified artifact passes

    module = backends.load(Backend.ONNX)
    real = module.Runner

    class LongInputsBroken(real):
        """The real ONNX Runtime session, with its logits scaled by 0.8 above 40 tokens."""

        def run(self, feeds):
            outs = super().run(feeds)
            if feeds["input_ids"].shape[1] > 40:
                outs = [o * 0.8 for o in outs]
            return outs

    monkeypatch.setattr(module, "Runner", LongInputsBroken)
    code, text = _parity([ckpt, str(arts[Quant.INT8])], capsys)
    assert code == 3, text
    assert "length bucket" in text and "tokens (3 examples)" in text, text


def test_half_quantized_onnx_fails_with_exit_3(exported, tmp_path, capsys):
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from quantize.onnx_graph import graphs

    ckpt, arts = exported
    fp32 = onnx.load(str(arts[Quant.FP32]))  # with its external data
    main_graph_matmuls = [n.name for n in fp32.graph.node if n.op_type in ("MatMul", "Gemm")
                          and n.input[1] in {i.name for i in fp32.graph.initializer}]
    assert main_graph_matmuls
    src = tmp_path / "fp32.onnx"
    onnx.save(fp32, str(src))
    half = tmp_path / "model.onnx"
    quantize_dynamic(str(src), str(half), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul", "Gemm"], nodes_to_exclude=[main_graph_matmuls[0]],
                     extra_options={"EnableSubgraph": True, "MatMulConstBOnly": True})
    src.unlink()
    without_strings(half)  # ORT's tool copies the export's metadata: the file is another tool's now
    model = onnx.load(str(half))
    left = [n.name for g, c in graphs(model.graph) for n in g.node if n.op_type in ("MatMul", "Gemm") and n.input[1] in c]
    assert left == [main_graph_matmuls[0]]  # exactly one weight MatMul stayed fp32

    code, text = _parity([ckpt, str(half)], capsys)
    assert code == 3, text
    assert "1 weight MatMul/Gemm left in fp32" in text and main_graph_matmuls[0] in text, text
    cov = backends.load(Backend.ONNX).coverage(arts[Quant.INT8], Quant.INT8)
    assert cov.fp32_weight_matmuls == 0 and cov.quantized_weight_matmuls >= 6 and not cov.problems


def test_pte_compute_outside_the_delegate_is_a_problem(tmp_path):
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge, to_edge_transform_and_lower

    module = backends.load(Backend.EXECUTORCH)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()).eval()
    ep = torch.export.export(model, (torch.randn(1, 8),))
    plain, lowered = tmp_path / "plain.pte", tmp_path / "lowered.pte"
    plain.write_bytes(to_edge(ep).to_executorch().buffer)
    lowered.write_bytes(to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch().buffer)
    bad = module.coverage(plain, Quant.FP32)
    assert bad.problems and bad.xnnpack_calls == 0
    assert any("addmm" in op or "linear" in op for op in bad.compute_ops_outside_delegate), bad
    good = module.coverage(lowered, Quant.FP32)
    assert not good.problems and good.xnnpack_calls >= 1, good


def test_shared_layer_stored_twice_with_identical_bytes_is_not_preserved(exported, tmp_path, capsys):
    import onnx

    ckpt, arts = exported
    model = onnx.load(str(arts[Quant.INT8]))
    layer = [t for t in model.graph.initializer if t.name.startswith("layer/") and len(t.raw_data) >= 256]
    assert len(layer) >= 6  # the shared layer's weights, stored once
    copies = []
    for n in range(2):  # two more copies of each: the shared layer stored 3 times, identical bytes
        for t in layer:
            c = onnx.TensorProto()
            c.CopyFrom(t)
            c.name = f"{t.name}/copy{n}"
            copies.append(c)
    model.graph.initializer.extend(copies)
    dup = tmp_path / "model.onnx"
    onnx.save(model, str(dup))
    extra = 2 * sum(len(t.raw_data) for t in layer)

    assert main(["size", str(dup), "--checkpoint", str(ckpt), "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert "sharing: NOT preserved" in out, out
    from mobile_export import size_report

    [bad] = size_report([dup], ckpt, measure=False)
    assert not bad["sharing_preserved"], bad
    assert 0.9 * extra <= bad["extra_copies_bytes"]["shared encoder layer"] <= 1.1 * extra, bad
    [good] = size_report([arts[Quant.INT8]], ckpt, measure=False)
    assert good["sharing_preserved"] and not good["extra_copies_bytes"], good


def test_ops_allowed_in_two_methods_for_two_reasons_are_allowed_in_each(tmp_path):
    """``full_like`` is allowed outside the delegate in embed (RoBERTa's position ids) and in the head (the top-k
    selection): a program with it in both passes (a RoBERTa-family top-k .pte); in a layer method it is refused."""
    import torch
    from executorch.exir import to_edge

    class Embed(torch.nn.Module):
        def forward(self, ids):
            return torch.cumsum(ids, dim=1) + torch.full_like(ids, 1)

    class Head(torch.nn.Module):
        def forward(self, ids):
            return torch.where(ids > 0, ids, torch.full_like(ids, -1))

    ids = (torch.ones(1, 4, dtype=torch.int64),)
    module = backends.load(Backend.EXECUTORCH)

    def program(methods: dict) -> object:
        path = tmp_path / f"{'-'.join(methods)}.pte"
        eps = {name: torch.export.export(m.eval(), ids) for name, m in methods.items()}
        path.write_bytes(to_edge(eps).to_executorch().buffer)
        return module.coverage(path, Quant.INT8)

    good = program({"embed": Embed(), "head": Head()})
    assert not good.problems and "aten::full_like" in good.ops_outside_delegate, good
    bad = program({"embed": Embed(), "layer_group_0": Head()})
    assert bad.problems and "aten::full_like" in bad.compute_ops_outside_delegate, bad
