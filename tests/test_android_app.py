"""The Android app's build settings against what an export writes (the app itself compiles in `make android-compile`)."""

from __future__ import annotations

import re
from pathlib import Path

from mobile_export.core.choices import Quant
from mobile_export.backends import Backend
from mobile_export.exporter.options import ExportOptions

REPO = Path(__file__).resolve().parent.parent
GRADLE = REPO / "android_demo" / "app" / "build.gradle.kts"


def _no_compress() -> list[str]:
    match = re.search(r"noCompress \+= listOf\(([^)]*)\)", GRADLE.read_text())
    assert match, "android_demo/app/build.gradle.kts has no noCompress list"
    return re.findall(r'"([^"]+)"', match.group(1))


def test_every_artifact_file_is_stored_uncompressed_in_the_apk(tiny_checkpoint, shared_export):
    """A compressed asset cannot be mapped and is inflated on every copy: each model file needs a noCompress suffix."""
    out = shared_export(tiny_checkpoint(), ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX), quant=Quant.INT8,
                                                         measure_memory=False)).out
    models = [p.name for p in out.iterdir() if p.name.startswith("model.")]
    assert {"model.pte", "model.onnx", "model.onnx.data"} <= set(models)
    suffixes = _no_compress()
    assert [m for m in models if not any(m.endswith(s) for s in suffixes)] == []
    assert not any("labels.json".endswith(s) for s in suffixes)  # small text assets may stay compressed
