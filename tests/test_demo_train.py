"""Pieces of the demo training script that the committed checkpoint's recipe depends on."""

from __future__ import annotations

import random

import torch
from transformers import AlbertConfig, AlbertModel

from mobile_export.demo.distillation import MASK_CHAR, augment_text, teacher_probs
from mobile_export.demo.pretraining import load_encoder, save_encoder
from mobile_export.demo.vocabulary import build_vocab


def _encoder(positions: int) -> AlbertModel:
    torch.manual_seed(positions)
    return AlbertModel(AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=12, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=24, max_position_embeddings=positions),
                       add_pooling_layer=False)


def test_encoder_from_shorter_pretraining_repeats_its_positions(tmp_path):
    short, long = _encoder(8), _encoder(20)
    path = tmp_path / "enc.safetensors"
    save_encoder(short, str(path))
    missing = load_encoder(long, str(path))
    assert missing == []
    have = short.embeddings.position_embeddings.weight
    got = long.embeddings.position_embeddings.weight
    assert got.shape == (20, 8)
    assert torch.equal(got[:8], have) and torch.equal(got[8:16], have) and torch.equal(got[16:], have[:4])
    assert torch.equal(long.embeddings.word_embeddings.weight, short.embeddings.word_embeddings.weight)


def test_encoder_of_the_same_length_loads_unchanged(tmp_path):
    a, b = _encoder(8), _encoder(8)
    path = tmp_path / "enc.safetensors"
    save_encoder(a, str(path))
    load_encoder(b, str(path))
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k


def test_vocab_starts_with_the_bert_specials_and_spells_latin_words():
    vocab = build_vocab(["好吃好吃好吃", "ok ok ok", "好的ok"], min_count=3)
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert "好" in vocab and "吃" in vocab and "的" not in vocab
    assert "o" in vocab and "##o" in vocab and "##好" not in vocab


def test_augmented_copy_is_a_span_of_the_review_with_some_characters_masked():
    rng = random.Random(0)
    text = "这家餐厅的菜真好吃，服务也很周到，下次还会再来。" * 3
    copies = [augment_text(text, rng) for _ in range(200)]
    masked = sum(c.count(MASK_CHAR) for c in copies) / sum(len(c) for c in copies)
    assert 0.06 < masked < 0.14
    cropped = [c for c in copies if len(c) < len(text)]
    assert 30 < len(cropped) < 90  # about 30% are cut to a span
    for c in copies:
        assert len(c) >= len(text) // 3
        pattern = c.replace(MASK_CHAR, ".")
        assert any(all(p == "." or p == t for p, t in zip(pattern, text[s:s + len(c)]))
                   for s in range(len(text) - len(c) + 1)), c
    assert augment_text(text, random.Random(1)) == augment_text(text, random.Random(1))


def test_teacher_labels_augmented_copies_with_a_fold_that_did_not_see_the_review():
    good, bad = ["真好吃", "很好", "不错，喜欢", "好用", "满意"], ["太差", "很差劲", "不好，失望", "难用", "垃圾"]
    rows = [(g + str(i), 1) for i, g in enumerate(good * 4)] + [(b + str(i), 0) for i, b in enumerate(bad * 4)]
    extra = [[t + "！", t[:2]] for t, _ in rows]
    probs, extra_probs = teacher_probs(rows, seed=0, ngram=2, c=4.0, folds=5, extra=extra)
    assert len(probs) == len(rows) and [len(e) for e in extra_probs] == [2] * len(rows)
    right = sum(int((e[1] > 0.5) == (y == 1)) for (_, y), ex in zip(rows, extra_probs) for e in ex)
    assert right / (2 * len(rows)) > 0.9
    assert all(abs(sum(e) - 1) < 1e-6 for ex in extra_probs for e in ex)
    plain, none = teacher_probs(rows, seed=0, ngram=2, c=4.0, folds=5)
    assert plain == probs and none == [[] for _ in rows]
