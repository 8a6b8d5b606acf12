"""Phone heads: fill-mask ``--head topk[:K]`` and feature-extraction ``--pooling cls|mean [--normalize]``,
through both runtimes, against transformers on the fp32 checkpoint, and their parity gates both ways."""

from __future__ import annotations

import json

import numpy as np
import pytest

from blocks import restamp
from pipelines import assert_fills_equal_pipeline, pipeline_for

from mobile_export import Backend, BadInputError, ExportOptions, Quant, load
from mobile_export.cli.main import main
from mobile_export.parity.texts import CHINESE, ENGLISH

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

BOTH = (Backend.EXECUTORCH, Backend.ONNX)
MASKED = [
    "the quick brown [MASK] jumps over the lazy dog.",
    "call me [MASK].",
    "[MASK] families are all alike; every [MASK] family is unhappy in its own [MASK].",
    "这家餐厅的[MASK]真好吃，服务也很[MASK]到。",
]


@pytest.fixture(scope="module")
def exported(tiny_checkpoint, shared_export):
    """exported(task, quant, **head options) -> (checkpoint, export folder), both runtimes, built once."""
    cache: dict = {}

    def make(task: str, quant: Quant, **head):
        key = (task, quant, tuple(sorted(head.items())))
        if key not in cache:
            ckpt = tiny_checkpoint(task)
            out = shared_export(ckpt, ExportOptions(backends=BOTH, quant=quant, measure_memory=False, **head)).out
            cache[key] = (ckpt, out)
        return cache[key]

    return make


def _model(task, ckpt):
    from mobile_export.core.tasks import model_class_for

    return model_class_for(task).from_pretrained(str(ckpt)).eval()


@pytest.mark.parametrize("backend", BOTH)
def test_topk_equals_the_fill_mask_pipeline(exported, backend):
    ckpt, out = exported("fill-mask", Quant.FP32, head="topk:5")
    assert_fills_equal_pipeline(load(out, backend=backend), pipeline_for("fill-mask", ckpt, top_k=5), MASKED)


def test_topk_outputs_and_manifest(exported):
    """Slots beyond the masks hold -1; more masks than slots: the first eight; the manifest says so."""
    from mobile_export.core.signature import INPUT_NAMES, MASK_SLOTS

    _, out = exported("fill-mask", Quant.FP32, head="topk:5")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["outputs"] == ["mask_positions", "top_ids", "top_scores"]
    assert manifest["head"]["kind"] == "topk" and manifest["head"]["k"] == 5
    assert manifest["head"]["mask_slots"] == MASK_SLOTS and "-1" in manifest["head"]["positions"]
    predictor = load(out, backend="onnx")
    ids = np.array([[2, 4, 7, 4, 9] + [4] * 10 + [3]], dtype=np.int64)  # 11 masks
    feeds = {INPUT_NAMES[0]: ids, INPUT_NAMES[1]: np.ones_like(ids), INPUT_NAMES[2]: np.zeros_like(ids)}
    for backend in BOTH:
        positions, top_ids, scores = load(out, backend=backend)._runner.run(feeds)
        assert positions.tolist() == [[1, 3, 5, 6, 7, 8, 9, 10]]
        assert top_ids.shape == scores.shape == (1, MASK_SLOTS, 5)
        assert np.all(np.diff(scores, axis=-1) <= 0)  # best first
    one = np.array([[2, 4, 3]], dtype=np.int64)
    positions, _, _ = predictor._runner.run({INPUT_NAMES[0]: one, INPUT_NAMES[1]: np.ones_like(one),
                                              INPUT_NAMES[2]: np.zeros_like(one)})
    assert positions.tolist() == [[1] + [-1] * (MASK_SLOTS - 1)]


def test_topk_int8_parity_gate_both_ways(exported, tmp_path, capsys):
    import onnx
    from onnx import numpy_helper

    ckpt, out = exported("fill-mask", Quant.INT8, head="topk")
    report = json.loads((out / "report.json").read_text())
    for a in report["artifacts"]:
        p = a["parity"]
        assert p["passed"] and p["topk_overlap"] >= 0.8 and p["n_decisions"] > 50, p
    code = main(["parity", str(ckpt), str(out / "model.onnx"), "--quiet"])  # the head from manifest.json beside it
    assert code == 0, capsys.readouterr()
    capsys.readouterr()
    # the same .onnx with noise on the MLM decoder's bias (the weights are the tied word table): the top
    # tokens change
    model = onnx.load(str(out / "model.onnx"))
    (bias,) = [i for i in model.graph.initializer if i.name.endswith("predictions.decoder.bias")]
    noisy = numpy_helper.to_array(bias) + np.random.default_rng(0).normal(0, 1.0, bias.dims[0]).astype(np.float32)
    bias.CopyFrom(numpy_helper.from_array(noisy, bias.name))
    bad = tmp_path / "model.onnx"
    onnx.save(model, str(bad), save_as_external_data=True, location="model.onnx.data")
    restamp(bad)
    code = main(["parity", str(ckpt), str(bad), "--head", "topk", "--quiet"])
    text = capsys.readouterr()
    assert code == 3, text
    assert "parity check failed (model.onnx: SQNR" in text.err  # fp32's probabilities of the returned ids


@pytest.mark.parametrize("backend", BOTH)
def test_mean_pooling_normalized_equals_transformers(exported, backend):
    import torch
    from transformers import AutoTokenizer

    ckpt, out = exported("feature-extraction", Quant.FP32, pooling="mean", normalize=True)
    tok = AutoTokenizer.from_pretrained(str(ckpt))
    model = _model("feature-extraction", ckpt)
    predictor = load(out, backend=backend)
    for text in ENGLISH[:3] + CHINESE[:3]:
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**enc).last_hidden_state[0].numpy()
        expected = hidden.mean(axis=0)
        expected = expected / np.linalg.norm(expected)
        got = predictor.encode(text)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got.vector, expected, atol=1e-4)
        assert np.linalg.norm(got.vector) == pytest.approx(1.0, abs=1e-5)


def test_cls_pooling_int8_and_its_gate_both_ways(exported, tmp_path, capsys):
    import torch
    from transformers import AutoTokenizer

    ckpt, out = exported("feature-extraction", Quant.INT8, pooling="cls")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["outputs"] == ["sentence_embedding"] and manifest["head"]["pooling"] == "cls"
    report = json.loads((out / "report.json").read_text())
    for a in report["artifacts"]:
        assert a["parity"]["passed"] and a["parity"]["min_cosine"] >= 0.99
        assert any("cosine >= 0.99" in g for g in a["parity"]["gates"])
    tok = AutoTokenizer.from_pretrained(str(ckpt))
    model = _model("feature-extraction", ckpt)
    enc = tok(ENGLISH[0], return_tensors="pt")
    with torch.no_grad():
        cls = model(**enc).last_hidden_state[0, 0].numpy()
    for backend in BOTH:
        got = load(out, backend=backend).encode(ENGLISH[0]).vector
        cos = float(got @ cls / np.linalg.norm(got) / np.linalg.norm(cls))
        assert cos > 0.99
    # a .onnx whose pooled vector comes out scaled in one half and negated in the other fails the cosine gate
    import onnx
    from onnx import helper

    model_proto = onnx.load(str(out / "model.onnx"))
    graph = model_proto.graph
    final = graph.output[0].name
    hidden = int(model.config.hidden_size)
    flip = np.concatenate([np.ones(hidden // 2), -np.ones(hidden - hidden // 2)]).astype(np.float32)
    graph.initializer.append(onnx.numpy_helper.from_array(flip, "tamper/flip"))
    for node in graph.node:
        node.output[:] = [f"{final}/raw" if o == final else o for o in node.output]
    graph.node.append(helper.make_node("Mul", [f"{final}/raw", "tamper/flip"], [final], name="tamper"))
    bad = tmp_path / "model.onnx"
    onnx.save(model_proto, str(bad), save_as_external_data=True, location="model.onnx.data")
    restamp(bad)
    code = main(["parity", str(ckpt), str(bad), "--pooling", "cls", "--quiet"])
    text = capsys.readouterr()
    assert code == 3, text
    assert "cosine" in text.out + text.err


def test_run_prints_both_heads(exported, capsys):
    _, fm = exported("fill-mask", Quant.FP32, head="topk:5")
    assert main(["run", str(fm), "--json", "--top-k", "2", MASKED[0]]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["backend"] for r in rows} == {"executorch", "onnx"}
    assert all(len(r["result"]) == 1 and len(r["result"][0]["fills"]) == 2 for r in rows)
    assert rows[0]["result"][0]["fills"][0]["token_id"] == rows[1]["result"][0]["fills"][0]["token_id"]
    _, fe = exported("feature-extraction", Quant.FP32, pooling="mean", normalize=True)
    assert main(["run", str(fe), "hello"]) == 0
    assert "shape [32]" in capsys.readouterr().out


@pytest.mark.parametrize("options,match", [
    (dict(task="text-classification", head="topk"), "--head topk is for fill-mask"),
    (dict(task="fill-mask", head="topk:0"), "K must be between 1 and 100"),
    (dict(task="fill-mask", head="best"), "pass full, topk or topk:K"),
    (dict(task="fill-mask", pooling="mean"), "--pooling is for feature-extraction"),
    (dict(task="feature-extraction", normalize=True), "--normalize needs --pooling"),
])
def test_head_options_that_do_not_fit_exit_2(options, match):
    from mobile_export.core.heads import parse_head

    with pytest.raises(BadInputError, match=match):
        parse_head(options["task"], options.get("head"), options.get("pooling"), options.get("normalize", False))
