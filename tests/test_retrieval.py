"""Retrieval agreement of sentence embeddings (``parity.retrieval``): the gate passes a file whose neighbours are
fp32's, refuses one that reorders them even with every text's cosine above the floor, and waits for enough
decisive queries before it gates."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mobile_export.core.choices import Quant
from mobile_export.core.tasks import OutputKind, get_task
from mobile_export.core.thresholds import DECISIVE_MARGIN, MIN_QUERIES, Thresholds
from mobile_export.parity.accumulate import ParityAccumulator, compare
from mobile_export.parity.retrieval import RetrievalTracker, retrieval

TASK = replace(get_task("feature-extraction"), outputs=("sentence_embedding",), kind=OutputKind.SENTENCE_EMBEDDING)
LIMITS = Thresholds.default_for_task(Quant.INT8, "sentence_embedding")


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _pairs(n: int, width: int = 64, seed: int = 0) -> np.ndarray:
    """``2n`` texts in ``n`` pairs: each text's nearest neighbour is its twin, clearly (cosine ~0.95 vs ~0)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n, width))
    return _unit(np.repeat(centres, 2, axis=0) + 0.25 * rng.standard_normal((2 * n, width)))


def _check(reference: np.ndarray, actual: np.ndarray):
    return compare(TASK, [[r[None]] for r in reference], [[a[None]] for a in actual], LIMITS)


def test_a_file_that_keeps_the_neighbours_passes():
    ref = _pairs(30)
    noisy = _unit(ref + 0.01 * np.random.default_rng(1).standard_normal(ref.shape))
    result = _check(ref, noisy)
    assert result.retrieval_queries >= MIN_QUERIES
    assert result.retrieval_agreement == 1.0
    assert result.passed, result.failures
    assert "retrieval 100.00% of" in result.headline()


def test_a_file_that_reorders_neighbours_is_refused_though_every_cosine_passes():
    rng = np.random.default_rng(0)
    ref = _unit(np.repeat(rng.standard_normal((20, 64)), 3, axis=0) + 0.35 * rng.standard_normal((60, 64)))
    sim = ref @ ref.T
    np.fill_diagonal(sim, -np.inf)
    first, second = np.argsort(-sim, axis=1)[:, :2].T
    # every text turns a little from its nearest neighbour towards its second: its cosine to fp32 stays above the
    # floor, but the two neighbours swap places
    moved = _unit(ref + 0.2 * (ref[second] - ref[first]))
    assert (ref * moved).sum(axis=1).min() >= LIMITS.min_cosine  # the cosine gate alone would pass it
    result = _check(ref, moved)
    assert result.retrieval_queries >= MIN_QUERIES
    assert result.retrieval_agreement is not None and result.retrieval_agreement < LIMITS.min_retrieval
    assert any("retrieval agreement" in f for f in result.failures), result.failures
    assert not any("cosine" in f for f in result.failures)


def test_too_few_decisive_queries_are_reported_not_gated():
    ref = _pairs(5)  # 10 texts: at most 10 queries
    flipped = ref[[1, 0, 3, 2, 5, 4, 7, 6, 9, 8]]  # every text is its twin: a different nearest neighbour
    found = retrieval(ref, np.roll(flipped, 2, axis=0))
    assert found.queries < MIN_QUERIES and not found.gated
    result = compare(TASK, [[r[None]] for r in ref], [[r[None]] for r in ref], LIMITS)
    assert result.retrieval_queries < MIN_QUERIES and result.passed


def test_only_clear_leads_count_as_queries():
    ref = _unit(np.array([[1.0, 0.0, 0.0], [1.0, 0.02, 0.0], [1.0, -0.02, 0.0], [0.0, 1.0, 0.0]]))
    found = retrieval(ref, ref)
    lead = 1 - float(ref[0] @ ref[1])
    assert lead < DECISIVE_MARGIN  # text 0's first and second neighbours are a near-tie: not a query
    assert found.queries < len(ref) and found.kept == found.queries


def test_batches_merge_into_the_whole_sets_agreement():
    ref = _pairs(15)
    noisy = _unit(ref + 0.3 * np.random.default_rng(2).standard_normal(ref.shape))
    whole = ParityAccumulator(TASK)
    first, second = ParityAccumulator(TASK), ParityAccumulator(TASK)
    for i, (r, a) in enumerate(zip(ref, noisy)):
        whole.add([r[None]], [a[None]])
        (first if i < 11 else second).add([r[None]], [a[None]])
    first.merge(second)
    a, b = whole.result(LIMITS), first.result(LIMITS)
    assert (a.retrieval_agreement, a.retrieval_queries) == (b.retrieval_agreement, b.retrieval_queries)
    assert a.retrieval_agreement == retrieval(ref, noisy).agreement


def test_a_tracker_refuses_a_text_of_another_width():
    tracker = RetrievalTracker()
    tracker.add(np.ones(4), np.ones(4))
    try:
        tracker.add(np.ones(5), np.ones(5))
    except ValueError as e:
        assert "width" in str(e)
    else:
        raise AssertionError("a 5-wide embedding after 4-wide ones was accepted")
