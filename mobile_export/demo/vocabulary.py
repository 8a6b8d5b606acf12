"""The demo's character vocabulary and its BertTokenizer files."""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path

from .tiny import SPECIALS_WORDPIECE as SPECIALS


def is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a CJK ideograph (a whole token in the demo vocabulary)."""
    cp = ord(ch)
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def is_punct(ch: str) -> bool:
    """Whether ``ch`` is punctuation as BertTokenizer splits it."""
    return (
        unicodedata.category(ch).startswith("P")
        or (33 <= ord(ch) <= 47)
        or (58 <= ord(ch) <= 64)
        or (91 <= ord(ch) <= 96)
        or (123 <= ord(ch) <= 126)
    )


def build_vocab(texts: list[str], min_count: int = 3) -> list[str]:
    """Characters of the training text (lower-cased, accents stripped as BertTokenizer does), by frequency.

    CJK characters and punctuation are whole tokens; other characters also get a ``##`` form so
    that WordPiece can spell any word made of them.
    """
    counts: Counter = Counter()
    for text in texts:
        norm = unicodedata.normalize("NFD", text.lower())
        counts.update(
            c for c in norm if unicodedata.category(c) != "Mn" and not c.isspace() and unicodedata.category(c)[0] != "C"
        )
    vocab = list(SPECIALS)
    cont = []
    for ch, n in counts.most_common():
        if n < min_count:
            break
        vocab.append(ch)
        if not is_cjk(ch) and not is_punct(ch):
            cont.append("##" + ch)
    return vocab + cont


def write_tokenizer(out: Path, vocab: list[str], max_len: int):
    """vocab.txt and tokenizer_config.json in ``out``; returns the BertTokenizer read back from them."""
    from transformers import BertTokenizer

    (out / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "BertTokenizer",
                "do_lower_case": True,
                "tokenize_chinese_chars": True,
                "strip_accents": None,
                "model_max_length": max_len,
            },
            indent=2,
        )
        + "\n"
    )
    tok = BertTokenizer.from_pretrained(str(out))
    assert len(tok) == len(vocab)
    return tok
