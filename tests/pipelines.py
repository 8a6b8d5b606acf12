"""transformers' pipelines on a checkpoint, and the comparisons ``test_run`` and ``test_heads`` share."""

from __future__ import annotations

import pytest


def pipeline_for(task, ckpt, **kwargs):
    """transformers' pipeline for ``task`` on the fp32 checkpoint folder ``ckpt`` (CPU, no network)."""
    from transformers import AutoTokenizer, pipeline

    from mobile_export.core.tasks import model_class_for

    model = model_class_for(task).from_pretrained(str(ckpt)).eval()
    return pipeline(task, model=model, tokenizer=AutoTokenizer.from_pretrained(str(ckpt)), device="cpu", **kwargs)


def assert_fills_equal_pipeline(predictor, pipe, texts, top_k: int = 5) -> None:
    """``predictor.fill_mask`` gives the fill-mask pipeline's tokens, strings and scores at every [MASK]."""
    for text in texts:
        expected = pipe(text)
        expected = [expected] if isinstance(expected[0], dict) else expected
        got = predictor.fill_mask(text, top_k=top_k)
        assert len(got) == len(expected) == text.count("[MASK]")
        for mask, fills in zip(got, expected):
            assert [f.token_id for f in mask.fills] == [f["token"] for f in fills]
            assert [f.token for f in mask.fills] == [f["token_str"] for f in fills]
            assert [f.score for f in mask.fills] == pytest.approx([f["score"] for f in fills], abs=1e-4)
