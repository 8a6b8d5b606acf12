"""An export that writes the .onnx and the .ort lowers the model once: the .ort is converted from the checked .onnx of
the same export (ONNX Runtime's converter), and passes its own parity check in ONNX Runtime."""

from __future__ import annotations

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.backends import onnx as onnx_backend
from mobile_export.backends import ort as ort_backend


def _count(monkeypatch, module, name: str) -> list[int]:
    calls = [0]
    real = getattr(module, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_onnx_and_ort_lower_the_model_once(tiny_checkpoint, tmp_path, monkeypatch):
    lowered = _count(monkeypatch, onnx_backend, "export")
    converted = _count(monkeypatch, ort_backend, "convert")
    options = ExportOptions(backends=(Backend.ORT, Backend.ONNX), quant=Quant.INT8, measure_memory=False)
    result = export(tiny_checkpoint(), tmp_path / "both", options)
    assert (lowered[0], converted[0]) == (1, 1)
    assert [a.file for a in result.artifacts] == ["model.ort", "model.onnx"]  # the order the user asked for
    assert all(a.parity.passed for a in result.artifacts)
    ort_stats = next(a for a in result.report["artifacts"] if a["file"] == "model.ort")["stats"]
    assert ort_stats["onnx_bytes"] > 0 and ort_stats["format"].startswith("ORT flatbuffer")


def test_an_ort_alone_still_lowers_its_own_onnx(tiny_checkpoint, tmp_path, monkeypatch):
    lowered = _count(monkeypatch, onnx_backend, "export")
    converted = _count(monkeypatch, ort_backend, "convert")
    result = export(tiny_checkpoint(), tmp_path / "ort", ExportOptions(backends=(Backend.ORT,), measure_memory=False))
    assert (lowered[0], converted[0]) == (1, 1)
    assert result.passed and not (tmp_path / "ort" / "model.onnx").exists()
