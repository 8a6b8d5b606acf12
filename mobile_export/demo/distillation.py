"""Soft labels from an out-of-fold char n-gram teacher, and teacher-labelled perturbed copies."""

from __future__ import annotations

import random

from .steps import encode

MASK_CHAR = "\ue000"  # a masked character in augmented text: [MASK] for the student, an unknown char for the teacher


def augment_text(text: str, rng: random.Random, crop: float = 0.3, mask: float = 0.1) -> str:
    """A perturbed copy of a review for teacher-labelled training (as Tang et al., 2019, distilled BERT).

    With probability ``crop`` keep only a random contiguous span (at least a third of the text), then
    replace each character with ``MASK_CHAR`` with probability ``mask``.
    """
    if crop and len(text) > 4 and rng.random() < crop:
        n = rng.randint(max(2, len(text) // 3), len(text))
        start = rng.randint(0, len(text) - n)
        text = text[start : start + n]
    return "".join(MASK_CHAR if not ch.isspace() and rng.random() < mask else ch for ch in text)


def teacher_probs(
    rows: list[tuple[str, int]],
    seed: int,
    ngram: int = 3,
    c: float = 4.0,
    window: int | None = None,
    folds: int = 5,
    extra: list[list[str]] | None = None,
) -> tuple[list[list[float]], list[list[list[float]]]]:
    """Out-of-fold [p(negative), p(positive)] for each training review from a char n-gram TF-IDF + LR.

    ``window``: the teacher reads only the first ``window`` characters (what the student sees).
    ``extra[i]``: other texts (augmented copies of review i), labelled by the same fold's teacher, one that
    did not see review i. Returns (probabilities of the reviews, probabilities of their extra texts).
    """
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    texts = [t[:window] for t, _ in rows]
    y = np.array([label for _, label in rows])
    fold = np.random.default_rng(seed).permutation(len(rows)) % folds
    out = np.zeros((len(rows), 2))
    out_extra: list[list[list[float]]] = [[] for _ in rows]
    for k in range(folds):
        fit, held = fold != k, fold == k
        vec = TfidfVectorizer(analyzer="char", ngram_range=(1, ngram), sublinear_tf=True, min_df=2)
        x = vec.fit_transform([t for t, f in zip(texts, fit) if f])
        clf = LogisticRegression(C=c, max_iter=2000).fit(x, y[fit])
        out[held] = clf.predict_proba(vec.transform([t for t, h in zip(texts, held) if h]))
        pairs = [(i, e[:window]) for i in np.flatnonzero(held) for e in extra[i]] if extra else []
        if pairs:
            for (i, _), pr in zip(pairs, clf.predict_proba(vec.transform([e for _, e in pairs])).tolist()):
                out_extra[i].append(pr)
    return out.tolist(), out_extra


def attach_teacher(a, splits, train_rows, tok) -> list:
    """The training rows with the out-of-fold teacher's probabilities, plus the augmented copies."""
    window = a.max_len - 2 if a.teacher_window else None
    aug_rng = random.Random(a.seed)
    extra_texts = (
        [[augment_text(t, aug_rng) for _ in range(a.augment)] for t, _ in splits["train"]] if a.augment else None
    )
    teacher, extra_probs = teacher_probs(
        splits["train"], a.seed, a.teacher_ngram, a.teacher_c, window, extra=extra_texts
    )
    rows = [(ids, y, tuple(pr)) for (ids, y), pr in zip(train_rows, teacher)]
    print(
        f"teacher (out-of-fold) accuracy on train: "
        f"{sum(int((pr[1] > 0.5) == (y == 1)) for (_, y), pr in zip(splits['train'], teacher)) / len(teacher):.4f}",
        flush=True,
    )
    if a.augment and extra_texts is not None:
        # label -1: no hard label, the loss is the teacher's soft labels alone
        copies = encode(
            tok, [(t.replace(MASK_CHAR, tok.mask_token), -1) for texts in extra_texts for t in texts], a.max_len
        )
        probs = [pr for per_review in extra_probs for pr in per_review]
        rows += [(ids, y, tuple(pr)) for (ids, y), pr in zip(copies, probs)]
        print(f"augmented copies: {len(copies)}", flush=True)
    return rows


def distill_loss(logits, y, distill: float):
    """Cross-entropy; with teacher labels, (1 - distill) hard + distill soft (soft only where no hard label)."""
    import torch

    if not isinstance(y, tuple):
        return torch.nn.functional.cross_entropy(logits, y)
    y, soft = y
    soft_ce = -(soft * torch.log_softmax(logits, -1)).sum(-1)
    hard = y >= 0
    hard_ce = torch.nn.functional.cross_entropy(logits, y.clamp(min=0), reduction="none")
    return torch.where(hard, (1 - distill) * hard_ce + distill * soft_ce, soft_ce).mean()
