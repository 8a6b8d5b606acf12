"""How an app loads and calls the exported .onnx / .ort, recorded in the manifest."""

from __future__ import annotations

from typing import Any

from ...core.signature import INPUT_NAMES
from ..base import ExportStats
from .inspection import INT4_OPS
from .precision import OPTION


def usage(stats: ExportStats) -> dict[str, Any]:
    """How an app loads and calls this export's .onnx / .ort (recorded in manifest.json)."""
    return {
        "load": "from the .onnx file's path with model.onnx.data beside it (Android: "
        "OrtEnvironment.createSession(path, options)), not a Java byte[]",
        "calling_convention": {
            "name": "single-graph/1",
            "inputs": stats.get("inputs", list(INPUT_NAMES)),
            "loop": "outputs = run(inputs)",
        },
        # what the app's OrtRunner sets; without it an x86-64 CPU without VNNI saturates the int8 GEMM
        "session_config": {OPTION: "1"},
        **(
            {
                "kernels": f"{', '.join(INT4_OPS)} (com.microsoft contrib ops: the full onnxruntime-android "
                "package, not a reduced ORT-format build)"
            }
            if stats.get("int4")
            else {}
        ),
    }
