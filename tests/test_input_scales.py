"""Input scales (``quantize.smooth.SmoothedLinear``, the repair's ``scales``): where no fold is exact, a Linear
divides its own input by smoothing scales, its weight's columns multiplied by them. The fp32 function is unchanged in
every family; scales are kept only where the model's emulated int8 gains (both ways); readers of one tensor share one
vector, which the .onnx quantizes once."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from mobile_export.demo.tiny import NATIVE_TOKENIZER
from mobile_export.exporter.repair.methods import SAMPLED_ROWS, input_scaled
from mobile_export.model.activations import OUTLIER_RATIO, channel_ranges
from mobile_export.model.families import FAMILIES
from mobile_export.model.loading import load_checkpoint
from mobile_export.model.reference import tokenize
from mobile_export.parity.diagnosis import Emulation, quantized_linears
from mobile_export.parity.texts import builtin_texts
from quantize.smooth import SmoothedLinear, give_input_scales, matmul_input, module_input, smoothing_scales
from quantize.smooth_search import candidate_scales, reader_groups

from outlier_models import LAYER, PLANTED


def _logits(loaded, examples):
    def run():
        with torch.no_grad():
            out = [loaded.model(**{k: torch.from_numpy(v) for k, v in ex.feeds.items()}) for ex in examples]
        return [(o.logits if hasattr(o, "logits") else o.last_hidden_state).numpy() for o in out]

    return run


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "camembert"])
def test_input_scales_leave_every_family_fp32_function_unchanged(tiny_checkpoint, family):
    """Each family, every group of Linears given a scale vector: the same outputs to float rounding, query, key
    and value one group, and a decoder tied to the word table not a candidate (its columns are the table's)."""
    ckpt = tiny_checkpoint("fill-mask", NATIVE_TOKENIZER.get(family, "wordpiece"), family=family, num_hidden_layers=2)
    loaded = load_checkpoint(ckpt)
    examples = tokenize(loaded.tokenizer, builtin_texts()[:6], 32)
    before = _logits(loaded, examples)()
    table = loaded.model.get_input_embeddings().weight.detach().clone()
    inputs = {n: r.rows for n, r in channel_ranges(loaded.model, examples, rows=SAMPLED_ROWS).items()}
    tied = {id(loaded.model.get_input_embeddings().weight)}
    wanted = {n: x.abs().amax(dim=0) for n, x in inputs.items()
              if id(loaded.model.get_submodule(n).weight) not in tied}
    groups = reader_groups(wanted)
    folds = []
    for group in groups:
        weights = torch.cat([loaded.model.get_submodule(n).weight.detach() for n in group])
        folds.append(give_input_scales(loaded.model, group, smoothing_scales(wanted[group[0]], weights)))
    after = _logits(loaded, examples)()
    assert max(float(np.abs(a - b).max() / np.abs(a).max()) for a, b in zip(before, after)) < 1e-5
    assert torch.equal(loaded.model.get_input_embeddings().weight, table)
    smoothed = [n for n, m in loaded.model.named_modules() if isinstance(m, SmoothedLinear)]
    assert len(smoothed) == len(wanted) == sum(len(f.consumer.split(",")) for f in folds)
    assert any(len(g) == 3 for g in groups), groups  # query, key and value read one tensor: one vector
    for f in folds:
        assert f.stored_bytes == 4 * loaded.model.get_submodule(f.consumer.split(",")[0]).in_features


def _planted(ckpt, site: str, factor: float):
    """The tiny ALBERT with ``site``'s (a LayerNorm of the shared layer) PLANTED channels ``factor`` times larger."""
    loaded = load_checkpoint(ckpt)
    norm = loaded.model.get_submodule(f"{LAYER}.{site}")
    with torch.no_grad():
        for c in PLANTED:
            norm.weight[c] *= factor
            norm.bias[c] *= factor
    return loaded, tokenize(loaded.tokenizer, builtin_texts()[:12], 64)


def test_input_scales_are_kept_where_the_model_gains(tiny_checkpoint):
    """Residual-stream outliers (the shared layer's last LayerNorm, 20x: no exact fold) read by the next depth's
    value: with its input scaled the emulated int8 (one scale per tensor) gains >= 5 dB, the fp32 outputs equal."""
    ckpt = tiny_checkpoint("text-classification", num_hidden_layers=3)
    loaded, examples = _planted(ckpt, "full_layer_layer_norm", 20)
    names = quantized_linears(loaded.model)
    before = Emulation(loaded, examples).sqnr(names, "tensor")
    scaled, folds = input_scaled(loaded, examples, "tensor")
    after = Emulation(scaled, examples).sqnr(names, "tensor")
    assert folds and all(f.stored_bytes > 0 for f in folds)
    assert after[0] > before[0] + 5 and after[1] >= before[1], (before, after)
    fp32_before, fp32_after = _logits(loaded, examples)(), _logits(scaled, examples)()
    assert max(float(np.abs(a - b).max()) for a, b in zip(fp32_before, fp32_after)) < 1e-4
    x = torch.randn(2, 32)
    value = scaled.model.get_submodule(folds[0].consumer.split(",")[0])
    assert isinstance(value, SmoothedLinear)
    assert torch.allclose(module_input(value, matmul_input(value, x)), x, rtol=1e-5, atol=1e-6)


def test_input_scales_that_cost_the_model_are_not_kept(tiny_checkpoint):
    """The other way: at 40x the value's outputs alone get closer to fp32 with a scaled input (a candidate), but the
    model's emulated int8 (one scale per token) does not gain: nothing is kept, the copy is the model."""
    ckpt = tiny_checkpoint("text-classification", num_hidden_layers=3)
    loaded, examples = _planted(ckpt, "full_layer_layer_norm", 40)
    inputs = {n: r.rows for n, r in channel_ranges(loaded.model, examples, rows=SAMPLED_ROWS).items()}
    assert candidate_scales(loaded.model, inputs, "token", threshold=OUTLIER_RATIO)  # a local gain exists
    scaled, folds = input_scaled(loaded, examples, "token")
    assert folds == [] and not any(isinstance(m, SmoothedLinear) for m in scaled.model.modules())
    names = quantized_linears(loaded.model)
    assert Emulation(scaled, examples).sqnr(names, "token") == Emulation(loaded, examples).sqnr(names, "token")


class _Readers(torch.nn.Module):
    """A LayerNorm read by three Linears (query, key and value), their outputs summed."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.norm = torch.nn.LayerNorm(16)
        self.query, self.key, self.value = (torch.nn.Linear(16, 8) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return self.query(h) + self.key(h) + self.value(h)


def test_readers_of_one_tensor_scale_it_once_in_the_int8_onnx(tmp_path):
    """The .onnx of query, key and value given one scale vector: one Mul, one per-token quantization of its output
    (the exporter's optimizer merges their equal Muls), and the int8 file within int8's error of the fp32 module."""
    import onnxruntime as ort

    from quantize.onnx_dynamic import quantize_file

    module = _Readers().eval()
    with torch.no_grad():
        module.norm.weight[3] = 30.0  # an outlier channel every reader sees
    scales = torch.ones(16)
    scales[3] = 6.0
    give_input_scales(module, ["query", "key", "value"], scales)
    x = torch.randn(1, 5, 16)
    src, dst = tmp_path / "fp32.onnx", tmp_path / "int8.onnx"
    torch.onnx.export(module, (x,), str(src), dynamo=True, input_names=["x"], output_names=["y"])
    quantize_file(src, dst)
    model = onnx.load(str(dst))
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("ReduceMin") == 1 and ops.count("MatMulIntegerToFloat") == 3
    got = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})[0]
    want = module(x).detach().numpy()
    assert float(np.abs(got - want).max()) < 0.05 * float(np.abs(want).max())
