"""ALBERT in shapes no other test builds: a seeded draw inside the released family's ranges (embedding 16-256,
hidden a multiple of the heads, 1-4 layer groups and inner groups, vocabularies of a few hundred to 30,000, every
task), each exported to both formats with the default options. What the project promises must hold at each:
the default gates pass, every stored weight (the shared layers, a tied word table) is stored once, and each is
held once in RAM where the artifact runs it as a loop.

``MOBILE_EXPORT_SHAPES`` (default 2) and ``MOBILE_EXPORT_SHAPE_SEED`` (default 26) draw more, or other, shapes.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from mobile_export import Backend, ExportOptions

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

TASKS = ("text-classification", "token-classification", "question-answering", "fill-mask", "feature-extraction")
SEED = int(os.environ.get("MOBILE_EXPORT_SHAPE_SEED", "26"))
COUNT = int(os.environ.get("MOBILE_EXPORT_SHAPES", "2"))


def _draw(rng: np.random.Generator, task: str) -> dict:
    """One shape of the family's ranges (the vocabulary's size bounded by the embedding's: a 30,000 x 256 table is
    real size, for benchmarks)."""
    heads = int(rng.choice([1, 2, 4, 8]))
    hidden = heads * int(rng.choice([8, 16, 32]))
    groups = int(rng.integers(1, 5))
    embedding = int(rng.choice([16, 24, 32, 48, 64, 128, 256]))
    vocab = int(rng.choice([300, 2000, 8000, 30000] if embedding <= 64 else [300, 2000]))
    tokenizer = "sentencepiece" if vocab == 300 else "wordpiece"
    shape = dict(embedding_size=embedding, hidden_size=hidden, num_attention_heads=heads,
                 intermediate_size=hidden * int(rng.choice([2, 4])), num_hidden_groups=groups,
                 inner_group_num=int(rng.integers(1, 5)), num_hidden_layers=groups * int(rng.integers(1, 3)),
                 # random weights as wide as 128 spread at 0.2 are no model int8 is held to: the family's 0.02
                 initializer_range=0.02 if hidden >= 128 else float(rng.choice([0.02, 0.2])))
    shape["sp_vocab_size" if tokenizer == "sentencepiece" else "wordpiece_size"] = vocab
    return {"task": task, "tokenizer": tokenizer, "shape": shape}


def _shapes() -> list[dict]:
    rng = np.random.default_rng(SEED)
    tasks = [TASKS[i % len(TASKS)] for i in rng.permutation(len(TASKS) * ((COUNT + 4) // 5))][:COUNT]
    return [_draw(rng, t) for t in tasks]


@pytest.mark.parametrize("case", _shapes(), ids=lambda c: f"{c['task']}-{c['tokenizer']}-"
                         + "-".join(f"{k[:3]}{v}" for k, v in c["shape"].items()))
def test_promises_hold_at_a_shape_no_test_builds(tiny_checkpoint, shared_export, case):
    ckpt = tiny_checkpoint(case["task"], case["tokenizer"], **case["shape"])
    result = shared_export(ckpt, ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX), measure_memory=False))
    assert result.passed  # the default gates, in each runtime
    config = result.report["model"]["config"]
    loop = config["num_hidden_groups"] == 1
    for a in result.report["artifacts"]:
        size = a["size"]
        assert size["sharing_preserved"], (a["file"], size["sharing_verdict"])
        if size["tied_embeddings"]:
            assert "tied word-embedding table is stored once" in size["sharing_verdict"], a["file"]
        if loop or a["backend"] == "executorch":  # several groups are unrolled in the .onnx (docs/formats/onnx.md)
            assert size["memory_sharing_preserved"], (a["file"], size["memory_sharing_verdict"])
