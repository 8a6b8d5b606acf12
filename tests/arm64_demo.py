"""The demo's ARM64 parity inputs that ``test_arm64`` and ``test_arm64_sme2`` share: a fixed sample of its test
split, written as a labelled data file."""

from __future__ import annotations

from pathlib import Path

from mobile_export.demo import MODEL_DIR as DEMO
from mobile_export.parity.metrics import BUCKETS, bucket_of


def write_sample(dest: Path, per_bucket: int = 5, longest: int = 4, first: int | None = None,
                 up_to: int | None = None) -> int:
    """The first ``per_bucket`` reviews of each length bucket (of the buckets that start at or below ``up_to`` tokens,
    when given: a longer review is cut to the artifact's length, a length the checker's own texts already run) and the
    ``longest`` ones (only the ``first`` of them, in the split's order, when given), as a TSV at ``dest``; returns how
    many."""
    from transformers import AutoTokenizer

    from mobile_export.demo.data import load_reviews

    tokenizer = AutoTokenizer.from_pretrained(str(DEMO))
    reviews = load_reviews()["test"]
    lengths = [len(tokenizer(t)["input_ids"]) for t, _ in reviews]
    chosen: list[int] = []
    for k, (low, _) in enumerate(BUCKETS):
        if up_to is None or low <= up_to:
            chosen += [i for i, n in enumerate(lengths) if bucket_of(n) == k][:per_bucket]
    chosen += sorted(range(len(reviews)), key=lambda i: -lengths[i])[:longest]
    sample = [reviews[i] for i in sorted(set(chosen))][:first]
    dest.write_text("".join(f"{y}\t{t}\n" for t, y in sample), encoding="utf-8")
    return len(sample)
