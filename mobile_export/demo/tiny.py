"""Tiny seeded checkpoints built in code (ALBERT, and BERT, ELECTRA, DistilBERT, RoBERTa, XLM-R, CamemBERT), their
tokenizers trained here on the given text: for tests and for the demo when no trained model is at hand.

``python -m mobile_export.demo.tiny DEST [--family F] [--task T] [--tokenizer KIND] [--seed N]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..model.families import FAMILIES
from ..parity.texts import builtin_texts

SPECIALS_WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_ARCH = {
    "text-classification": "ForSequenceClassification",
    "token-classification": "ForTokenClassification",
    "question-answering": "ForQuestionAnswering",
    "fill-mask": "ForMaskedLM",
    "feature-extraction": "Model",
}
_PREFIX = {
    "albert": "Albert",
    "bert": "Bert",
    "electra": "Electra",
    "distilbert": "DistilBert",
    "roberta": "Roberta",
    "xlm-roberta": "XLMRoberta",
    "camembert": "Camembert",
}
# the tokenizer each family's checkpoints ship (ALBERT's English ones SentencePiece, its Chinese ones WordPiece)
NATIVE_TOKENIZER = {"albert": "wordpiece", "roberta": "bpe", "xlm-roberta": "xlmr", "camembert": "camembert"}
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
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


def train_byte_level_bpe(texts: list[str], dest: Path, vocab_size: int = 400) -> None:
    """Train a RoBERTa-style byte-level BPE (<s>=0 <pad>=1 </s>=2 <unk>=3 <mask>=4) into ``dest``: vocab.json and
    merges.txt, the files RoBERTa's checkpoints ship."""
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        texts, vocab_size=vocab_size, min_frequency=2, special_tokens=ROBERTA_SPECIALS, show_progress=False
    )
    bpe.save_model(str(dest))


def train_xlmr_sentencepiece(texts: list[str], dest: Path, vocab_size: int = 200) -> None:
    """Train an XLM-R-style SentencePiece model (unigram; SentencePiece's own <unk>=0 <s>=1 </s>=2, which
    XLM-R's tokenizer maps to fairseq's ids) into ``dest / sentencepiece.bpe.model``."""
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(dest / "sentencepiece.bpe"),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=1,
    )
    (dest / "sentencepiece.bpe.vocab").unlink(missing_ok=True)


def build_tiny_checkpoint(
    dest: str | Path,
    task: str = "text-classification",
    tokenizer: str | None = None,
    seed: int = 0,
    texts: list[str] | None = None,
    family: str = "albert",
    **config_overrides,
) -> Path:
    """Write a seeded, randomly initialised checkpoint folder (config, safetensors, tokenizer) of ``family``.

    Args:
        dest: folder to create.
        task: one of the supported tasks; decides the architecture and head.
        tokenizer: ``wordpiece`` (vocab.txt, like albert_chinese_* and every BERT), ``sentencepiece``
            (spiece.model, ALBERT's), ``bpe`` (RoBERTa's byte-level vocab.json + merges.txt) or ``xlmr``
            (XLM-R's sentencepiece.bpe.model) or ``camembert`` (the same file, CamemBERT's ids); None: the
            family's own (``NATIVE_TOKENIZER``, else wordpiece).
        seed: torch seed for the weights.
        texts: text to build the vocabulary from; the built-in parity text by default.
        family: ``albert``, ``bert``, ``electra``, ``distilbert``, ``roberta``, ``xlm-roberta`` or ``camembert``.
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
    tokenizer = tokenizer or NATIVE_TOKENIZER.get(family, "wordpiece")
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
    from transformers import AlbertTokenizer, BertTokenizer, CamembertTokenizer, RobertaTokenizer, XLMRobertaTokenizer

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
    elif tokenizer == "bpe":
        train_byte_level_bpe(texts * 2, dest, vocab_size=int(overrides.pop("bpe_vocab_size", 400)))
        tok = RobertaTokenizer.from_pretrained(str(dest))
    elif tokenizer in ("xlmr", "camembert"):
        train_xlmr_sentencepiece(texts * 4, dest, vocab_size=int(overrides.pop("sp_vocab_size", 200)))
        tok = (XLMRobertaTokenizer if tokenizer == "xlmr" else CamembertTokenizer).from_pretrained(str(dest))
    else:
        raise ValueError(f"tokenizer must be one of wordpiece, sentencepiece, bpe, xlmr, camembert; not {tokenizer}")
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
    after_padding = FAMILIES[family].positions_after_padding
    if after_padding:  # RoBERTa's layout: one token type; positions start after the padding index
        params.update(type_vocab_size=1, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    params.update(overrides)
    if after_padding:  # as 514 for 512 tokens: room for the padding index's offset
        params["max_position_embeddings"] += int(params["pad_token_id"]) + 1
    if family == "distilbert":
        params = {_DISTILBERT_NAMES.get(k, k): v for k, v in params.items() if k != "type_vocab_size"}
        params.update(seq_classif_dropout=0.0, qa_dropout=0.0)
    return params


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mobile_export.demo.tiny", description=__doc__)
    p.add_argument("dest")
    p.add_argument("--family", default="albert", choices=sorted(_PREFIX))
    p.add_argument("--task", default="text-classification", choices=sorted(_ARCH))
    p.add_argument("--tokenizer", default=None, choices=["wordpiece", "sentencepiece", "bpe", "xlmr", "camembert"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=2)
    a = p.parse_args(argv)
    path = build_tiny_checkpoint(a.dest, a.task, a.tokenizer, a.seed, family=a.family, num_hidden_layers=a.layers)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
