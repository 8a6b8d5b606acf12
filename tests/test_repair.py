"""--repair: an int8 export that fails its gate because of outlier channels is repaired and passes the same
gate; a broken artifact is still refused with repair on; a model that passes plain int8 is not touched; every
int8 report says where the error comes from."""

from __future__ import annotations

import json

import pytest

from mobile_export import Backend, ExportOptions, export
from mobile_export.core.config import Repair
from mobile_export.core.errors import ExitCode, ParityError
from mobile_export.core.fsutil import sha256_file
from mobile_export.reports import summary
from outlier_models import LAYER, PLANTED, planted_checkpoint

READERS = ("albert.encoder.embedding_hidden_mapping_in", f"{LAYER}.attention.dense")


@pytest.fixture(scope="module")
def planted(tiny_checkpoint, tmp_path_factory):
    """A tiny classifier with 50x outlier channels that leave its fp32 function unchanged."""
    return planted_checkpoint(tiny_checkpoint("text-classification"), tmp_path_factory.mktemp("planted") / "ckpt", 50.0)


def _failed_report(out):
    assert [p.name for p in out.iterdir()] == ["report.failed.json"]  # nothing else is written
    return json.loads((out / "report.failed.json").read_text())


def test_exact_outliers_are_repaired_and_pass(planted, shared_export):
    result = shared_export(planted, ExportOptions(measure_memory=False))
    report = result.report
    assert result.passed and report["repair"]["applied"] == "smooth"
    (attempt,) = report["repair"]["attempts"]
    assert {c["consumer"] for c in attempt["changes"]} == set(READERS)
    outcomes = {o["file"]: o for o in attempt["artifacts"]}
    assert set(outcomes) == {"model.pte", "model.onnx"}
    for o in outcomes.values():
        assert o["before_sqnr_db"] < 20 <= o["after_sqnr_db"] and o["passed"], o  # plain failed, repaired passes
        assert o["after_sqnr_db"] > o["before_sqnr_db"] + 12
        assert o["bytes_after"] == o["bytes_before"]  # same graph, same shapes: a fold costs no byte
    for a in report["artifacts"]:  # what was written is the repaired artifact, judged by the gate
        assert a["parity"]["passed"] and a["sha256"] == sha256_file(result.out / a["file"])
    inputs = {i["weight"]: i for i in report["diagnosis"]["inputs"]}
    for r in READERS:  # the diagnosis names the planted channels where they are read
        assert {o["channel"] for o in inputs[r]["outliers"]} == set(PLANTED)
    assert not inputs[f"{LAYER}.attention.query"]["outliers"]
    md = (result.out / "report.md").read_text()
    assert "int8 repair (--repair auto; kept: smooth)" in md and "outlier channels (x median)" in md
    assert "repair smooth:" in summary(report)


def test_repair_off_refuses_and_says_where_the_error_comes_from(planted, tmp_path):
    out = tmp_path / "o"
    with pytest.raises(ParityError) as err:
        export(planted, out, ExportOptions(backends=(Backend.ONNX,), repair=Repair.OFF, measure_memory=False))
    assert err.value.exit_code == ExitCode.PARITY_FAILED
    failed = _failed_report(out)
    assert failed["repair"] is None
    emulated = failed["diagnosis"]["emulated"]["tensor"]
    by = {w["weight"]: w for w in emulated["weights"]}
    # quantized alone, the weights that read the planted channels cost the most
    assert max(by[r]["alone_db"] for r in READERS) < min(w["alone_db"] for k, w in by.items() if k not in READERS)
    assert emulated["sqnr_db"] < 20 and len(emulated["depth_sqnr_db"]) == 2


def test_a_broken_artifact_is_still_refused_with_repair_on(planted, tmp_path, monkeypatch):
    """Wrong weights (the classifier negated in what is exported) are not an outlier problem: the repair
    runs, and the gate refuses its artifact too."""
    import copy

    import torch

    from mobile_export.exporter import pipeline

    original = pipeline.export_one

    def wrong_weights(backend, wrapper, *args, **kwargs):
        broken = copy.deepcopy(wrapper)
        with torch.no_grad():
            broken.model.classifier.weight.neg_()
        return original(backend, broken, *args, **kwargs)

    monkeypatch.setattr(pipeline, "export_one", wrong_weights)
    out = tmp_path / "o"
    with pytest.raises(ParityError, match="parity check failed"):
        export(planted, out, ExportOptions(backends=(Backend.ONNX,), measure_memory=False))
    failed = _failed_report(out)
    (attempt,) = failed["repair"]["attempts"]
    assert attempt["method"] == "smooth" and attempt["changes"] and not attempt["passed"]
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
        assert result.passed and result.report["repair"] is None
        digests[mode] = {a["file"]: a["sha256"] for a in result.report["artifacts"]}
        inputs = result.report["diagnosis"]["inputs"]
        assert inputs and not any(i["outliers"] for i in inputs)
    assert digests[Repair.OFF] == digests[Repair.AUTO]
