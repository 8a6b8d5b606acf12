"""Parity metrics against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mobile_export.core.choices import Quant
from mobile_export.core.thresholds import Thresholds
from mobile_export.core.tasks import get_task
from mobile_export.parity.accumulate import compare
from mobile_export.parity.metrics import cosine, sqnr_db

CLS = get_task("text-classification")
TOK = get_task("token-classification")
QA = get_task("question-answering")
FE = get_task("feature-extraction")


def test_sqnr_hand_computed():
    ref = np.array([3.0, 4.0])  # signal power 25
    act = np.array([3.0, 3.0])  # noise power 1
    assert sqnr_db(ref, act) == pytest.approx(10 * math.log10(25.0))
    assert sqnr_db(ref, ref) == math.inf


def test_cosine_hand_computed():
    assert cosine(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(0.0)
    assert cosine(np.array([1.0, 1.0]), np.array([2.0, 2.0])) == pytest.approx(1.0)
    assert cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])) == pytest.approx(1 / math.sqrt(2))


def test_compare_sequence_logits():
    ref = [[np.array([[1.0, 2.0]])], [np.array([[3.0, 0.0]])]]
    act = [[np.array([[1.5, 2.0]])], [np.array([[0.0, 3.0]])]]  # second flips its argmax
    r = compare(CLS, ref, act, Thresholds(max_abs_diff=1.0, min_agreement=0.99, min_sqnr_db=0.0),
                texts=["a", "b"], lengths=[3, 4])
    assert r.max_abs_diff == pytest.approx(3.0)
    assert r.mean_abs_diff == pytest.approx((0.5 + 0 + 3 + 3) / 4)
    assert r.agreement == pytest.approx(0.5)
    assert r.n_decisions == 2
    # signal 1+4+9 = 14, noise 0.25+9+9 = 18.25
    assert r.sqnr_db == pytest.approx(10 * math.log10(14 / 18.25))
    assert not r.passed
    assert any("max |diff|" in f for f in r.failures)
    assert any("SQNR" in f for f in r.failures)
    assert r.worst[0].text == "b" and r.worst[0].length == 4
    # Both margins (1 and 3) are within twice the example's own error (0.5 and 3): near-ties.
    assert r.near_ties == 2 and r.n_decisive == 0 and r.decisive_agreement is None


def _cls_set(n: int, err: float, margin: float = 1.0):
    """n two-class examples with reference margin ``margin`` and an artifact off by ``err`` on one logit."""
    ref = [[np.array([[margin, 0.0]])] for _ in range(n)]
    act = [[np.array([[margin - err, 0.0]])] for _ in range(n)]
    return ref, act


INT8 = Thresholds.default_for(Quant.INT8)


def test_a_near_tie_flip_does_not_fail_a_good_artifact():
    ref, act = _cls_set(30, 0.01)
    ref.append([np.array([[0.004, 0.0]])])  # fp32 barely decides; the artifact's noise flips it
    act.append([np.array([[0.0, 0.004]])])
    r = compare(CLS, ref, act, Thresholds(min_agreement=0.99))
    assert r.agreement < 0.99  # raw agreement would refuse it
    assert r.near_ties == 1 and r.decisive_agreement == 1.0 and r.passed, r.failures


def test_a_clear_flip_fails_even_when_its_own_error_is_large():
    ref, act = _cls_set(30, 0.01)
    ref.append([np.array([[0.8, 0.0]])])  # a clear decision, flipped by an error far beyond the others'
    act.append([np.array([[0.0, 0.8]])])
    r = compare(CLS, ref, act, Thresholds(min_agreement=0.99))
    assert r.near_ties == 0 and r.decisive_agreement == pytest.approx(30 / 31)
    assert not r.passed and any("decisive agreement" in f and "1 of 31" in f for f in r.failures)


def test_per_example_floor_catches_one_bad_example_that_pooled_metrics_hide():
    ref, act = _cls_set(200, 0.001, margin=10.0)
    ref.append([np.array([[10.0, 0.0]])])
    act.append([np.array([[6.0, 0.0]])])  # 8 dB on this one example; pooled SQNR stays ~31 dB
    lengths = list(range(1, 202))
    r = compare(CLS, ref, act, INT8, texts=[f"t{i}" for i in range(201)], lengths=lengths)
    assert r.sqnr_db > 30 and r.agreement == 1.0
    assert not r.passed and any("per-example SQNR floor" in f and "'t200'" in f for f in r.failures)
    ok = compare(CLS, ref[:-1], act[:-1], INT8, lengths=lengths[:-1])
    assert ok.passed, ok.failures


def test_per_example_floor_judges_near_zero_outputs_against_the_typical_example():
    ref, act = _cls_set(50, 0.05, margin=3.0)
    ref.append([np.array([[0.02, -0.02]])])  # a neutral text: tiny logits, the usual small error
    act.append([np.array([[-0.02, 0.03]])])
    r = compare(CLS, ref, act, INT8)
    assert r.passed, r.failures  # its own SQNR (-4 dB) would have failed it
    act[-1] = [np.array([[-1.0, 1.0]])]  # the same text, now badly wrong against what outputs look like
    assert any("per-example SQNR floor" in f for f in compare(CLS, ref, act, INT8).failures)


def test_a_length_bucket_fails_on_its_own():
    ref, act = _cls_set(100, 0.001, margin=10.0)
    lengths = [10] * 100
    for _ in range(3):  # three long examples, each 18 dB: above the per-example floor, below 20 dB
        ref.append([np.array([[10.0, 0.0]])])
        act.append([np.array([[8.75, 0.0]])])
        lengths.append(300)
    r = compare(CLS, ref, act, INT8, lengths=lengths)
    assert r.sqnr_db > 20 and r.min_example_sqnr_db > 15
    assert not r.passed and any(f.startswith("length bucket 257-512 tokens (3 examples): SQNR") for f in r.failures)
    two = compare(CLS, ref[:-1], act[:-1], INT8, lengths=lengths[:-1])  # 2 examples: too few to gate alone
    assert two.passed, two.failures


def test_compare_token_and_span_decisions():
    ref = [[np.array([[[0.0, 1.0], [1.0, 0.0], [0.0, 2.0]]])]]
    act = [[np.array([[[0.0, 1.0], [0.0, 1.0], [0.0, 2.0]]])]]
    r = compare(TOK, ref, act, Thresholds(min_agreement=0.5))
    assert r.n_decisions == 3 and r.agreement == pytest.approx(2 / 3) and r.passed
    start, end = np.array([[0.1, 0.9, 0.0]]), np.array([[0.0, 0.2, 0.8]])
    r = compare(QA, [[start, end]], [[start, np.array([[0.9, 0.2, 0.8]])]], Thresholds())
    assert r.n_decisions == 2 and r.agreement == pytest.approx(0.5)


def test_feature_extraction_has_no_agreement_and_checks_cosine():
    h = np.ones((1, 2, 4))
    r = compare(FE, [[h]], [[h * 1.01]], Thresholds(min_agreement=0.99, min_sqnr_db=20.0))
    assert r.agreement is None and r.n_decisions == 0
    assert r.min_cosine == pytest.approx(1.0)
    assert r.passed  # 40 dB


def test_non_finite_output_fails():
    ref = [[np.array([[1.0, 2.0]])]]
    act = [[np.array([[np.nan, 2.0]])]]
    r = compare(CLS, ref, act, Thresholds(max_abs_diff=1e-4))
    assert not r.passed and r.max_abs_diff == math.inf


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="shape"):
        compare(CLS, [[np.zeros((1, 2))]], [[np.zeros((1, 3))]], Thresholds())
