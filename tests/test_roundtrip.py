"""Every (task, backend, quant) the registry offers: export, then run the artifact in its real runtime.

The api's own parity check must pass, and an independent check here feeds the artifact at several
lengths (and, where the backend has a dynamic batch, a padded batch) and compares with transformers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from mobile_export import Backend, ExportOptions, Quant, Thresholds, backends, export
from mobile_export.backends import detect_quant
from mobile_export.core.tasks import supported_tasks

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

# One export per (task, precision) holds every format that precision offers (a user's export writes several; the .ort
# is converted from the .onnx the same export lowered), and each format's test reads its artifact from it. The
# tokenizer kind alternates with the task, and int8 and fp32 take opposite kinds, so every format sees both kinds.
INT8_TOKENIZER = {"text-classification": "sentencepiece", "token-classification": "wordpiece",
                  "question-answering": "wordpiece", "fill-mask": "wordpiece", "feature-extraction": "wordpiece"}
OTHER_KIND = {"wordpiece": "sentencepiece", "sentencepiece": "wordpiece"}
# int4's own kinds (below): its random tiny models' 4-bit SQNR depends on the vocabulary
INT4_TOKENIZER = {**{t: "wordpiece" for t in INT8_TOKENIZER}, "feature-extraction": "sentencepiece"}


def _tokenizer(task: str, quant: Quant) -> str:
    if quant is Quant.INT4:
        return INT4_TOKENIZER[task]
    return INT8_TOKENIZER[task] if quant is Quant.INT8 else OTHER_KIND[INT8_TOKENIZER[task]]


CASES = [(task, backend, quant, _tokenizer(task, quant))
         for quant in (Quant.INT8, Quant.FP32, Quant.INT4)
         for task in supported_tasks()
         for backend, q in backends.combinations() if q is quant]
# int4 round trips use weights of a trained model's scale (initializer_range 0.02, transformers' default):
# the tiny models' 0.2 makes 4-bit rounding cost 8-15 dB, which no real checkpoint shows (the demo: 31 dB).
# Even so a random model's int4 SQNR swings with its vocabulary: the 200-piece SentencePiece classifier
# and QA models measured 12 dB (their outputs barely vary between texts, so a constant 4-bit offset
# dominates), the WordPiece ones 19-32 dB; those two run on WordPiece, feature extraction on SentencePiece.
INT4_CHECKPOINT = {"initializer_range": 0.02}
# The .pte's int4 on these random tiny models sits at the default limit itself: a tiny classifier's
# outputs hardly vary between texts, so its SQNR is the luck of how 4-bit errors line up with one
# near-constant output (the .pte text classifier: 15.3, 18.7, 20.3, 15.5, 13.2 dB over seeds 0-4; its
# .onnx 31.8 dB on seed 0 with weights of the same rounding error; a 2-token QA input 9.4 dB). Its round
# trips check the machinery with these limits (a wrong scale or layout is below 0 dB); the default
# limits are checked on the trained demo model (tests/test_int4.py: .pte 29.8 dB, .onnx 31.2 dB).
INT4_PTE_LIMITS = Thresholds(min_agreement=0.98, min_sqnr_db=12.0, min_example_sqnr_db=8.0)
# The .tflite's int4 (ai-edge-quantizer's dynamic 4-bit: blocks where the width allows, else a scale per row) on
# the same random models: 8.3 dB for the classifier, 14-19 dB for the others (weight-only 4-bit: 12.9 dB), against
# 23.9 dB and fp32's labels on all 1,667 test reviews at the default limits on the trained demo
# (tests/test_litert.py). Its round trips check the machinery with these limits, exported alone as the .pte's.
INT4_LITERT_LIMITS = Thresholds(min_agreement=0.9, min_sqnr_db=5.0, min_example_sqnr_db=3.0)
OWN_INT4_LIMITS = {Backend.EXECUTORCH: INT4_PTE_LIMITS, Backend.LITERT: INT4_LITERT_LIMITS}
MIN_SQNR = {Quant.INT8: (20.0, 15.0), Quant.INT4: (15.0, 10.0)}  # (overall, per example) = the defaults


def test_every_registered_combination_has_a_roundtrip_test():
    offered = {(t, b, q) for t in supported_tasks() for b, q in backends.combinations()}
    tested = {(t, b, q) for t, b, q, _ in CASES}
    assert offered == tested, f"untested: {sorted(offered - tested)}; stale: {sorted(tested - offered)}"
    for backend in {b for _, b, _, _ in CASES}:  # each format reads both tokenizer kinds
        assert {k for _, b, _, k in CASES if b is backend} == {"wordpiece", "sentencepiece"}, backend


def _feeds(ids: list[list[int]], pad_id: int) -> dict[str, np.ndarray]:
    width = max(len(x) for x in ids)
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}


@pytest.mark.parametrize("task,backend,quant,tok", CASES, ids=lambda v: getattr(v, "value", v))
def test_roundtrip(tiny_checkpoint, shared_export, task, backend, quant, tok):
    ckpt = tiny_checkpoint(task, tok, **(INT4_CHECKPOINT if quant is Quant.INT4 else {}))
    own = OWN_INT4_LIMITS.get(backend) if quant is Quant.INT4 else None
    # Default thresholds: random-weight tiny models have many near-tied logits (per-token decisions
    # over a 500-word vocabulary with margins below int8 noise); decisive agreement leaves those out.
    # the .pte's and the .tflite's int4 are exported alone: their limits are their own (above)
    formats = (backend,) if own else tuple(
        b for b, q in backends.combinations() if q is quant and not (q is Quant.INT4 and b in OWN_INT4_LIMITS))
    result = shared_export(ckpt, ExportOptions(backends=formats, quant=quant, measure_memory=False, thresholds=own))
    out = result.out
    [art] = [a for a in result.artifacts if a.backend is backend]
    assert art.parity.passed, art.parity.failures
    assert art.parity.thresholds == (own or Thresholds.default_for(quant))
    limits = (own.min_sqnr_db, own.min_example_sqnr_db) if own else MIN_SQNR.get(quant)
    if quant is Quant.FP32:
        assert art.parity.max_abs_diff <= 1e-4
    else:
        overall, each = limits
        assert art.parity.sqnr_db >= overall and art.parity.min_example_sqnr_db >= each
        assert art.parity.max_abs_diff > 0.0  # really quantized, not a silent fp32 copy
    if art.parity.agreement is not None:
        assert art.parity.n_decisive + art.parity.near_ties == art.parity.n_decisions
        # the gate still reads many decisions (random fill-mask logits over 500 words are mostly near-ties;
        # with int4's narrow weights almost all of them: a handful stay decisive)
        # (the .tflite's 4-bit error on them leaves none decisive: its SQNR above is what it is held to)
        least = 0.1 * art.parity.n_decisions if quant is not Quant.INT4 else 0 if backend is Backend.LITERT else 1
        assert art.parity.n_decisive >= least
    cov = art.parity.coverage
    assert not cov.problems
    if backend is Backend.EXECUTORCH:
        assert cov.xnnpack_calls >= 3 and not cov.compute_ops_outside_delegate
    elif quant is not Quant.FP32:
        assert cov.fp32_weight_matmuls == 0 and cov.quantized_weight_matmuls >= 6
    if backend is Backend.EXECUTORCH:  # gelu, LayerNorm, attention rewritten so that XNNPACK takes each layer
        assert art.stats["rewritten_for_xnnpack"]["gelu"] >= 1
        assert art.stats["rewritten_for_xnnpack"]["attention"] >= 1
        outside = cov.ops_outside_delegate
        assert not any(op in o for o in outside for op in ("pow", "layer_norm", "bmm", "view_copy", "expand",
                                                             "softmax", "linear", "addmm")), outside
    assert len(set(art.parity.lengths)) >= 3 or len({ex for ex in result.report["parity_data"]["lengths"]}) >= 3

    info = backends.get_info(backend)
    artifact = out / info.file_name
    assert artifact.is_file() and sum(f.stat().st_size for f in backends.artifact_files(artifact)) == art.bytes
    manifest = json.loads((out / "manifest.json").read_text())
    assert {f["path"] for f in manifest["files"]} >= {info.file_name, "report.json", "tokenizer/tokenizer_settings.json"}
    assert not list(out.glob(".mobile-export-staging-*"))

    # Independent check: the same artifact at lengths 2, 7, 33 and max, against transformers itself.
    from mobile_export.model.loading import load_checkpoint

    loaded = load_checkpoint(ckpt)
    runner = backends.load(backend).Runner(artifact)
    max_len = getattr(runner, "length", loaded.config.max_position_embeddings)  # the NPU file's one fixed length
    rng = np.random.default_rng(1)
    vocab = loaded.config.vocab_size
    cls, sep = loaded.tokenizer.cls_token_id, loaded.tokenizer.sep_token_id
    rows = [[cls] + rng.integers(5, vocab, n - 2).tolist() + [sep] for n in (2, 7, 33, max_len)]
    pad = loaded.tokenizer.pad_token_id

    def check(got: list[np.ndarray], row: list[int], index: int = 0) -> None:
        with torch.no_grad():
            want = loaded.model(**{k: torch.from_numpy(v) for k, v in _feeds([row], pad).items()})
        for name, g in zip(loaded.task.outputs, got):
            w = want[name].numpy()
            g = g[index : index + 1]
            if g.ndim >= 2 and w.ndim >= 2 and g.shape[1] != w.shape[1]:
                g = g[:, : len(row)]  # padded batch: keep this row's real tokens
            assert g.shape == w.shape, (name, len(row))
            if quant is Quant.FP32:
                np.testing.assert_allclose(g, w, atol=1e-4, rtol=0)
            else:  # int8/int4: activation scales are per tensor, so judge by signal-to-noise
                assert 10 * np.log10(np.sum(w**2) / np.sum((w - g) ** 2)) >= limits[1], (name, len(row))

    # the NPU file from 7 tokens: its 2-token question answering (two start logits of a random row) measured 5.9 dB
    for row in rows[1:] if backend is Backend.QNN else rows:
        check(runner.run(_feeds([row], pad)), row)
    # batch 1 with padding (zeros in the attention mask): the padded positions must change nothing
    padded = {k: v[:1] for k, v in _feeds([rows[1], rows[2]], pad).items()}
    assert padded["attention_mask"][0, len(rows[1]):].sum() == 0 and padded["input_ids"].shape[1] == len(rows[2])
    check(runner.run(padded), rows[1])
    assert detect_quant(artifact) is quant  # the default parity thresholds follow what the file stores
    if info.dynamic_batch:  # a padded batch of three lengths
        batched = runner.run(_feeds(rows[:3], pad))
        for i, row in enumerate(rows[:3]):
            check(batched, row, i)


@pytest.mark.parametrize("backend", [Backend.ONNX, Backend.EXECUTORCH], ids=str)
def test_layer_groups_and_inner_groups(tiny_checkpoint, tmp_path, backend):
    """num_hidden_groups / inner_group_num other than 1 (two groups of two layers, 4 layers)."""
    ckpt = tiny_checkpoint("text-classification", "wordpiece", num_hidden_layers=4, num_hidden_groups=2,
                           inner_group_num=2)
    result = export(ckpt, tmp_path / "o", ExportOptions(backends=(backend,), quant=Quant.INT8, measure_memory=False))
    [art] = result.artifacts
    assert art.parity.passed and art.parity.sqnr_db >= 20
    assert result.report["model"]["config"]["num_hidden_groups"] == 2
    if backend is Backend.ONNX:
        # 4 group applications x 2 inner layers x 6 weight MatMuls, + projection, pooler, classifier
        cov = art.parity.coverage
        assert cov.quantized_weight_matmuls == 4 * 2 * 6 + 3 and cov.fp32_weight_matmuls == 0
