"""Tiny seeded checkpoints built in code (ALBERT, and BERT, ELECTRA, DistilBERT): for tests and for the demo when
no trained model is at hand.

``python -m mobile_export.demo.tiny DEST [--family F] [--task T] [--tokenizer wordpiece|sentencepiece] [--seed N]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..parity.texts import builtin_texts

SPECIALS_WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_ARCH = {
    "text-classification": "ForSequenceClassification",
    "token-classification": "ForTokenClassification",
    "question-answering": "ForQuestionAnswering",
    "fill-mask": "ForMaskedLM",
    "feature-extraction": "Model",
}
_PREFIX = {"albert": "Albert", "bert": "Bert", "electra": "Electra", "distilbert": "DistilBert"}
# DistilBERT's config names the same sizes otherwise
_DISTILBERT_NAMES = {
    "hidden_size": "dim",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "intermediate_size": "hidden_dim",
    "hidden_act": "activation",
    "hidden_dropout_prob": "dropout",
    "attention_probs_dropout_prob": "attention_dropout",
}


def _wordpiece_vocab(texts: list[str]) -> list[str]:
    import unicodedata

    chars: set[str] = set()
    words: set[str] = set()
    for t in texts:
        for w in t.lower().split():
            w = "".join(c for c in unicodedata.normalize("NFD", w) if unicodedata.category(c) != "Mn")
            core = "".join(c for c in w if c.isalnum())
            if len(core) > 2 and core.isascii():
                words.add(core)
                words.add("##" + core[1:])
            chars.update(w)
    pieces = sorted(chars) + sorted("##" + c for c in chars if c.isalnum()) + sorted(words)
    return SPECIALS_WORDPIECE + [p for p in dict.fromkeys(pieces) if p.strip() and p not in SPECIALS_WORDPIECE]


def train_sentencepiece(texts: list[str], prefix: Path, vocab_size: int = 200) -> Path:
    """Train an ALBERT-style unigram SentencePiece model (<pad>=0 <unk>=1 [CLS]=2 [SEP]=3 [MASK]=4)."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(prefix),
        vocab_size=vocab_size,
        model_type="unigram",
        pad_id=0,
        unk_id=1,
        bos_id=-1,
        eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
        normalization_rule_name="nmt_nfkc",
    )
    return prefix.with_suffix(".model")


def build_tiny_checkpoint(
    dest: str | Path,
    task: str = "text-classification",
    tokenizer: str = "wordpiece",
    seed: int = 0,
    texts: list[str] | None = None,
    family: str = "albert",
    **config_overrides,
) -> Path:
    """Write a seeded, randomly initialised checkpoint folder (config, safetensors, tokenizer) of ``family``.

    Args:
        dest: folder to create.
        task: one of the supported tasks; decides the architecture and head.
        tokenizer: ``wordpiece`` (vocab.txt, like albert_chinese_* and every BERT) or ``sentencepiece``
            (spiece.model, ALBERT's).
        seed: torch seed for the weights.
        texts: text to build the vocabulary from; the built-in parity text by default.
        family: ``albert``, ``bert``, ``electra`` or ``distilbert``.
        config_overrides: config fields to change (num_hidden_layers, hidden_size, ... in BERT's names for every
            family); and
            ``wordpiece_size`` (a WordPiece vocabulary padded to that many entries with ``[unusedN]``) or
            ``sp_vocab_size`` (the SentencePiece model's size).

    Returns:
        ``dest`` as a Path.
    """
    import torch
    import transformers
    from transformers import AutoConfig

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    texts = list(texts or builtin_texts())
    tok = _write_tokenizer(dest, tokenizer, texts, config_overrides)
    params = _config_fields(tok, task, family, config_overrides)
    config = AutoConfig.for_model(family, **params)
    architecture = _PREFIX[family] + _ARCH[task]
    config.architectures = [architecture]
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(config).eval()
    model.save_pretrained(str(dest), safe_serialization=True)
    cfg = json.loads((dest / "config.json").read_text())
    assert cfg["model_type"] == family
    return dest


def _write_tokenizer(dest: Path, tokenizer: str, texts: list[str], overrides: dict):
    """Write a tokenizer of ``tokenizer``'s kind trained on ``texts`` into ``dest`` and return it (pops the
    vocabulary size ``overrides`` name)."""
    from transformers import AlbertTokenizer, BertTokenizer

    if tokenizer == "wordpiece":
        vocab = _wordpiece_vocab(texts)
        # a larger vocabulary (up to albert-base's 30,000) as BERT's vocabularies grow one: unused slots
        vocab += [f"[unused{i}]" for i in range(int(overrides.pop("wordpiece_size", 0)) - len(vocab))]
        (dest / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
        tok = BertTokenizer.from_pretrained(str(dest))
    elif tokenizer == "sentencepiece":
        train_sentencepiece(texts * 4, dest / "spiece", vocab_size=int(overrides.pop("sp_vocab_size", 200)))
        (dest / "spiece.vocab").unlink(missing_ok=True)
        tok = AlbertTokenizer.from_pretrained(str(dest))
    else:
        raise ValueError(f"tokenizer must be wordpiece or sentencepiece, not {tokenizer}")
    tok.save_pretrained(str(dest))
    for extra in ("tokenizer.json",):  # keep the folder like the real ones: vocab + config
        (dest / extra).unlink(missing_ok=True)
    return tok


def _config_fields(tok, task: str, family: str, overrides: dict) -> dict:
    """The config fields of a tiny ``family`` checkpoint for ``task`` (in the family's own names)."""
    params = dict(
        vocab_size=len(tok),
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=160,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=0.2,
        pad_token_id=tok.pad_token_id,
    )
    if task in ("text-classification", "token-classification"):
        params.update(
            num_labels=3,
            id2label={0: "negative", 1: "neutral", 2: "positive"},
            label2id={"negative": 0, "neutral": 1, "positive": 2},
        )
    if family != "albert":  # BERT's own activation; only ELECTRA of the others has an embedding width of its own
        params["hidden_act"] = "gelu"
        if family != "electra":
            params.pop("embedding_size")
    params.update(overrides)
    if family == "distilbert":
        params = {_DISTILBERT_NAMES.get(k, k): v for k, v in params.items() if k != "type_vocab_size"}
        params.update(seq_classif_dropout=0.0, qa_dropout=0.0)
    return params


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mobile_export.demo.tiny", description=__doc__)
    p.add_argument("dest")
    p.add_argument("--family", default="albert", choices=sorted(_PREFIX))
    p.add_argument("--task", default="text-classification", choices=sorted(_ARCH))
    p.add_argument("--tokenizer", default="wordpiece", choices=["wordpiece", "sentencepiece"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=2)
    a = p.parse_args(argv)
    path = build_tiny_checkpoint(a.dest, a.task, a.tokenizer, a.seed, family=a.family, num_hidden_layers=a.layers)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
