"""Real-size shapes (random weights): albert-base-v2. Slow (minutes); run with `make test-all`."""

from __future__ import annotations

import pytest

from mobile_export import Backend, ExportOptions, Quant, export

ALBERT_BASE = dict(embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                   intermediate_size=3072, max_position_embeddings=512, initializer_range=0.02)


@pytest.mark.slow
def test_albert_base_shape_int8_both_backends(tiny_checkpoint, tmp_path):
    # the SentencePiece vocabulary is small; pad the table to albert-base-v2's 30000 rows
    ckpt = tiny_checkpoint("text-classification", "sentencepiece", vocab_size=30000, **ALBERT_BASE)
    result = export(ckpt, tmp_path / "out", ExportOptions(quant=Quant.INT8, max_seq_len=512))
    sizes = {a.backend: a.bytes for a in result.artifacts}
    for art in result.artifacts:
        assert art.parity.passed, art.parity.failures
    # 11.7M unique parameters at one byte each plus scales: well under the 23.7 MB of a stock .pte
    assert sizes[Backend.EXECUTORCH] < 14_000_000, sizes
    assert sizes[Backend.ONNX] < 14_000_000, sizes
