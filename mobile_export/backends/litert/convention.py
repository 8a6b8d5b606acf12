"""How an app loads and calls the .tflite, recorded in the manifest."""

from __future__ import annotations

from typing import Any

from ...core.signature import INPUT_NAMES
from ..base import ExportStats
from .metadata import INPUTS, SIGNATURE


def usage(stats: ExportStats) -> dict[str, Any]:
    """How an app loads and calls this export's .tflite (recorded in manifest.json)."""
    facts: dict[str, Any] = dict(stats.get("litert") or {})
    length = facts.get("sequence_length")
    return {
        "load": "LiteRT's Interpreter (Android: org.tensorflow.lite / com.google.ai.edge.litert, XNNPACK by default); "
        "or MediaPipe Tasks Text's TextClassifier / TextEmbedder where the file carries MediaPipe's metadata",
        "calling_convention": {
            "name": "fixed-length-int32/1",
            "signature": SIGNATURE,
            "inputs": stats.get("inputs", list(INPUT_NAMES)),
            "tensors": dict(zip(INPUT_NAMES, INPUTS)),
            "dtype": "int32",
            "shape": [1, length],
            "segment_ids": "zeros where the model takes no token_type_ids (DistilBERT): MediaPipe feeds all three",
            "loop": f"right-pad every input to {length} tokens (id 0, mask 0); read the first n positions of "
            f"per-token outputs ({', '.join(facts.get('per_token_outputs', [])) or 'none'}); outputs output_0.. in "
            "the manifest's order",
        },
        "mediapipe": "MediaPipe tokenizes and truncates a longer text to the file's length itself",
    }
