"""`mobile-export size`: breakdown from the artifact's own blobs, sharing verdict, budgets, memory."""

from __future__ import annotations

import json

import pytest

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.cli.main import main
from mobile_export.core.errors import BadInputError
from mobile_export.measure.budgets import PRESETS, resolve_budget
from mobile_export.measure.size import breakdown


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def tiny_export(tiny_checkpoint, tmp_path_factory):
    out = tmp_path_factory.mktemp("size") / "out"
    export(tiny_checkpoint(num_hidden_layers=3), out, ExportOptions(quant=Quant.INT8, budget="play-base"))
    return out


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_export_report_has_size_memory_and_budget(tiny_export):
    report = json.loads((tiny_export / "report.json").read_text())
    assert report["budget"]["source"].startswith("https://") and report["budget"]["checked"]
    assert report["within_budget"] is True
    for art in report["artifacts"]:
        size = art["size"]
        assert size["bytes"] == art["bytes"] and 0 < size["deflate_bytes"] < size["bytes"] * 1.01
        assert size["sharing_preserved"] is True
        assert size["parameters"]["unshared"] > size["parameters"]["unique"]
        assert sum(size["groups"].values()) + size["overhead_bytes"] == size["bytes"]
        assert all(size["groups"][g] > 0 for g in ("word embeddings", "shared encoder layer", "task head"))
        mem = size["memory"]
        assert mem["peak_rss_bytes"] > mem["model_rss_bytes"] > 0
        assert size["budgets"][0]["within"]


def test_size_command_prints_breakdown_and_checks_budgets(tiny_export, capsys):
    code, out, err = _run(["size", str(tiny_export / "model.pte"), str(tiny_export / "model.onnx"),
                           "--budget", "app-store-cellular", "--no-memory"], capsys)
    assert code == 0, err
    for needle in ("word embeddings", "shared encoder layer", "format overhead", "sharing: preserved",
                   "deflate-compressed", "App Store cellular download"):
        assert needle in out
    code, out, err = _run(["size", str(tiny_export / "model.onnx"), "--budget", "1KB", "--no-memory", "--json"],
                          capsys)
    assert code == 4
    entry = json.loads(out)[0]
    over = entry["bytes"] - 1000
    assert entry["budgets"][0]["over_bytes"] == over
    assert f"{over:,} B over" in err and len(err.strip().splitlines()) == 1


def test_size_command_bad_input(tmp_path, capsys):
    code, _, err = _run(["size", str(tmp_path / "nope.pte")], capsys)
    assert code == 2 and "does not exist" in err
    (tmp_path / "x.bin").write_bytes(b"0" * 100)
    code, _, err = _run(["size", str(tmp_path / "x.bin"), "--no-memory"], capsys)
    assert code == 2 and ".pte, .onnx, .ort, .qnn.onnx and .tflite" in err and "Traceback" not in err
    code, _, err = _run(["size", str(tmp_path / "x.bin"), "--budget", "tiny"], capsys)
    assert code == 2 and "play-base" in err


def test_budget_presets_carry_source_and_date():
    for name, b in PRESETS.items():
        assert b.compressed and b.bytes >= 100 * 10**6 and b.source.startswith("https://") and b.checked
        assert resolve_budget(name) is b
    assert resolve_budget("15MB").bytes == 15_000_000 and not resolve_budget("15MB").compressed
    with pytest.raises(BadInputError):
        resolve_budget("fifteen")


def test_export_over_a_budget_exits_4_and_writes_nothing(tiny_checkpoint, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = _run(["export", str(tiny_checkpoint()), "--out", str(out), "--backend", "onnx", "--budget", "2KB",
                         "--no-memory", "--quiet"], capsys)
    assert code == 4 and "B over" in err
    assert not (out / "model.onnx").exists() and (out / "report.failed.json").exists()


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_verdict_catches_unshared_weights(tiny_checkpoint, tmp_path):
    """An artifact holding one copy of the layer per layer is flagged, whatever the file is named."""
    ckpt = tiny_checkpoint("feature-extraction", num_hidden_layers=3, num_hidden_groups=3)
    result = export(ckpt, tmp_path / "o", ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT8,
                                                          measure_memory=False))
    unshared_model = result.report["model"]
    assert result.report["artifacts"][0]["size"]["sharing_preserved"]  # true to its own (unshared) config
    claimed = json.loads(json.dumps(unshared_model))
    claimed["config"]["num_hidden_groups"] = 1  # what an ALBERT with shared layers would store
    verdict = breakdown(tmp_path / "o" / "model.onnx", claimed, "int8", True)
    assert verdict["sharing_preserved"] is False
    assert verdict["extra_copies_bytes"]["shared encoder layer"] > 0
    assert "NOT preserved" in verdict["sharing_verdict"]


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_verdict_catches_a_matrix_left_at_full_precision(tiny_checkpoint, tmp_path):
    """A quantized artifact that also stores a weight matrix at fp32 (as an int4 .onnx did whose tied table the
    4-bit lookup missed) holds a second copy of it: flagged, with the bytes, where the file without it passes."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    ckpt = tiny_checkpoint("feature-extraction", num_hidden_layers=2)
    result = export(ckpt, tmp_path / "o", ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT8,
                                                          measure_memory=False))
    model_info = result.report["model"]
    good = tmp_path / "o" / "model.onnx"
    assert breakdown(good, model_info, "int8", True)["sharing_preserved"] is True
    config = model_info["config"]
    model = onnx.load(str(good))
    table = np.zeros((config["vocab_size"], config["embedding_size"]), dtype=np.float32)
    model.graph.initializer.append(numpy_helper.from_array(table, "fp32_word_table"))
    bad = tmp_path / "bad" / "model.onnx"
    bad.parent.mkdir()
    onnx.save(model, str(bad), save_as_external_data=True, location="model.onnx.data")
    verdict = breakdown(bad, model_info, "int8", True)
    assert verdict["sharing_preserved"] is False, verdict["sharing_verdict"]
    assert verdict["extra_copies_bytes"]["word embeddings"] == table.nbytes
