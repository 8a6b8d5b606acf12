"""Property-based tests (hypothesis): the parity metrics, and Java vs Python tokenization on random text."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mobile_export.core.thresholds import Thresholds
from mobile_export.core.tasks import get_task
from mobile_export.parity.accumulate import compare

TASK = get_task("text-classification")
NONE = Thresholds(max_abs_diff=None, min_agreement=None, min_sqnr_db=None)
finite = st.floats(-1e3, 1e3, allow_nan=False, width=32)
logits = st.integers(1, 6).flatmap(lambda n: st.lists(arrays(np.float32, (1, 3), elements=finite), min_size=n, max_size=n))


@settings(max_examples=60, deadline=None)
@given(logits)
def test_identical_outputs_are_perfect(ref):
    r = compare(TASK, [[x] for x in ref], [[x.copy()] for x in ref], Thresholds(max_abs_diff=0.0))
    assert r.max_abs_diff == 0.0 and r.mean_abs_diff == 0.0 and r.sqnr_db == math.inf
    assert r.agreement == 1.0 and r.passed


@settings(max_examples=60, deadline=None)
@given(logits, st.data())
def test_metrics_match_numpy(ref, data):
    act = [data.draw(arrays(np.float32, (1, 3), elements=finite)) for _ in ref]
    r = compare(TASK, [[x] for x in ref], [[y] for y in act], NONE)
    a, b = np.concatenate(ref).astype(np.float64), np.concatenate(act).astype(np.float64)
    assert r.max_abs_diff == pytest.approx(float(np.max(np.abs(a - b))))
    assert r.mean_abs_diff == pytest.approx(float(np.mean(np.abs(a - b))))
    assert 0.0 <= r.agreement <= 1.0
    assert r.agreement == pytest.approx(float(np.mean(a.argmax(-1) == b.argmax(-1))))
    swapped = compare(TASK, [[y] for y in act], [[x] for x in ref], NONE)
    assert swapped.max_abs_diff == pytest.approx(r.max_abs_diff) and swapped.agreement == r.agreement


@settings(max_examples=60, deadline=None)
@given(logits, st.floats(0.01, 100))
def test_sqnr_is_scale_invariant(ref, scale):
    act = [x + np.float32(0.5) for x in ref]
    base = compare(TASK, [[x] for x in ref], [[y] for y in act], NONE).sqnr_db
    scaled = compare(TASK, [[x.astype(np.float64) * scale] for x in ref],
                     [[y.astype(np.float64) * scale] for y in act], NONE).sqnr_db
    if math.isfinite(base):
        assert scaled == pytest.approx(base, abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(logits)
def test_nan_in_the_artifact_always_fails(ref):
    act = [x.copy() for x in ref]
    act[0][0, 0] = np.nan
    r = compare(TASK, [[x] for x in ref], [[y] for y in act], Thresholds(max_abs_diff=1e9, min_sqnr_db=-1e9))
    assert not r.passed and r.max_abs_diff == math.inf


# ---------------------------------------------------------------- tokenizers: Java == Python

text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\n"), max_size=60)


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    from transformers import AlbertTokenizer, BertTokenizer

    from mobile_export.assets.tokenizer import write_tokenizer_assets
    from mobile_export.demo import MODEL_DIR
    from mobile_export.demo.tiny import train_sentencepiece
    from mobile_export.parity.texts import builtin_texts

    root = tmp_path_factory.mktemp("prop")
    wp = BertTokenizer.from_pretrained(str(MODEL_DIR))
    write_tokenizer_assets(wp, "wordpiece", Path(MODEL_DIR), root / "wp", 64)
    (root / "sp").mkdir()
    train_sentencepiece(list(builtin_texts()) * 4, root / "sp" / "spiece", vocab_size=300)
    sp = AlbertTokenizer.from_pretrained(str(root / "sp"))
    write_tokenizer_assets(sp, "sentencepiece", root / "sp", root / "sp-assets", 64)
    return {"wordpiece": (wp, root / "wp"), "sentencepiece": (sp, root / "sp-assets")}


@pytest.mark.needs_tool("java")
@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece"])
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(text, min_size=100, max_size=200))
def test_java_tokenizer_equals_python_on_random_text(tokenizers, kind, texts):
    from test_android_tokenizer import java_encodings, python_encodings

    tok, assets = tokenizers[kind]
    lines = [t.encode("utf-8") for t in texts]
    got = java_encodings(assets, lines)
    assert got == python_encodings(tok, lines, 64)
    assert all(2 <= len(ids) <= 64 and ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id for ids, _ in got)
