"""BERT, ELECTRA, DistilBERT, RoBERTa and XLM-R through the whole tool, as ALBERT goes: tiny seeded checkpoints of each
(WordPiece vocabularies written here, RoBERTa's byte-level BPE and XLM-R's SentencePiece trained here, never
downloaded), every task, both formats (and the .ort), the three precisions; each
artifact checked in its real runtime against transformers' own model (the export's gate), used without its
checkpoint (``load``) as transformers is, its weights stored once, its inputs its family's.

Every (family, task) and every (family, backend, quant) the registries offer has a round trip here (a covering
set: the full product is ALBERT's, ``test_roundtrip``); the guard below fails when one is missing.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from mobile_export import Backend, ExportOptions, Quant, backends, load
from mobile_export.core.tasks import supported_tasks
from mobile_export.demo.tiny import NATIVE_TOKENIZER
from mobile_export.model.families import FAMILIES
from mobile_export.parity.texts import ENGLISH

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

# CamemBERT is RoBERTa's adapter under other class names: its own test below, not the whole matrix again
OTHERS = [f for f in FAMILIES if f not in ("albert", "camembert")]
QUANTS = (Quant.INT8, Quant.INT4, Quant.FP32)
# the .tflite's fp32 is litert-torch's conversion alone (what its int8 and int4 quantize, which run here for every
# family); the .pte's fp32 and int4 are its int8 lowering without the quantizer, or with torchao's 4-bit Linear
# quantizer, the same for every family's Linears (each family's .pte runs int8 here, its int4 runs as .onnx and
# .tflite): ALBERT's round trips (test_roundtrip) take them for every task; make test's 20 minutes leave them out here
ALBERT_ONLY = {(Backend.LITERT, Quant.FP32), (Backend.EXECUTORCH, Quant.FP32), (Backend.EXECUTORCH, Quant.INT4)}


def _cases() -> list[tuple[str, str, Quant, tuple[Backend, ...]]]:
    """(family, task, quant, backends): every task of every family; the first three tasks (rotating with the
    family) in each precision with every format that offers it, the other two in int8 as an .onnx (the .pte's
    lowering is most of an export's time; each family's .pte runs in int8, ALBERT's in every precision)."""
    tasks = supported_tasks()
    cases = []
    for j, f in enumerate(OTHERS):
        for i in range(len(tasks)):
            task = tasks[(i + j) % len(tasks)]
            if i < len(QUANTS):
                quant = QUANTS[i]
                cases.append((f, task, quant, tuple(b for b, info in backends.BACKENDS.items()
                                                     if quant in info.quants and backends.takes_family(b, f)
                                                     and (b, quant) not in ALBERT_ONLY)))
            else:
                cases.append((f, task, Quant.INT8, (Backend.ONNX,)))
    return cases


def test_every_family_task_backend_and_quant_has_a_round_trip():
    cases = _cases()
    assert {(f, t) for f, t, _, _ in cases} == {(f, t) for f in OTHERS for t in supported_tasks()}
    covered = {(f, b, q) for f, _, q, bs in cases for b in bs}
    assert covered == {(f, b, q) for f in OTHERS for b, q in backends.combinations()
                       if backends.takes_family(b, f) and (b, q) not in ALBERT_ONLY}


@pytest.fixture(scope="module")
def family_export(tiny_checkpoint, shared_export):
    """family_export(family, task, quant) -> (checkpoint, ExportResult), two layers a family (the machinery is
    the same for any depth; the sentence encoder below and the benchmarks take others)."""

    def make(family: str, task: str, quant: Quant, formats: tuple[Backend, ...]):
        limits, init = {}, {}
        if quant is Quant.INT4:  # random tiny weights: as the ALBERT int4 tests hold them, at a real model's spread
            from mobile_export import Thresholds

            limits = {"thresholds": Thresholds(min_agreement=0.9, min_sqnr_db=5.0, min_example_sqnr_db=0.0)}
            init = {"initializer_range": 0.02}
        ckpt = tiny_checkpoint(task, NATIVE_TOKENIZER.get(family, "wordpiece"), family=family, num_hidden_layers=2,
                               **init)
        options = ExportOptions(backends=formats, quant=quant, measure_memory=False, **limits)
        return ckpt, shared_export(ckpt, options)

    return make


@pytest.mark.parametrize("family,task,quant,formats", _cases(),
                         ids=lambda v: "+".join(b.value for b in v) if isinstance(v, tuple) else str(v))
def test_family_round_trip(family_export, family, task, quant, formats):
    ckpt, result = family_export(family, task, quant, formats)
    assert result.passed  # each artifact in its real runtime against transformers' model, by its precision's gate
    report = result.report
    assert report["model"]["model_type"] == family
    inputs = FAMILIES[family].signature.inputs
    manifest = json.loads((result.out / "manifest.json").read_text())
    for a in report["artifacts"]:
        size = a["size"]
        # a tied table is kept twice in a .ort and at 4 bits, as for ALBERT (README, "Size"): the verdict says so (the
        # .tflite keeps one 4-bit table for both; the NPU file's decoder reads the lookup's codes)
        # (the NPU file's decoder reads the lookup's codes, a Gemm split back into its MatMul and Add first)
        if a["file"] == "model.qnn.onnx" and size["tied_embeddings"]:
            assert "stored once" in a["stats"]["qnn"].get("tied_table", ""), a["stats"]["qnn"]
        known = size["tied_embeddings"] and (
            a["file"] == "model.ort" or quant is Quant.INT4 and a["file"] != "model.tflite")
        assert size["sharing_preserved"] != known, (a["file"], size["sharing_verdict"])
        assert "each of the 2 layers is stored once" in size["sharing_verdict"] or known
        if size["tied_embeddings"] and not known:
            assert "tied word-embedding table is stored once" in size["sharing_verdict"], a["file"]
        if quant is Quant.INT4 and a["file"] == "model.onnx":  # the word lookup is 4-bit, whatever its table's name
            assert a["stats"]["int4"]["int4_lookups"] == 1, a["stats"]["int4"]
        entry = next(e for e in manifest["artifacts"] if e["file"] == a["file"])
        declared = entry.get("inputs") or entry["calling_convention"].get("inputs") or list(inputs)
        assert declared == list(inputs)
    if quant is Quant.INT8:  # the diagnosis names its steps by the family: layers, not runs of a shared layer
        md = (result.out / "report.md").read_text()
        assert "int8 error by layer" in md and "by depth" not in md
    # independently of the export's own check: the artifact, used without its checkpoint, against transformers'
    # model loaded from the checkpoint by transformers itself, on texts the parity run did not pick
    import torch

    from mobile_export.core.tasks import model_class_for

    from transformers import AutoTokenizer

    model = model_class_for(task, family).from_pretrained(str(ckpt)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(ckpt))  # the checkpoint's, not the export's copy
    for backend in [b for b in formats if b is not Backend.ORT]:
        predictor = load(result.out, backend=backend)
        signal = noise = 0.0
        for text in ENGLISH[-6:]:
            enc = tokenizer(text, return_tensors="np", truncation=True, max_length=predictor.max_length)
            feeds = {n: np.asarray(enc[n], dtype=np.int64) for n in ("input_ids", "attention_mask", "token_type_ids")
                     if n in enc}
            feeds.setdefault("token_type_ids", np.zeros_like(feeds["input_ids"]))
            got = predictor._runner.run(feeds)[0]
            with torch.no_grad():
                want = model(**{k: torch.from_numpy(v) for k, v in feeds.items() if k in inputs})[0].numpy()
            assert got.shape == want.shape
            signal += float(np.sum(want.astype(np.float64) ** 2))
            noise += float(np.sum((want.astype(np.float64) - got) ** 2))
        sqnr = 10 * np.log10(signal / max(noise, 1e-30))
        assert sqnr >= {Quant.FP32: 60.0, Quant.INT8: 20.0, Quant.INT4: 5.0}[quant], (backend, sqnr)


@pytest.mark.parametrize("family", ["bert", "xlm-roberta"])
def test_a_sentence_encoder_gives_transformers_vectors(tiny_checkpoint, shared_export, family):
    """A MiniLM-shaped sentence encoder (hidden 384, 12 heads, intermediate 1536, 6 layers: all-MiniLM's BERT and
    paraphrase-multilingual-MiniLM's XLM-R, whose SentencePiece is trained here) exported with mean pooling and
    normalization gives transformers' mean-pooled, normalized vectors (cosine >= 0.99)."""
    import torch

    from mobile_export.model.loading import load_checkpoint

    ckpt = tiny_checkpoint("feature-extraction", NATIVE_TOKENIZER.get(family, "wordpiece"), family=family,
                           hidden_size=384, num_attention_heads=12, intermediate_size=1536, num_hidden_layers=6,
                           initializer_range=0.02, max_position_embeddings=128)
    # the .onnx (a phone runs both; the .pte of the same machinery is the round trips' above)
    result = shared_export(ckpt, ExportOptions(backends=(Backend.ONNX,), pooling="mean", normalize=True,
                                               measure_memory=False))
    loaded = load_checkpoint(str(ckpt))
    texts = ENGLISH[:12]
    for backend in (Backend.ONNX,):
        predictor = load(result.out, backend=backend)
        for text in texts:
            enc = loaded.tokenizer(text, return_tensors="pt", truncation=True, max_length=128)
            with torch.no_grad():
                hidden = loaded.model(**enc).last_hidden_state[0]
            mask = enc["attention_mask"][0, :, None].float()
            want = (hidden * mask).sum(0) / mask.sum()
            want = (want / want.norm()).numpy()
            got = predictor.embed(text).vector.reshape(-1)
            cosine = float(np.dot(got, want) / (np.linalg.norm(got) * np.linalg.norm(want)))
            assert cosine >= 0.99, (backend, text, cosine)


def test_camembert_is_robertas_adapter_and_fills_masks(family_export):
    """CamemBERT is RoBERTa's family under its own names (the same data but for the model type and layer class), so
    RoBERTa's matrix above covers its machinery; one fill-mask round trip in both formats (its own SentencePiece ids,
    the tied masked-LM head) passes the gates and stores the tied table once."""
    from dataclasses import replace

    camembert, roberta = FAMILIES["camembert"], FAMILIES["roberta"]
    assert replace(camembert, name="roberta", model_types=("roberta",), layer_classes=("RobertaLayer",)) == roberta
    _, result = family_export("camembert", "fill-mask", Quant.INT8, (Backend.EXECUTORCH, Backend.ONNX))
    assert result.passed and result.report["model"]["model_type"] == "camembert"
    for a in result.report["artifacts"]:
        assert a["size"]["tied_embeddings"] and "tied word-embedding table is stored once" in a["size"][
            "sharing_verdict"], a["file"]
