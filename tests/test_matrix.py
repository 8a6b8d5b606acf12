"""Every family, task, format, precision, tokenizer kind, head and .pte entry through the whole tool, by the covering
array of ``matrix``: each case's artifact exported from a tiny seeded checkpoint (WordPiece vocabularies written
here, SentencePiece and byte-level BPE trained here, never downloaded), checked by the export's gate in its real
runtime, then independently: fed token ids at several lengths, padded and batched, and texts through ``load``
without its checkpoint, against transformers' own model; its weights stored once, its inputs its family's.

The full product of the factors runs with ``make test-matrix-full``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import matrix
from mobile_export import Backend, ExportOptions, Quant, Thresholds, backends, load
from mobile_export.backends import detect_quant
from mobile_export.model.families import FAMILIES
from mobile_export.parity.texts import ENGLISH

CASES = matrix.cases()
EXPORTS = matrix.exports(CASES)

# int4 on random tiny weights, at a trained model's spread (initializer_range 0.02, transformers' default: the tiny
# models' 0.2 makes 4-bit rounding cost 8-15 dB, which no real checkpoint shows; the demo: 31 dB). Even so a random
# model's int4 SQNR swings with its vocabulary and task (outputs that barely vary between texts let one constant 4-bit
# offset dominate: the .pte text classifier 13-20 dB over seeds 0-4). These limits check the machinery (a wrong scale
# or layout is below 0 dB); the default limits are checked on the trained demo (test_int4: .pte 29.8 dB, .onnx 31.2;
# test_litert: the .tflite 23.9 dB and fp32's labels on all 1,667 test reviews).
INT4_CHECKPOINT = {"initializer_range": 0.02}
INT4_LIMITS = {
    Backend.EXECUTORCH: Thresholds(min_agreement=0.98, min_sqnr_db=12.0, min_example_sqnr_db=8.0),
    # litert-quantizer's dynamic 4-bit: blocks where the width allows, else a scale per row: 8-19 dB here
    Backend.LITERT: Thresholds(min_agreement=0.9, min_sqnr_db=5.0, min_example_sqnr_db=3.0),
}
# the .onnx's int4 of the other families (its ALBERT at the default limits): as test_families held them
INT4_FAMILY_LIMITS = Thresholds(min_agreement=0.9, min_sqnr_db=5.0, min_example_sqnr_db=0.0)
assert set(INT4_LIMITS) == set(matrix.OWN_INT4_LIMITS)


def _limits(case: matrix.Case) -> Thresholds | None:
    """The case's parity limits when not the defaults."""
    if case.precision is not Quant.INT4:
        return None
    return INT4_LIMITS.get(case.format) or (INT4_FAMILY_LIMITS if case.family != "albert" else None)


def _checkpoint(tiny_checkpoint, case: matrix.Case):
    return tiny_checkpoint(case.task, case.tokenizer, family=case.family, num_hidden_layers=case.layers,
                           **(INT4_CHECKPOINT if case.precision is Quant.INT4 else {}))


def _options(case: matrix.Case) -> ExportOptions:
    plan = EXPORTS[case]
    return ExportOptions(backends=plan.formats, quant=case.precision, measure_memory=False, thresholds=_limits(case),
                         format_options={"pte_entry": plan.entry}, **case.head_options)


def test_every_pair_of_factor_values_that_can_meet_is_covered(monkeypatch):
    """The covering array leaves no pair of values uncovered, and a case dropped from it would leave some; the full
    product is there on demand."""
    assert not matrix.uncovered(CASES)
    assert all(matrix.feasible(c) for c in CASES) and len(set(CASES)) == len(CASES)
    array = matrix.covering(matrix.product())
    for c in array:  # no case is redundant: each covers a pair no other covers
        assert matrix.uncovered([x for x in array if x != c]), c.id
    assert len(array) * 10 < len(matrix.product())
    monkeypatch.setenv("MOBILE_EXPORT_MATRIX", "full")
    assert matrix.cases() == matrix.product()
    # every factor pair of the list, and every value of every factor, is in the required pairs
    need = matrix.required_pairs()
    names = list(matrix.FACTORS)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert any(p[0][0] == a and p[1][0] == b for p in need), (a, b)
    # the registries decide what can meet: each format's precisions and families, the families' tokenizer kinds
    offered = {(b, q) for b, q in backends.combinations()}
    assert {(c.format, c.precision) for c in CASES} == offered
    assert {c.family for c in CASES} == set(matrix.FAMILIES) == set(FAMILIES) - {"camembert"}


def _feeds(ids: list[list[int]], pad_id: int) -> dict[str, np.ndarray]:
    width = max(len(x) for x in ids)
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}


def _reference(model, case: matrix.Case, feeds: dict[str, np.ndarray], outputs: tuple[str, ...], mask_id: int | None):
    """transformers' outputs for one unpadded row, reduced as the case's head reduces them."""
    inputs = FAMILIES[case.family].signature.inputs
    with torch.no_grad():
        got = model(**{k: torch.from_numpy(v) for k, v in feeds.items() if k in inputs})
    if case.head == "full":
        return [got[name].numpy() for name in outputs]
    if case.task == "feature-extraction":  # mean over the tokens, normalized
        pooled = got["last_hidden_state"][0].numpy().mean(axis=0)
        return [(pooled / np.linalg.norm(pooled))[None]]
    # top-k at the masks: the first MASK_SLOTS [MASK] positions, the K best probabilities at each (-1 / 0 beyond)
    from mobile_export.core.signature import MASK_SLOTS

    k = int(case.head_options["head"].split(":")[1])
    positions = np.flatnonzero(feeds["input_ids"][0] == mask_id)[:MASK_SLOTS]
    probs = torch.softmax(got["logits"][0], dim=-1).numpy()
    scores = np.zeros((1, MASK_SLOTS, k), dtype=np.float32)
    scores[0, : len(positions)] = -np.sort(-probs[positions], axis=-1)[:, :k]
    return [np.pad(positions, (0, MASK_SLOTS - len(positions)), constant_values=-1)[None], None, scores]


# make check leaves the cases out (each lowers or runs a model for seconds to tens of seconds; docs/contributing.md, the tiers)
@pytest.mark.full
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_case(tiny_checkpoint, shared_export, case):
    ckpt = _checkpoint(tiny_checkpoint, case)
    options = _options(case)
    result = shared_export(ckpt, options)
    out, own = result.out, _limits(case)
    [art] = [a for a in result.artifacts if a.backend is case.format]
    parity = art.parity
    # the gate: the artifact in its real runtime against transformers' model, by its precision's limits
    assert parity.passed, parity.failures
    if own:
        assert parity.thresholds == own
    elif case.head == "full":
        assert parity.thresholds == Thresholds.default_for(case.precision)
    limits = own or Thresholds.default_for(case.precision)
    overall, each = limits.min_sqnr_db, limits.min_example_sqnr_db
    if case.precision is Quant.FP32:
        assert parity.max_abs_diff <= 1e-4
    else:
        assert parity.sqnr_db >= overall and parity.min_example_sqnr_db >= each
        assert parity.max_abs_diff > 0.0  # really quantized, not a silent fp32 copy
    if parity.agreement is not None:
        assert parity.n_decisive + parity.near_ties == parity.n_decisions
        # random fill-mask logits over a few hundred words are mostly near-ties; with int4's narrow weights almost all
        # (the .tflite's 4-bit error leaves none decisive: its SQNR is what it is held to)
        least = (0.1 * parity.n_decisions if case.precision is not Quant.INT4
                 else 0 if case.format is Backend.LITERT else 1)
        assert parity.n_decisive >= least
    cov = parity.coverage
    assert not cov.problems
    if case.format is Backend.EXECUTORCH:
        assert cov.xnnpack_calls >= (3 if case.entry == "loop" else 1) and not cov.compute_ops_outside_delegate
        # gelu, LayerNorm, attention rewritten so that XNNPACK takes each layer
        if case.family == "albert":  # its gelu_new (tanh form; the others' exact gelu lowers as it is)
            assert art.stats["rewritten_for_xnnpack"]["gelu"] >= 1
        assert art.stats["rewritten_for_xnnpack"]["attention"] >= 1
        outside = cov.ops_outside_delegate
        # (the top-k head's selection expands its gather index in the head, as the gate allows)
        expand = () if case.head == "reduced" and case.task == "fill-mask" else ("expand",)
        assert not any(op in o for o in outside for op in ("pow", "layer_norm", "bmm", "view_copy", *expand,
                                                             "softmax", "linear", "addmm")), outside
        from mobile_export.backends import executorch as et

        methods = set(et.Runner(out / "model.pte").program.method_names)
        assert ("forward" in methods) == (case.entry == "forward")
        assert ("layer_schedule" in methods) == (case.entry == "loop")
    elif case.precision is not Quant.FP32:
        assert cov.fp32_weight_matmuls == 0 and cov.quantized_weight_matmuls >= 6  # a layer's six
    assert len(set(parity.lengths)) >= 3 or len(set(result.report["parity_data"]["lengths"])) >= 3

    # the files: what the report counts, what the manifest lists, nothing staged left
    info = backends.get_info(case.format)
    artifact = out / info.file_name
    assert artifact.is_file() and sum(f.stat().st_size for f in backends.artifact_files(artifact)) == art.bytes
    manifest = json.loads((out / "manifest.json").read_text())
    listed = {f["path"] for f in manifest["files"]}
    assert listed >= {info.file_name, "report.json", "tokenizer/tokenizer_settings.json"}
    assert not list(out.glob(".mobile-export-staging-*"))
    inputs = FAMILIES[case.family].signature.inputs
    entry = next(e for e in manifest["artifacts"] if e["file"] == info.file_name)
    assert (entry.get("inputs") or entry["calling_convention"].get("inputs") or list(inputs)) == list(inputs)
    assert detect_quant(artifact) is case.precision  # the default parity thresholds follow what the file stores

    # the weights stored once: each layer (ALBERT's shared one) and a tied word table (kept twice in a .ort and at 4
    # bits, docs/size-and-memory.md: the verdict says so; the .tflite keeps one 4-bit table for both; the NPU file's decoder
    # reads the lookup's codes)
    report = result.report
    assert report["model"]["model_type"] == case.family
    [a] = [a for a in report["artifacts"] if a["file"] == info.file_name]
    size = a["size"]
    known = size["tied_embeddings"] and (
        case.format is Backend.ORT or case.precision is Quant.INT4 and case.format is not Backend.LITERT)
    assert size["sharing_preserved"] != known, size["sharing_verdict"]
    if not known:
        layers = ("the shared layer is stored once" if FAMILIES[case.family].shared
                  else f"each of the {case.layers} layers is stored once")
        assert layers in size["sharing_verdict"], size["sharing_verdict"]
        if size["tied_embeddings"]:
            assert "tied word-embedding table is stored once" in size["sharing_verdict"]
    if case.format is Backend.QNN and size["tied_embeddings"]:
        assert "stored once" in a["stats"]["qnn"].get("tied_table", ""), a["stats"]["qnn"]
    if case.precision is Quant.INT4 and case.format is Backend.ONNX:  # the word lookup is 4-bit, whatever its name
        assert a["stats"]["int4"]["int4_lookups"] == 1, a["stats"]["int4"]
    if case.precision is Quant.INT8 and not FAMILIES[case.family].shared and case.format is not Backend.QNN:
        # the diagnosis names its steps by the family: layers, not depths (the NPU file's is its calibrated ranges')
        md = (out / "report.md").read_text()
        assert "int8 error by layer" in md and "by depth" not in md

    # independently: the artifact fed ids at lengths 2, 7, 33 and its longest, one padded, and a padded batch where the
    # format has a dynamic batch, against transformers' model loaded from the checkpoint by our loader
    from mobile_export.model.loading import load_checkpoint

    loaded = load_checkpoint(ckpt)
    runner = backends.load(case.format).Runner(artifact)
    settings = json.loads((out / "tokenizer" / "tokenizer_settings.json").read_text())
    max_len = getattr(runner, "length", settings["max_length"])  # a fixed-length file's one length
    rng = np.random.default_rng(1)
    tok = loaded.tokenizer
    mask_id = tok.mask_token_id
    rows = [[tok.cls_token_id] + rng.integers(5, loaded.config.vocab_size, n - 2).tolist() + [tok.sep_token_id]
            for n in (2, 7, 33, max_len)]
    if case.head == "reduced" and case.task == "fill-mask":  # masks for the top-k head to find
        for row in rows[1:]:
            row[1] = row[-2] = mask_id
    outputs = loaded.task.outputs

    def check(got: list[np.ndarray], row: list[int], index: int = 0) -> None:
        want = _reference(loaded.model, case, _feeds([row], tok.pad_token_id), outputs, mask_id)
        assert len(got) == len(want)
        for name, (g, w) in enumerate(zip(got, want)):
            if w is None:  # the top-k ids: their scores are compared
                continue
            g = g[index: index + 1]
            if name == 2 and case.head == "reduced":  # top-k scores: the slots beyond the masks hold nothing to compare
                g = np.where(want[0][..., None] >= 0, g, 0.0)
            if g.ndim >= 2 and w.ndim >= 2 and g.shape[1] != w.shape[1] and case.head == "full":
                g = g[:, : len(row)]  # padded batch: keep this row's real tokens
            assert g.shape == w.shape, (name, len(row))
            if w.dtype.kind == "i":  # the top-k head's mask positions
                assert np.array_equal(g, w), (g, w)
            elif case.precision is Quant.FP32:
                np.testing.assert_allclose(g, w, atol=1e-4, rtol=0)
            elif np.any(w):
                assert 10 * np.log10(np.sum(w**2) / np.sum((w - g) ** 2)) >= each, (name, len(row))

    # the NPU file from 7 tokens: its 2-token question answering (two start logits of a random row) measured 5.9 dB
    # (and the 4-bit files': two near-zero logits are all noise at 4 bits, -0.1 dB measured on the .tflite's)
    short_qa = case.task == "question-answering" and case.precision is Quant.INT4
    for row in rows[1:] if case.format is Backend.QNN or short_qa else rows:
        check(runner.run(_feeds([row], tok.pad_token_id)), row)
    padded = {k: v[:1] for k, v in _feeds([rows[1], rows[2]], tok.pad_token_id).items()}
    assert padded["attention_mask"][0, len(rows[1]):].sum() == 0 and padded["input_ids"].shape[1] == len(rows[2])
    check(runner.run(padded), rows[1])  # padding changes nothing
    if info.dynamic_batch:
        batched = runner.run(_feeds(rows[:3], tok.pad_token_id))
        for i, row in enumerate(rows[:3]):
            check(batched, row, i)

    # texts through the user's API, without the checkpoint, against transformers' model of the family's own class
    if case.format is Backend.ORT or case.head == "reduced":
        return  # the .ort's is the .onnx's runner; the heads' texts are test_heads'
    from transformers import AutoTokenizer

    from mobile_export.core.tasks import model_class_for

    model = model_class_for(case.task, case.family).from_pretrained(str(ckpt)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(ckpt))  # the checkpoint's, not the export's copy
    predictor = load(out, backend=case.format)
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
    assert sqnr >= {Quant.FP32: 60.0, Quant.INT8: 20.0, Quant.INT4: 5.0}[case.precision], sqnr
