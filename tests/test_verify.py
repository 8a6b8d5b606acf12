"""Parity metrics against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mobile_export.config import Thresholds
from mobile_export.tasks import get_task
from mobile_export.verify import compare, cosine, sqnr_db

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
    assert any("agreement 50.00%" in f for f in r.failures)
    assert any("SQNR" in f for f in r.failures)
    assert r.worst[0].text == "b" and r.worst[0].length == 4


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
