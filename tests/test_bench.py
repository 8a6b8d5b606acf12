"""`mobile-export bench` produces complete, sane numbers (no test asserts a speed)."""

from __future__ import annotations

import json

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.cli import main


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
    assert names == ["PyTorch fp32 eager", "model.onnx"]
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
