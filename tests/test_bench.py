"""`mobile-export bench` produces complete, sane numbers (no test asserts a speed)."""

from __future__ import annotations

import json

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.backends.onnx.precision import Precision, precision_for, saturates
from mobile_export.cli.main import main
from mobile_export.core.host import this_host
import pytest

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full


def test_bench_measures_artifact_and_eager(tiny_checkpoint, tmp_path, capsys):
    ckpt = tiny_checkpoint()
    export(ckpt, tmp_path / "o", ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT8, measure_memory=False))
    code = main(["bench", str(tmp_path / "o" / "model.onnx"), "--checkpoint", str(ckpt), "--seq-lens", "8,16",
                 "--threads", "1", "--runs", "3", "--json", str(tmp_path / "b.json")])
    out = capsys.readouterr().out
    assert code == 0
    assert "PyTorch fp32 eager" in out and "model.onnx" in out
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["machine"]["logical_cpus"] >= 1
    names = [r["name"] for r in result["results"]]
    mode = precision_for()
    assert result["machine"]["onnxruntime_precision"] == mode.describe(this_host())
    assert f"onnxruntime {mode.value}" in out
    # host-dependent: where ONNX Runtime's u8s8 kernel saturates, the artifact is measured in both modes
    if saturates(this_host()):
        assert names == ["PyTorch fp32 eager", "model.onnx [u8u8]", "model.onnx [u8s8]"]
    else:
        assert names == ["PyTorch fp32 eager", "model.onnx"]
    assert [r.get("precision") for r in result["results"][1:]] == [m.value for m in
                                                                    (mode, Precision.NATIVE)[: len(names) - 1]]
    for r in result["results"]:
        assert set(r["latency_ms"]) == {"8", "16"}
        assert all(0 < v["median"] <= v["p90"] for v in r["latency_ms"].values())
        assert r["throughput_texts_per_s"]["value"] > 0 and r["peak_rss_bytes"] > r["model_rss_bytes"] > 0
        assert r["speedup_vs_eager"]["16"] > 0


def test_bench_bad_input(tmp_path, capsys):
    assert main(["bench", str(tmp_path / "x.onnx")]) == 2
    assert "does not exist; pass .pte" in capsys.readouterr().err
    assert main(["bench", str(tmp_path / "x.onnx"), "--seq-lens", "a,b"]) == 2
    assert "comma-separated" in capsys.readouterr().err
