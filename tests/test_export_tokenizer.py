"""The tokenizer ``load`` and ``run`` use (``run.tokenizer.ExportTokenizer``: the ``tokenizers`` package alone) gives
what transformers' fast tokenizer gives from the same export (ids, type ids, offsets, special-token mask, sequence
ids, truncation of single texts and of pairs, decoding), for every family's tokenizer kind and the demo's, and what
the checkpoint's own tokenizer gives (``AutoTokenizer``)."""

from __future__ import annotations

import json

import pytest

from mobile_export.assets.tokenizer import write_tokenizer
from mobile_export.demo import MODEL_DIR
from mobile_export.demo.data import load_reviews
from mobile_export.parity.texts import builtin_texts
from mobile_export.run.tokenizer import ExportTokenizer

EDGES = [
    "a [MASK] phone", "[MASK]", "two [MASK][MASK] masks", "[mask] lower", "[CLS] inside [SEP] text [PAD] [UNK]",
    "  spaces   around  ", "Ünïcödé àccents café", "emoji 😀👍🏽 and ☃\u200d‼", "混合 text 中文，标点！",
    "tab\tnew\nline",
    "\u0000control\u0007", "x" * 300, "word " * 200, "ﬁ ligature ㎏ Ⅱ", "é" * 3 + "\u0301",
]


def _texts() -> list[str]:
    reviews = [t for t, _ in load_reviews()["test"][:120]]
    return builtin_texts() + EDGES + reviews


CASES = [("albert", "wordpiece"), ("albert", "sentencepiece"), ("bert", "wordpiece"), ("electra", "wordpiece"),
         ("distilbert", "wordpiece"), ("roberta", "bpe"), ("xlm-roberta", "xlmr"), ("camembert", "camembert"),
         ("demo", "wordpiece")]


@pytest.fixture(scope="module", params=CASES, ids=[f"{f}-{k}" for f, k in CASES])
def tokenizers_pair(request, tiny_checkpoint, tmp_path_factory):
    """(ours, transformers' fast tokenizer over the same export file, the checkpoint's own AutoTokenizer)."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    family, kind = request.param
    ckpt = MODEL_DIR if family == "demo" else tiny_checkpoint("text-classification", kind, family=family)
    dest = tmp_path_factory.mktemp(f"tok-{family}-{kind}")
    write_tokenizer(ckpt, dest, 64)
    settings = json.loads((dest / "tokenizer_settings.json").read_text())
    spec = (dest / "tokenizer.json").read_text(encoding="utf-8")
    special = {role: v["token"] for role, v in settings["special_tokens"].items()}
    theirs = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(spec), model_max_length=64,
                                     **{f"{r}_token": t for r, t in special.items()})
    return ExportTokenizer(spec, special), theirs, AutoTokenizer.from_pretrained(str(ckpt))


def _theirs(tok, text, pair=None, **kw):
    enc = tok(text, pair, return_token_type_ids=True, return_offsets_mapping=True, return_special_tokens_mask=True,
              **kw)
    return (enc["input_ids"], enc["token_type_ids"], [tuple(o) for o in enc["offset_mapping"]],
            enc["special_tokens_mask"], enc.sequence_ids())


def _ours(tok, text, pair=None, **kw):
    enc = tok.encode(text, pair, **kw)
    return enc.ids, enc.type_ids, [tuple(o) for o in enc.offsets], enc.special_tokens_mask, enc.sequence_ids


def test_single_texts_untruncated_and_truncated(tokenizers_pair):
    ours, fast, auto = tokenizers_pair
    for text in _texts():
        want = _theirs(fast, text)
        assert _ours(ours, text) == want, text
        assert _theirs(auto, text) == want, text  # the export's file is the checkpoint's tokenizer
        assert ours.count(text) == len(want[0])
        assert ours.count(text, add_special_tokens=False) == len(fast(text, add_special_tokens=False)["input_ids"])
        for n in (5, 16, 64):
            assert _ours(ours, text, truncation="longest_first", max_length=n) == _theirs(
                fast, text, truncation=True, max_length=n), (text, n)


def test_pairs_with_only_the_second_truncated(tokenizers_pair):
    ours, fast, _ = tokenizers_pair
    texts = _texts()
    for question, context in zip(texts[:40], reversed(texts)):
        assert _ours(ours, question, context) == _theirs(fast, question, context)
        q = fast(question, add_special_tokens=False)["input_ids"]
        if len(q) + fast.num_special_tokens_to_add(pair=True) + 1 <= 64:  # room for one token of the context
            got = _ours(ours, question, context, truncation="only_second", max_length=64)
            assert got == _theirs(fast, question, context, truncation="only_second", max_length=64)
            assert len(got[0]) <= 64


def test_decoding_and_special_tokens(tokenizers_pair):
    ours, fast, _ = tokenizers_pair
    size = len(fast)
    ids = list(range(size)) + [size + 3]  # an id outside the vocabulary too
    assert [ours.id_to_token(i) for i in ids] == [fast.convert_ids_to_tokens(i) or "" for i in ids]
    for i in range(size):
        assert ours.decode([i]) == fast.decode([i]), i
    for text in _texts()[:60]:
        tokens = fast.convert_ids_to_tokens(fast(text)["input_ids"])
        assert ours.convert_tokens_to_string(tokens) == fast.convert_tokens_to_string(tokens)
        assert ours.decode(fast(text)["input_ids"]) == fast.decode(fast(text)["input_ids"])
    assert (ours.mask_token, ours.mask_token_id, ours.unk_token_id, ours.pad_token_id) == (
        fast.mask_token, fast.mask_token_id, fast.unk_token_id, fast.pad_token_id)


def test_a_piece_missing_from_the_file_is_seen():
    """The comparison can fail: a tokenizer whose vocabulary lost one piece gives other ids than transformers'."""
    from transformers import AutoTokenizer

    auto = AutoTokenizer.from_pretrained(str(MODEL_DIR))
    spec = json.loads(auto.backend_tokenizer.to_str())
    vocab = spec["model"]["vocab"]
    word = next(w for w in sorted(vocab, key=vocab.get, reverse=True)
                if not w.startswith(("##", "[")) and auto(w, add_special_tokens=False)["input_ids"] == [vocab[w]])
    del vocab[word]
    ours = ExportTokenizer(json.dumps(spec), {"unk": "[UNK]"})
    assert ours.encode(word, add_special_tokens=False).ids != auto(word, add_special_tokens=False)["input_ids"]
