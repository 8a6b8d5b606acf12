"""A task's raw outputs -> typed results, by the rules transformers' pipelines apply (numpy only).

text-classification: softmax over the labels (sigmoid for one label or multi-label models);
token-classification: softmax per token, argmax, special tokens dropped, consecutive tokens of one tag
grouped unless a ``B-`` starts a new one (the pipelines' ``simple`` aggregation), ``O`` dropped;
question-answering: softmax of start and end logits over the context tokens (and ``[CLS]``), ``[CLS]``
then zeroed, the best start<=end span of at most ``max_answer_len`` tokens by start*end probability;
fill-mask: softmax over the vocabulary at each ``[MASK]``, the top k.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .results import Answer, Classification, Entity, Fill, MaskFills

MAX_ANSWER_TOKENS = 15  # the pipelines' default max_answer_len


@dataclass(frozen=True)
class Encoded:
    """One tokenized input with what decoding needs besides the ids."""

    text: str  # the text the offsets point into (the context for question answering)
    ids: np.ndarray  # int64 [S]
    offsets: list[tuple[int, int]]
    special: np.ndarray  # bool [S]: [CLS], [SEP], ...
    sequence_ids: list[int | None]  # 0: first text, 1: second (the context), None: special
    types: np.ndarray  # int64 [S]: the token type ids the tokenizer gives


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax in float64."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def classify(logits: np.ndarray, labels: Sequence[str], function: str) -> Classification:
    """Sequence logits [num_labels] -> the top label and all scores (``function``: softmax, sigmoid or none)."""
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    if function == "softmax":
        scores = softmax(logits)
    elif function == "sigmoid":
        scores = 1.0 / (1.0 + np.exp(-logits))
    else:
        scores = logits
    names = list(labels) if len(labels) == len(scores) else [f"LABEL_{i}" for i in range(len(scores))]
    best = int(np.argmax(scores))
    return Classification(names[best], float(scores[best]), {n: float(s) for n, s in zip(names, scores)})


def _tag(label: str) -> tuple[str, str]:
    """(B or I, entity type) of a tag; a tag without a B-/I- prefix continues like an I-."""
    if label.startswith(("B-", "I-")):
        return label[0], label[2:]
    return "I", label


def entities(
    logits: np.ndarray,
    enc: Encoded,
    labels: Sequence[str],
    token_of: Callable[[int], str],
    join: Callable[[list[str]], str],
    unk_id: int | None,
) -> list[Entity]:
    """Token logits [S, num_labels] -> entities with character spans (``token_of``: id -> token string,
    ``join``: tokens -> text, the tokenizer's own rules)."""
    probs = softmax(np.asarray(logits)[: len(enc.ids)])
    tokens = []
    for i, row in enumerate(probs):
        if enc.special[i]:
            continue
        k = int(np.argmax(row))
        start, end = enc.offsets[i]
        tid = int(enc.ids[i])
        word = enc.text[start:end] if tid == unk_id else token_of(tid)
        tokens.append((labels[k] if k < len(labels) else f"LABEL_{k}", float(row[k]), word, start, end))
    groups: list[list[tuple[str, float, str, int, int]]] = []
    for tok in tokens:
        bi, tag = _tag(tok[0])
        if groups and _tag(groups[-1][-1][0])[1] == tag and bi != "B":
            groups[-1].append(tok)
        else:
            groups.append([tok])
    found = []
    for group in groups:
        label = group[0][0].split("-", 1)[-1]
        if label == "O":
            continue
        score = float(np.mean([t[1] for t in group]))
        found.append(Entity(label, score, join([t[2] for t in group]), int(group[0][3]), int(group[-1][4])))
    return found


def answer(
    start_logits: np.ndarray, end_logits: np.ndarray, enc: Encoded, max_tokens: int = MAX_ANSWER_TOKENS
) -> Answer:
    """Start/end logits [S] -> the best answer span in the context (``enc.sequence_ids`` 1)."""
    n = len(enc.ids)
    allowed = np.array([s == 1 for s in enc.sequence_ids], dtype=bool)
    allowed[0] = True  # [CLS] takes part in the softmax (models mark "no answer" there), then is zeroed
    start = np.where(allowed, np.asarray(start_logits, dtype=np.float64).reshape(-1)[:n], -10000.0)
    end = np.where(allowed, np.asarray(end_logits, dtype=np.float64).reshape(-1)[:n], -10000.0)
    p_start, p_end = softmax(start), softmax(end)
    p_start[0] = p_end[0] = 0.0
    spans = np.triu(np.outer(p_start, p_end))  # end >= start
    spans = np.tril(spans, max_tokens - 1)  # at most max_tokens long
    context = np.array([s == 1 for s in enc.sequence_ids], dtype=bool)
    spans[~context, :] = 0.0
    spans[:, ~context] = 0.0
    if not spans.any():
        return Answer("", 0.0, 0, 0)
    i, j = np.unravel_index(int(np.argmax(spans)), spans.shape)
    first, last = enc.offsets[i][0], enc.offsets[j][1]
    return Answer(enc.text[first:last], float(spans[i, j]), int(first), int(last))


def fill_mask(
    logits: np.ndarray, enc: Encoded, mask_id: int, top_k: int, token_of: Callable[[int], str]
) -> list[MaskFills]:
    """Token logits [S, vocab] -> the top-k fills at every ``[MASK]``."""
    logits = np.asarray(logits)
    out = []
    for pos in np.flatnonzero(enc.ids == mask_id):
        probs = softmax(logits[pos])
        k = min(top_k, probs.size)
        best = np.argpartition(-probs, k - 1)[:k]
        best = best[np.argsort(-probs[best], kind="stable")]
        out.append(MaskFills(int(pos), tuple(Fill(int(t), token_of(int(t)), float(probs[t])) for t in best)))
    return out


def top_k_slots(
    positions: np.ndarray, ids: np.ndarray, scores: np.ndarray, top_k: int, token_of: Callable[[int], str]
) -> list[MaskFills]:
    """A top-k head's outputs ([slots], [slots, K], [slots, K]) -> the fills of its occupied slots."""
    out = []
    for slot, pos in enumerate(np.asarray(positions).reshape(-1)):
        if pos < 0:
            continue
        fills = tuple(Fill(int(t), token_of(int(t)), float(p)) for t, p in zip(ids[slot][:top_k], scores[slot][:top_k]))
        out.append(MaskFills(int(pos), fills))
    return out
