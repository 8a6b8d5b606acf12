"""Outlier channels: the fp32 model's per-channel input ranges name the channels that dominate a weight's
dynamic int8 scale, at every depth of the shared layer, and name none on a model without them."""

from __future__ import annotations

import pytest
import torch

from mobile_export.model.activations import OUTLIER_RATIO, channel_ranges
from mobile_export.model.loading import load_checkpoint
from mobile_export.model.reference import tokenize
from mobile_export.parity.texts import builtin_texts

from outlier_models import LAYER, PLANTED, plant_exact, plant_residual


def _ranges(ckpt, plant: float | None = None):
    loaded = load_checkpoint(ckpt)
    if plant:  # the shared layer's last LayerNorm: its output is the next depth's query/key/value input
        plant_residual(loaded.model, plant)
    return channel_ranges(loaded.model, tokenize(loaded.tokenizer, builtin_texts()[:12], 64)), loaded


def test_planted_layernorm_channels_are_named_at_the_depths_they_reach(tiny_checkpoint):
    ranges, loaded = _ranges(tiny_checkpoint("text-classification", num_hidden_layers=3), plant=40.0)
    query = ranges[f"{LAYER}.attention.query"]
    assert query.calls == loaded.config.num_hidden_layers == 3
    assert {c for c, _ in query.outliers()} == set(PLANTED)
    assert min(r for _, r in query.outliers()) >= 20  # 40x gamma and beta: far above the median channel
    # depth 0 reads the embedding projection, not the planted LayerNorm: only depths 1 and 2 carry them
    first, later = query.by_call[0], query.by_call[1:].max(axis=0)
    assert max(first[list(PLANTED)]) < OUTLIER_RATIO * float(torch.tensor(first).median())
    assert min(later[list(PLANTED)]) >= 20 * float(torch.tensor(later).median())
    for name in ("key", "value"):
        assert {c for c, _ in ranges[f"{LAYER}.attention.{name}"].outliers()} == set(PLANTED)
    # the FFN reads the attention LayerNorm's output, which normalizes the planted channels away
    assert not ranges[f"{LAYER}.ffn"].outliers()


def test_no_channel_is_named_without_outliers(tiny_checkpoint):
    ranges, _ = _ranges(tiny_checkpoint("text-classification", num_hidden_layers=3))
    shared = {k: v for k, v in ranges.items() if k.startswith(LAYER)}
    assert len(shared) == 6  # query, key, value, attention dense, ffn, ffn_output
    for name in ("attention.query", "attention.key", "attention.value", "ffn"):
        assert not shared[f"{LAYER}.{name}"].outliers(), (name, shared[f"{LAYER}.{name}"].spread())


def _outputs(loaded, examples):
    def run():
        with torch.no_grad():
            return [loaded.model(**{k: torch.from_numpy(v) for k, v in ex.feeds.items()}).logits.numpy()
                    for ex in examples]

    return run


def test_the_weights_reading_outliers_carry_the_error(tiny_checkpoint):
    from mobile_export.parity.attribution import weight_errors

    loaded = load_checkpoint(tiny_checkpoint("text-classification", num_hidden_layers=3))
    examples = tokenize(loaded.tokenizer, builtin_texts()[:12], 64)
    names = [n for n, m in loaded.model.named_modules() if isinstance(m, torch.nn.Linear)]
    clean, _ = weight_errors(loaded.model, names, _outputs(loaded, examples), "tensor")
    before = _outputs(loaded, examples)()
    plant_exact(loaded.model, 50.0)
    after = _outputs(loaded, examples)()
    assert max(float(abs(a - b).max()) for a, b in zip(before, after)) < 1e-4  # the fp32 function is unchanged
    ranges = channel_ranges(loaded.model, examples)
    readers = ("albert.encoder.embedding_hidden_mapping_in", f"{LAYER}.attention.dense")
    assert {r: {c for c, _ in ranges[r].outliers()} for r in readers} == {r: set(PLANTED) for r in readers}
    every, errors = weight_errors(loaded.model, names, _outputs(loaded, examples), "tensor")
    assert every < clean - 10  # the planted channels cost the int8 model
    by = {e.weight: e for e in errors}
    # quantized alone, each weight that reads the planted channels costs more than any other
    assert max(by[r].alone_db for r in readers) < min(e.alone_db for e in errors if e.weight not in readers)
    # and keeping one of them in fp32 recovers the most
    assert max(errors, key=lambda e: e.without_db).weight in readers
    # a scale per token (XNNPACK) does not help: every token carries the planted channels
    per_token, _ = weight_errors(loaded.model, names, _outputs(loaded, examples), "token")
    assert per_token < clean - 10
    print(f"clean {clean:.1f} dB; planted: per tensor {every:.1f}, per token {per_token:.1f}; "
          + ", ".join(f"{e.weight.split('.')[-1]} {e.alone_db:.1f}/{e.without_db:.1f}" for e in errors))


def test_emulated_int8_is_the_onnx_runtime_artifacts_error(tiny_checkpoint, shared_export):
    """The emulation reproduces what ONNX Runtime's int8 does to the same model (so its attribution can
    be trusted): the SQNR of the emulated model and of the real .onnx on the same texts agree."""
    from mobile_export import Backend, ExportOptions, Quant
    from mobile_export.backends.onnx import Runner
    from mobile_export.parity.attribution import pooled_sqnr_db, weight_errors

    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    result = shared_export(ckpt, ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT8, measure_memory=False))
    loaded = load_checkpoint(ckpt)
    examples = tokenize(loaded.tokenizer, builtin_texts()[:24], 64)
    names = [n for n, m in loaded.model.named_modules() if isinstance(m, torch.nn.Linear)]
    emulated, _ = weight_errors(loaded.model, names, _outputs(loaded, examples), "tensor")
    runner = Runner(result.out / "model.onnx")
    real = pooled_sqnr_db(_outputs(loaded, examples)(), [runner.run(ex.feeds)[0] for ex in examples])
    print(f"emulated {emulated:.1f} dB, real {real:.1f} dB")
    assert abs(emulated - real) <= 3.0, (emulated, real)


def test_smoothing_folds_the_planted_channels_back_exactly(tiny_checkpoint):
    from mobile_export.parity.attribution import weight_errors
    from quantize.smooth import foldable_pairs, smooth

    loaded = load_checkpoint(tiny_checkpoint("text-classification", num_hidden_layers=3))
    examples = tokenize(loaded.tokenizer, builtin_texts()[:12], 64)
    names = [n for n, m in loaded.model.named_modules() if isinstance(m, torch.nn.Linear)]
    clean, _ = weight_errors(loaded.model, names, _outputs(loaded, examples), "tensor")
    plant_exact(loaded.model, 50.0)
    before = _outputs(loaded, examples)()
    planted, _ = weight_errors(loaded.model, names, _outputs(loaded, examples), "tensor")
    assert len(foldable_pairs(loaded.model)) == 2  # the embeddings LayerNorm -> projection; value -> dense
    ranges = channel_ranges(loaded.model, examples)
    folds = smooth(loaded.model, {k: torch.from_numpy(v.absmax) for k, v in ranges.items()}, threshold=OUTLIER_RATIO)
    assert {(f.producer.split(".")[-1], f.consumer.split(".")[-1]) for f in folds} == {
        ("LayerNorm", "embedding_hidden_mapping_in"), ("value", "dense")}
    after = _outputs(loaded, examples)()
    assert max(float(abs(a - b).max()) for a, b in zip(before, after)) < 1e-4  # still the same fp32 function
    smoothed, _ = weight_errors(loaded.model, names, _outputs(loaded, examples), "tensor")
    print(f"clean {clean:.1f} dB, planted {planted:.1f}, smoothed {smoothed:.1f}; folds {folds}")
    assert smoothed >= clean - 2.0 and smoothed > planted + 15
    again = channel_ranges(loaded.model, examples)
    assert not again["albert.encoder.embedding_hidden_mapping_in"].outliers()
    assert not again[f"{LAYER}.attention.dense"].outliers()


def test_smoothing_leaves_a_model_without_outliers_alone(tiny_checkpoint):
    from quantize.smooth import smooth

    loaded = load_checkpoint(tiny_checkpoint("text-classification", num_hidden_layers=3))
    ranges = channel_ranges(loaded.model, tokenize(loaded.tokenizer, builtin_texts()[:12], 64))
    state = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    assert smooth(loaded.model, {k: torch.from_numpy(v.absmax) for k, v in ranges.items()}, threshold=OUTLIER_RATIO) == []
    assert all(torch.equal(state[k], v) for k, v in loaded.model.state_dict().items())


@pytest.mark.parametrize("family", ["roberta", "xlm-roberta"])
def test_the_smooth_folds_are_exact_in_roberta_and_xlmr(tiny_checkpoint, family):
    """RoBERTa's and XLM-R's layers offer the smooth repair its exact fold (each layer's value -> attention output):
    any per-channel scales folded there leave the fp32 function as it was."""
    from quantize.smooth import fold, foldable_pairs

    from mobile_export.demo.tiny import NATIVE_TOKENIZER

    loaded = load_checkpoint(tiny_checkpoint("text-classification", NATIVE_TOKENIZER[family], family=family,
                                             num_hidden_layers=3))
    examples = tokenize(loaded.tokenizer, builtin_texts()[:8], 64)
    before = _outputs(loaded, examples)()
    pairs = foldable_pairs(loaded.model)
    assert [(p.split(".")[-1], c.split(".")[-2:]) for p, c in pairs] == [("value", ["output", "dense"])] * 3
    generator = torch.Generator().manual_seed(0)
    for producer, consumer in pairs:
        width = loaded.model.get_submodule(consumer).in_features
        fold(loaded.model, producer, consumer, torch.exp(torch.randn(width, generator=generator)))
    after = _outputs(loaded, examples)()
    assert max(float(abs(a - b).max()) for a, b in zip(before, after)) < 1e-4
