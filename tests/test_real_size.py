"""Real-size shapes (random weights): albert-base-v2, about a minute on 2 cores; `make test-slow` (CI) runs it."""

from __future__ import annotations

from mobile_export import Backend, ExportOptions, Quant, export
import pytest

# a real-size model: the slow tier's (`make test-slow`, which CI runs), not `make test`'s (BENCHMARKS.md, tiers)
pytestmark = pytest.mark.slow

ALBERT_BASE = dict(embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                   intermediate_size=3072, max_position_embeddings=512, initializer_range=0.02)


def test_albert_base_shape_int8_both_backends(tiny_checkpoint, tmp_path):
    # the SentencePiece vocabulary is small; pad the table to albert-base-v2's 30000 rows
    ckpt = tiny_checkpoint("text-classification", "sentencepiece", vocab_size=30000, **ALBERT_BASE)
    result = export(ckpt, tmp_path / "out", ExportOptions(quant=Quant.INT8, max_seq_len=512))
    # the model's bytes: the file without the tokenizer, labels and card it carries (the app ships those anyway,
    # beside the model or inside it; the block is smaller than the folder's copies, tests/test_one_file.py)
    carried = {a["backend"]: a["size"]["bundle_bytes"] for a in result.report["artifacts"]}
    assert all(0 < v < 1_000_000 for v in carried.values()), carried
    sizes = {a.backend: a.bytes - carried[a.backend.value] for a in result.artifacts}
    for a in result.artifacts:  # shown with -s; recorded in the closing notes / BENCHMARKS.md
        print(f"{a.backend.value}: {a.bytes:,} B, export {a.export_seconds:.0f} s, SQNR {a.parity.sqnr_db:.1f} dB, "
              f"agreement {a.parity.agreement:.2%}")
    for art in result.artifacts:
        assert art.parity.passed, art.parity.failures
    # 11.7M unique parameters at one byte each plus scales (measured: 12.27 MB .pte, 12.18 MB .onnx),
    # against 23.7 MB for a stock XNNPACK int8 .pte and 34.8 MB for plain ORT quantize_dynamic
    assert sizes[Backend.EXECUTORCH] <= 12_600_000, sizes
    assert sizes[Backend.ONNX] <= 12_600_000, sizes
