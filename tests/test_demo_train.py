"""Pieces of the demo training script that the committed checkpoint's recipe depends on."""

from __future__ import annotations

import torch
from transformers import AlbertConfig, AlbertModel

from mobile_export.demo.train import _load_encoder, _save_encoder, build_vocab


def _encoder(positions: int) -> AlbertModel:
    torch.manual_seed(positions)
    return AlbertModel(AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=12, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=24, max_position_embeddings=positions),
                       add_pooling_layer=False)


def test_encoder_from_shorter_pretraining_repeats_its_positions(tmp_path):
    short, long = _encoder(8), _encoder(20)
    path = tmp_path / "enc.safetensors"
    _save_encoder(short, str(path))
    missing = _load_encoder(long, str(path))
    assert missing == []
    have = short.embeddings.position_embeddings.weight
    got = long.embeddings.position_embeddings.weight
    assert got.shape == (20, 8)
    assert torch.equal(got[:8], have) and torch.equal(got[8:16], have) and torch.equal(got[16:], have[:4])
    assert torch.equal(long.embeddings.word_embeddings.weight, short.embeddings.word_embeddings.weight)


def test_encoder_of_the_same_length_loads_unchanged(tmp_path):
    a, b = _encoder(8), _encoder(8)
    path = tmp_path / "enc.safetensors"
    _save_encoder(a, str(path))
    _load_encoder(b, str(path))
    for (k, va), vb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(va, vb), k


def test_vocab_starts_with_the_bert_specials_and_spells_latin_words():
    vocab = build_vocab(["好吃好吃好吃", "ok ok ok", "好的ok"], min_count=3)
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert "好" in vocab and "吃" in vocab and "的" not in vocab
    assert "o" in vocab and "##o" in vocab and "##好" not in vocab
