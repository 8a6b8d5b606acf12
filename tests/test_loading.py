"""Loading: both tokenizer kinds, safe pickles only, no remote code, clear errors for bad folders."""

from __future__ import annotations

import json
import pickle
import shutil

import pytest
import torch

from mobile_export import CheckpointError, UnsupportedError, load_checkpoint
from mobile_export.assets.tokenizer import tokenizer_settings


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_wordpiece_and_sentencepiece_detected(tiny_checkpoint):
    wp = load_checkpoint(tiny_checkpoint("text-classification", "wordpiece"))
    sp = load_checkpoint(tiny_checkpoint("text-classification", "sentencepiece"))
    assert wp.tokenizer_kind == "wordpiece" and type(wp.tokenizer).__name__ == "BertTokenizer"
    assert sp.tokenizer_kind == "sentencepiece" and type(sp.tokenizer).__name__ == "AlbertTokenizer"
    assert wp.task.name == sp.task.name == "text-classification"
    # the tokenizer really reads the vocabulary (transformers 5 constructors silently do not)
    ids = wp.tokenizer("这家餐厅")["input_ids"]
    assert wp.tokenizer.unk_token_id not in ids
    s = tokenizer_settings(wp.tokenizer, "wordpiece", 128)
    assert s["do_lower_case"] is True and s["tokenize_chinese_chars"] is True
    assert s["special_tokens"]["cls"] == {"token": "[CLS]", "id": wp.tokenizer.cls_token_id}
    s = tokenizer_settings(sp.tokenizer, "sentencepiece", 64)
    assert s["vocab_file"] == "spiece.model" and s["max_length"] == 64 and s["keep_accents"] is False


def test_task_override_and_synonym(tiny_checkpoint):
    ckpt = tiny_checkpoint("fill-mask", "wordpiece")
    assert load_checkpoint(ckpt).task.name == "fill-mask"
    loaded = load_checkpoint(ckpt, task="feature-extraction")
    assert loaded.task.outputs == ("last_hidden_state",)
    assert load_checkpoint(tiny_checkpoint(), task="sequence-classification").task.name == "text-classification"
    with pytest.raises(UnsupportedError, match="supported: text-classification"):
        load_checkpoint(ckpt, task="image-classification")


def test_untrained_head_is_noted(tiny_checkpoint):
    loaded = load_checkpoint(tiny_checkpoint("feature-extraction"), task="text-classification")
    assert any("freshly initialised" in n for n in loaded.notes)


def test_pytorch_bin_loads_with_weights_only(tiny_checkpoint, tmp_path):
    src = tiny_checkpoint()
    dst = _copy(src, tmp_path / "bin")
    from safetensors.torch import load_file

    torch.save(load_file(str(dst / "model.safetensors")), dst / "pytorch_model.bin")
    (dst / "model.safetensors").unlink()
    a = load_checkpoint(src).model
    b = load_checkpoint(dst).model
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_malicious_pickle_is_rejected_without_side_effect(tiny_checkpoint, tmp_path):
    dst = _copy(tiny_checkpoint(), tmp_path / "evil")
    (dst / "model.safetensors").unlink()
    marker = tmp_path / "pwned"
    with open(dst / "pytorch_model.bin", "wb") as f:
        pickle.dump({"albert.embeddings.word_embeddings.weight": _Evil(marker)}, f)
    with pytest.raises(CheckpointError, match="cannot load the weights"):
        load_checkpoint(dst)
    assert not marker.exists()


def test_remote_code_is_refused(tiny_checkpoint, tmp_path):
    dst = _copy(tiny_checkpoint(), tmp_path / "remote")
    cfg = json.loads((dst / "config.json").read_text())
    cfg["auto_map"] = {"AutoModel": "modeling_evil.EvilModel"}
    (dst / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="custom code"):
        load_checkpoint(dst)


@pytest.mark.parametrize("breakage,match", [
    ("no-config", "no config.json"),
    ("bad-json", "not valid JSON"),
    ("gpt2", "model_type 'gpt2' is not supported; supported: albert, bert, electra, distilbert, roberta, xlm-roberta, camembert"),
    ("no-weights", "has no weights"),
    ("no-tokenizer", "has no tokenizer"),
])
def test_broken_folders(tiny_checkpoint, tmp_path, breakage, match):
    dst = _copy(tiny_checkpoint(), tmp_path / breakage)
    if breakage == "no-config":
        (dst / "config.json").unlink()
    elif breakage == "bad-json":
        (dst / "config.json").write_text("{not json")
    elif breakage == "gpt2":
        cfg = json.loads((dst / "config.json").read_text())
        cfg["model_type"] = "gpt2"
        (dst / "config.json").write_text(json.dumps(cfg))
    elif breakage == "no-weights":
        (dst / "model.safetensors").unlink()
    elif breakage == "no-tokenizer":
        (dst / "vocab.txt").unlink()
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(dst)


@pytest.mark.parametrize("change,match", [
    ({"hidden_size": 30}, "hidden_size 30 is not divisible by num_attention_heads 4"),
    ({"num_attention_heads": 0}, "num_attention_heads is 0, it must be a positive integer"),
    ({"vocab_size": -5}, "vocab_size is -5"),
    ({"intermediate_size": "big"}, "intermediate_size is 'big'"),
    ({"num_hidden_layers": 2, "num_hidden_groups": 3}, "num_hidden_groups 3 exceeds num_hidden_layers 2"),
    ({"max_position_embeddings": 1}, "max_position_embeddings must be >= 2"),
    ({"vocab_size": 10}, "the tokenizer in .* has \\d+ tokens but the model's vocab_size is 10"),
])
def test_nonsense_config_values(tiny_checkpoint, tmp_path, change, match):
    dst = _copy(tiny_checkpoint(), tmp_path / "cfg")
    cfg = json.loads((dst / "config.json").read_text())
    cfg.update(change)
    (dst / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(dst)


def test_missing_path_and_offline_hub_id_fail_clearly(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint folder"):
        load_checkpoint(str(tmp_path / "nope"))
    # HF_HUB_OFFLINE=1 (conftest) and a socket guard: the hub path must fail fast and clearly
    with pytest.raises(CheckpointError, match="could not fetch 'albert-base-v2' from the Hugging Face Hub"):
        load_checkpoint("albert-base-v2")


def test_every_public_name_imports_and_the_package_alone_imports_no_pipeline():
    import subprocess
    import sys

    import mobile_export

    for name in mobile_export.__all__:
        assert getattr(mobile_export, name) is not None
    code = ("import sys, mobile_export.backends.onnx; "
            "assert 'mobile_export.exporter.pipeline' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)  # what the emulated ARM64 worker relies on
