"""Outlier channels: those an exact fold absorbs are folded before lowering at no byte cost; an int8 export that
fails its gate because of others is repaired by --repair and passes the same gate; a broken artifact is still
refused with repair on; a model without outliers is not touched; every int8 report says where the error comes
from."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mobile_export import Backend, ExportOptions, export
from mobile_export.core.choices import Repair
from mobile_export.core.errors import ExitCode, ParityError
from mobile_export.core.fsutil import sha256_file
from mobile_export.reports import summary
from mobile_export.reports.records import granularity_label
from mobile_export.exporter.repair import NOTHING_TO_FOLD, NOTHING_TO_KEEP, NOTHING_TO_SCALE
from outlier_models import LAYER, PLANTED, plant_residual, planted_checkpoint

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

READERS = ("albert.encoder.embedding_hidden_mapping_in", f"{LAYER}.attention.dense")


@pytest.fixture(scope="module")
def planted(tiny_checkpoint, tmp_path_factory):
    """A tiny classifier with 50x outlier channels that leave its fp32 function unchanged."""
    return planted_checkpoint(tiny_checkpoint("text-classification"), tmp_path_factory.mktemp("planted") / "ckpt", 50.0)


def _failed_report(out):
    assert [p.name for p in out.iterdir()] == ["report.failed.json"]  # nothing else is written
    return json.loads((out / "report.failed.json").read_text())


def test_exact_outliers_are_folded_before_lowering_at_no_byte_cost(planted, shared_export, tmp_path):
    """Outlier channels a pair of layers rescales exactly are folded before anything is lowered: the files pass
    with no repair, each the bytes of the plain file (same graph, same shapes), far above it; the report, report.md
    and the summary say what was folded and what the emulation gained."""
    result = shared_export(planted, ExportOptions())
    report = result.report
    assert result.passed and report["repair"] is None
    folds = report["folds"]
    assert folds["taken"] and folds["stored_bytes"] == 0
    assert {c["consumer"] for c in folds["changes"]} == set(READERS)
    emulated = folds["emulated_sqnr_db"]["token"]  # both CPU formats quantize activations per token
    assert emulated["before"] < 20 <= emulated["after"] and emulated["lowest_after"] > emulated["lowest_before"]
    with pytest.raises(ParityError):  # the same export without any change: refused, its files' sizes recorded
        export(planted, tmp_path / "plain", ExportOptions(repair=Repair.OFF, measure_memory=False))
    plain = {a["file"]: a for a in _failed_report(tmp_path / "plain")["artifacts"]}
    for a in report["artifacts"]:  # what was written is the folded artifact, judged by the gate
        assert a["parity"]["passed"] and a["sha256"] == sha256_file(result.out / a["file"])
        assert a["size"]["groups"] == plain[a["file"]]["size"]["groups"], a["file"]  # the weights, part by part
        unbundled = {k: r["bytes"] - r["size"]["bundle_bytes"] for k, r in (("folded", a), ("plain", plain[a["file"]]))}
        # the card (in the bundle) records --repair and the parity figures, whose text lengths differ: the format
        # pads the bundle to its alignment (a .pte's flatbuffer: up to 8 bytes), which bundle_bytes does not count
        assert abs(unbundled["folded"] - unbundled["plain"]) <= 8, (a["file"], unbundled)
        assert a["parity"]["sqnr_db"] > plain[a["file"]]["parity"]["sqnr_db"] + 12
    inputs = {i["weight"]: i for i in report["diagnosis"]["inputs"]}
    assert not any(inputs[r]["outliers"] for r in READERS)  # the diagnosis of the folded model finds none left
    md = (result.out / "report.md").read_text()
    assert "- exact folds (folded, +0 bytes; emulated int8 token" in md
    assert "exact folds: 48 channels in 2 weight pairs folded, +0 B" in summary(report)


def test_a_fold_that_does_not_gain_is_left_to_the_repair(planted, tmp_path, monkeypatch):
    """When the emulation says the folds gain too little they are not taken: the plain files are lowered, the
    gate refuses them, the smooth repair folds and passes them, and the error by depth of each, read in its real
    runtime through the layer loop before and after, agrees with the emulation of its runtime."""
    from mobile_export.exporter import folding

    monkeypatch.setattr(folding, "MIN_GROUP_GAIN_DB", 1e9)
    result = export(planted, tmp_path / "o", ExportOptions(measure_memory=False))
    report = result.report
    assert result.passed and not report["folds"]["taken"] and report["repair"]["applied"] == "smooth"
    (attempt,) = report["repair"]["attempts"]
    assert {c["consumer"] for c in attempt["changes"]} == set(READERS)
    outcomes = {o["file"]: o for o in attempt["artifacts"]}
    assert set(outcomes) == {"model.pte", "model.onnx"}
    runtime = report["diagnosis"]["runtime_depth_sqnr_db"]
    emulated = report["diagnosis"]["emulated"]["token"]["depth_sqnr_db"]
    for o in outcomes.values():
        assert o["before_sqnr_db"] < 20 <= o["after_sqnr_db"] and o["passed"], o  # plain failed, repaired passes
        assert o["bytes_after"] == o["bytes_before"]  # same graph, same shapes: a fold costs no byte
        before = runtime[o["file"]]
        assert len(before) == 2 == len(emulated)  # the tiny model's two runs of the shared layer
        assert all(abs(real - emu) < 3.0 for real, emu in zip(before, emulated)), (before, emulated)
        assert max(before) < 20 and all(a > b + 12 for a, b in zip(o["after_depth_sqnr_db"], before)), (o, before)
    inputs = {i["weight"]: i for i in report["diagnosis"]["inputs"]}
    for r in READERS:  # the diagnosis names the planted channels where they are read
        assert {o["channel"] for o in inputs[r]["outliers"]} == set(PLANTED)
    assert not inputs[f"{LAYER}.attention.query"]["outliers"]
    md = (result.out / "report.md").read_text()
    assert "exact folds (not folded (no gain)" in md and "int8 repair (--repair auto; kept: smooth)" in md
    assert f"| depth | {granularity_label('token')}, emulated |" in md  # the runtimes quantizing per token
    assert "model.onnx repaired (smooth), real |" in md
    assert "repair smooth:" in summary(report)
    html = (result.out / "report.html").read_text()
    assert "int8 error by depth: the hidden state after each run of the shared layer" in html


@pytest.mark.parametrize("backend", [Backend.EXECUTORCH, Backend.ONNX], ids=lambda b: b.value)
def test_a_depth_probe_computes_what_the_artifact_computes(planted, shared_export, backend):
    """Reading each depth's hidden state changes nothing: the probe's outputs are the plain run's, and its
    last state is what the head reads (same shapes: one row per token)."""
    from mobile_export import backends
    from mobile_export.model.loading import load_checkpoint
    from mobile_export.model.reference import tokenize
    from mobile_export.parity.texts import CHINESE, ENGLISH

    result = shared_export(planted, ExportOptions())
    fmt = backends.load(backend)
    path = result.out / backends.get_info(backend).file_name
    probe, plain = fmt.depth_runner(path), fmt.Runner(path)
    loaded = load_checkpoint(planted)
    for ex in tokenize(loaded.tokenizer, ENGLISH[:3] + CHINESE[:3], 64):
        outputs, states = probe.run_states(ex.feeds)
        for got, want in zip(outputs, plain.run(ex.feeds), strict=True):
            np.testing.assert_array_equal(got, want)
        assert len(states) == loaded.config.num_hidden_layers
        assert all(s.shape == (ex.length, loaded.config.hidden_size) for s in states)
        assert not np.array_equal(states[0], states[-1])


def test_repair_off_refuses_and_says_where_the_error_comes_from(planted, tmp_path):
    out = tmp_path / "o"
    with pytest.raises(ParityError) as err:
        export(planted, out, ExportOptions(backends=(Backend.ONNX,), repair=Repair.OFF, measure_memory=False))
    assert err.value.exit_code == ExitCode.PARITY_FAILED
    failed = _failed_report(out)
    assert failed["repair"] is None and failed["folds"] is None  # --repair off: nothing changed, not even a fold
    emulated = failed["diagnosis"]["emulated"]["token"]
    by = {w["weight"]: w for w in emulated["weights"]}
    # quantized alone, the weights that read the planted channels cost the most
    assert max(by[r]["alone_db"] for r in READERS) < min(w["alone_db"] for k, w in by.items() if k not in READERS)
    assert emulated["sqnr_db"] < 20 and len(emulated["depth_sqnr_db"]) == 2


def test_a_broken_artifact_is_still_refused_with_repair_on(planted, tmp_path, monkeypatch):
    """Wrong weights (the classifier negated in what is exported) are not an outlier problem: the repair
    runs, and the gate refuses its artifact too."""
    import copy

    import torch

    from mobile_export.exporter import lowering

    original = lowering.lower

    def wrong_weights(run, backend, wrapper, *args, **kwargs):
        broken = copy.deepcopy(wrapper)
        with torch.no_grad():
            broken.model.classifier.weight.neg_()
        return original(run, backend, broken, *args, **kwargs)

    monkeypatch.setattr(lowering, "lower", wrong_weights)
    out = tmp_path / "o"
    with pytest.raises(ParityError, match="parity check failed"):
        export(planted, out, ExportOptions(backends=(Backend.ONNX,), measure_memory=False))
    failed = _failed_report(out)
    assert failed["folds"]["taken"]  # the outliers were folded before lowering: the smooth repair finds none
    smooth, scales, mixed = failed["repair"]["attempts"]
    assert smooth["method"] == "smooth" and smooth["note"] == NOTHING_TO_FOLD and not smooth["passed"]
    assert scales["method"] == "scales" and not scales["passed"]
    # the emulated int8 of the (smoothed) model clears the gate: no weight is kept fp32, nothing re-exported
    assert mixed["method"] == "mixed" and mixed["note"] == NOTHING_TO_KEEP and not mixed["artifacts"]
    assert failed["repair"]["applied"] is None and not failed["passed"]


def test_a_model_that_passes_plain_int8_is_not_touched(tiny_checkpoint, tmp_path, monkeypatch):
    """With repair on, a model whose plain int8 passes is exported exactly as with repair off (lowered for
    real both times: ``monkeypatch`` turns the suite's artifact cache off), and its report has a diagnosis
    that names no outlier channel."""
    ckpt = tiny_checkpoint("text-classification")
    digests = {}
    for mode in (Repair.OFF, Repair.AUTO):
        options = ExportOptions(backends=(Backend.ONNX,), repair=mode, measure_memory=False)
        result = export(ckpt, tmp_path / mode.value, options)
        assert result.passed and result.report["repair"] is None and result.report["folds"] is None
        digests[mode] = {a["file"]: a["sha256"] for a in result.report["artifacts"]}
        inputs = result.report["diagnosis"]["inputs"]
        assert inputs and not any(i["outliers"] for i in inputs)
    assert digests[Repair.OFF] == digests[Repair.AUTO]


@pytest.fixture(scope="module")
def residual(tiny_checkpoint, tmp_path_factory):
    """A tiny classifier with 40x outlier channels in the residual stream (no exact fold exists): both CPU formats
    fail plain int8 (per-token activations: ~19 dB at 35x and 45x; at 20x both passed, 23.4 / 23.6 dB)."""
    source = tiny_checkpoint("text-classification")
    return planted_checkpoint(source, tmp_path_factory.mktemp("residual") / "ckpt", 40.0, plant_residual)


def test_residual_stream_outliers_are_repaired_by_keeping_weights_fp32(residual, shared_export):
    result = shared_export(residual, ExportOptions(measure_memory=False))
    report = result.report
    assert result.passed and report["repair"]["applied"] == "mixed"
    smooth, scales, mixed = report["repair"]["attempts"]
    assert smooth["note"] == NOTHING_TO_FOLD and not smooth["artifacts"]
    # input scales where the emulated int8 gains (each re-exported artifact still refused here), then mixed
    assert scales["method"] == "scales" and not scales["passed"]
    assert scales["note"] == NOTHING_TO_SCALE if not scales["changes"] else all(c["stored_bytes"] for c in scales["changes"])
    print(f"scales: {scales['changes']} -> {[(o['file'], o['before_sqnr_db'], o['after_sqnr_db']) for o in scales['artifacts']]}")
    (change,) = mixed["changes"]  # one choice for both: the .pte and the .onnx quantize activations per token
    assert change["granularity"] == "token" and change["target_met"]
    refused = change["artifacts"]  # the .onnx (~18.7 dB); the .pte is at the gate's edge (19-20 dB by host)
    assert "model.onnx" in refused and set(refused) <= {"model.pte", "model.onnx"}
    kept = change["fp32_weights"]
    assert f"{LAYER}.attention.query" in kept  # the weight that reads the planted channels
    linears = [i["weight"] for i in report["diagnosis"]["inputs"]]
    assert 0 < len(kept) < len(linears) and set(kept) <= set(linears)
    print(f"kept fp32: {kept}")
    for o in mixed["artifacts"]:  # plain, below a gate (overall or one text's SQNR); repaired, above both
        assert o["before_sqnr_db"] < 20 or o["before_min_example_db"] < 15, o
        assert o["after_sqnr_db"] >= 20 and o["after_min_example_db"] >= 15 and o["passed"], o
        # what the repair cost in bytes is reported (at this tiny size the int8 form's own nodes outweigh what a
        # kept weight's fp32 bytes add, so the repaired file may be the smaller)
        assert o["bytes_before"] > 0 and o["bytes_after"] > 0 and o["bytes_after"] != o["bytes_before"]
    assert sorted(o["file"] for o in mixed["artifacts"]) == sorted(refused)
    onnx = next(a for a in report["artifacts"] if a["file"] == "model.onnx")
    cov = onnx["parity"]["coverage"]
    # every weight MatMul is int8 or one the file declares kept fp32 (the shared layer's weights count once)
    assert cov["fp32_weight_matmuls"] == 0 and cov["kept_fp32_weight_matmuls"] == len(kept) and onnx["parity"]["passed"]
    assert len(cov["kept_fp32_weights"]) == len(kept)
    # the size breakdown counts the kept weights as fp32, not as extra copies of the shared layer's int8 ones
    assert onnx["size"]["sharing_preserved"], onnx["size"]["sharing_verdict"]
    assert onnx["size"]["other_constants_bytes"] == 0  # every stored byte is attributed to its weight
    from mobile_export.reports.size import size_report

    (again,) = size_report([str(result.out / "model.onnx")], measure=False)  # the size command, from report.json
    assert again["sharing_preserved"] and again["groups"] == onnx["size"]["groups"]
    pte = next(a for a in report["artifacts"] if a["file"] == "model.pte")
    assert pte["parity"]["passed"] and pte["sha256"] == sha256_file(result.out / "model.pte")
    md = (result.out / "report.md").read_text()
    assert "int8 repair (--repair auto; kept: mixed)" in md and f"kept in fp32 ({', '.join(refused)})" in md
    assert "repair mixed: fp32 for ExecuTorch runtime / ONNX Runtime" in summary(report)


def test_an_fp32_weight_the_file_does_not_declare_is_still_refused(residual, shared_export, tmp_path):
    """The coverage check accepts the repaired .onnx's fp32 MatMuls only because the file declares them:
    the same file without the declaration is an int8 artifact with weights left fp32, and fails."""
    import onnx

    from mobile_export.backends import onnx as onnx_backend
    from mobile_export.core.choices import Quant
    from quantize.onnx_dynamic import FP32_WEIGHTS_KEY

    result = shared_export(residual, ExportOptions(measure_memory=False))
    declared = onnx_backend.coverage(result.out / "model.onnx", Quant.INT8)
    assert declared.kept_fp32_weight_matmuls > 0 and not declared.problems
    model = onnx.load(str(result.out / "model.onnx"))
    kept = [p for p in model.metadata_props if p.key != FP32_WEIGHTS_KEY]
    assert len(kept) == len(model.metadata_props) - 1
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    onnx.save(model, str(tmp_path / "model.onnx"))
    stripped = onnx_backend.coverage(tmp_path / "model.onnx", Quant.INT8)
    assert stripped.kept_fp32_weight_matmuls == 0
    assert stripped.fp32_weight_matmuls == declared.kept_fp32_weight_matmuls and stripped.problems
