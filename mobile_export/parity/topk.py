"""Parity of a top-k head (``--head topk``): the artifact's candidates judged by the fp32 reference's
probabilities of the same token ids.

Per masked slot the reference gives every token's probability; the artifact gives K ids and their
scores. Compared values: the artifact's scores against fp32's probabilities of those very ids (max
|diff|, SQNR, cosine). Decision: the artifact's first id against fp32's top-1; the rows decisions are
read from hold fp32's probabilities of the artifact's K ids and of the two best ids the artifact did
not return, so fp32's top-1 and its margin over the runner-up are exact. Overlap: how many of fp32's
top K ids the artifact returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

MASK_SHARE = 0.15  # of a parity text's tokens masked, as in BERT-style pretraining (at least one)


def masked(examples: list[Any], mask_id: int, slots: int) -> list[Any]:
    """Parity texts for a top-k head: each text without a ``[MASK]`` gets ``MASK_SHARE`` of its tokens
    (at least one, at most ``slots``) replaced by ``[MASK]`` at evenly spaced positions (deterministic:
    the same text is masked the same way in every run and runtime). Texts that have masks keep them."""
    out = []
    for ex in examples:
        ids = ex.feeds["input_ids"]
        real = ids.shape[1] - 2  # without [CLS] and [SEP]
        if real < 1 or np.any(ids == mask_id):
            out.append(ex)
            continue
        n = min(slots, max(1, round(MASK_SHARE * real)))
        positions = 1 + (np.arange(n) * real) // n + (real // (2 * n))
        new = ids.copy()
        new[0, np.minimum(positions, real)] = mask_id
        out.append(replace(ex, feeds={**ex.feeds, "input_ids": new}))
    return out


@dataclass(frozen=True)
class TopKView:
    """One example's top-k outputs in the form the parity accumulator reads."""

    reference: list[np.ndarray]  # fp32 probabilities of the artifact's ids, [slots, K]
    actual: list[np.ndarray]  # the artifact's scores, [slots, K]
    reference_rows: np.ndarray  # [slots, K + 2]: the K ids, then the two best ids not returned
    actual_rows: np.ndarray  # [slots, K + 2]: the artifact's scores, then -inf (never its choice)
    overlap: tuple[int, int]  # (fp32 top-K ids the artifact returned, K x slots)


def topk_view(reference: Sequence[np.ndarray], actual: Sequence[np.ndarray]) -> TopKView:
    """``reference``: positions, ids, scores, slot probabilities (fp32); ``actual``: positions, ids, scores."""
    positions = np.asarray(reference[0]).reshape(-1)
    probs = np.asarray(reference[3], dtype=np.float64).reshape(positions.size, -1)
    ids = np.asarray(actual[1]).reshape(positions.size, -1).astype(np.int64)
    scores = np.asarray(actual[2], dtype=np.float64).reshape(positions.size, -1)
    valid = positions >= 0
    if not np.array_equal(np.asarray(actual[0]).reshape(-1), positions):
        valid[:] = True  # the artifact found other masks: every slot counts, and its ids are compared as given
    probs, ids, scores = probs[valid], ids[valid], scores[valid]
    n, k = ids.shape
    vocab = probs.shape[1]
    inside = (ids >= 0) & (ids < vocab)
    safe = np.where(inside, ids, 0)
    at_ids = np.where(inside, np.take_along_axis(probs, safe, axis=1), 0.0)
    rest = probs.copy()
    np.put_along_axis(rest, safe, -np.inf, axis=1)
    # the two best ids not returned (order does not matter to argmax and margins): a partition, not a sort
    two = np.partition(rest, -2, axis=1)[:, -2:] if vocab > 1 else np.full((n, 2), -np.inf)
    reference_rows = np.concatenate([at_ids, two], axis=1)
    actual_rows = np.concatenate([scores, np.full((n, 2), -np.inf)], axis=1)
    top = np.argpartition(-probs, min(k, vocab) - 1, axis=1)[:, :k] if n else np.zeros((0, k), np.int64)
    hits = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(ids, top))
    return TopKView([at_ids], [scores], reference_rows, actual_rows, (int(hits), int(n * k)))
