"""The families beyond the test matrix's cases (``test_matrix``: every family with every task, format, precision,
tokenizer kind and head, pairwise): a MiniLM-shaped sentence encoder of two families against transformers' vectors,
and CamemBERT, RoBERTa's adapter under other names.
"""

from __future__ import annotations


import numpy as np
import pytest

from mobile_export import Backend, ExportOptions, Quant, load
from mobile_export.demo.tiny import NATIVE_TOKENIZER
from mobile_export.model.families import FAMILIES
from mobile_export.parity.texts import ENGLISH

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

@pytest.fixture(scope="module")
def family_export(tiny_checkpoint, shared_export):
    """family_export(family, task, quant, formats) -> (checkpoint, ExportResult), two layers."""

    def make(family: str, task: str, quant: Quant, formats: tuple[Backend, ...]):
        ckpt = tiny_checkpoint(task, NATIVE_TOKENIZER.get(family, "wordpiece"), family=family, num_hidden_layers=2)
        return ckpt, shared_export(ckpt, ExportOptions(backends=formats, quant=quant, measure_memory=False))

    return make


@pytest.mark.parametrize("family", ["bert", "xlm-roberta"])
def test_a_sentence_encoder_gives_transformers_vectors(tiny_checkpoint, shared_export, family):
    """A sentence encoder of MiniLM's width (hidden 384, 12 heads, intermediate 1536: all-MiniLM's BERT and
    paraphrase-multilingual-MiniLM's XLM-R, whose SentencePiece is trained here) at two layers (depth is not the point
    here: the trained 6-layer encoders are the benchmarks') exported with mean pooling and normalization gives
    transformers' mean-pooled, normalized vectors (cosine >= 0.99)."""
    import torch

    from mobile_export.model.loading import load_checkpoint

    ckpt = tiny_checkpoint("feature-extraction", NATIVE_TOKENIZER.get(family, "wordpiece"), family=family,
                           hidden_size=384, num_attention_heads=12, intermediate_size=1536, num_hidden_layers=2,
                           initializer_range=0.02, max_position_embeddings=128)
    # the .onnx (a phone runs both; the .pte of the same machinery is the round trips' above)
    result = shared_export(ckpt, ExportOptions(backends=(Backend.ONNX,), pooling="mean", normalize=True,
                                               measure_memory=False))
    loaded = load_checkpoint(str(ckpt))
    texts = ENGLISH[:12]
    for backend in (Backend.ONNX,):
        predictor = load(result.out, backend=backend)
        for text in texts:
            enc = loaded.tokenizer(text, return_tensors="pt", truncation=True, max_length=128)
            with torch.no_grad():
                hidden = loaded.model(**enc).last_hidden_state[0]
            mask = enc["attention_mask"][0, :, None].float()
            want = (hidden * mask).sum(0) / mask.sum()
            want = (want / want.norm()).numpy()
            got = predictor.encode(text).vector.reshape(-1)
            cosine = float(np.dot(got, want) / (np.linalg.norm(got) * np.linalg.norm(want)))
            assert cosine >= 0.99, (backend, text, cosine)


def test_camembert_is_robertas_adapter_and_fills_masks(family_export):
    """CamemBERT is RoBERTa's family under its own names (the same data but for the model type and layer class), so
    RoBERTa's matrix above covers its machinery; one fill-mask round trip in both formats (its own SentencePiece ids,
    the tied masked-LM head) passes the gates and stores the tied table once."""
    from dataclasses import replace

    camembert, roberta = FAMILIES["camembert"], FAMILIES["roberta"]
    assert replace(camembert, name="roberta", model_types=("roberta",), layer_classes=("RobertaLayer",)) == roberta
    _, result = family_export("camembert", "fill-mask", Quant.INT8, (Backend.EXECUTORCH, Backend.ONNX))
    assert result.passed and result.report["model"]["model_type"] == "camembert"
    for a in result.report["artifacts"]:
        assert a["size"]["tied_embeddings"] and "tied word-embedding table is stored once" in a["size"][
            "sharing_verdict"], a["file"]
