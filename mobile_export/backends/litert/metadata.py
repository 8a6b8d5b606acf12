"""What the .tflite records about itself in its own metadata entry (written by ``lowering``, read by the runner,
the checks and the tests): the fixed length, its inputs, the outputs per token, the quantization recipe."""

from __future__ import annotations

import json
from typing import Any

META_KEY = "mobile_export.litert"
INPUTS = ("ids", "mask", "segment_ids")  # MediaPipe's BERT input names (its metadata writers' defaults)
SIGNATURE = "serving_default"  # the one signature litert-torch writes; tensor names are "serving_default_<input>"


def facts(entries: dict[str, bytes]) -> dict[str, Any]:
    """What the export recorded (``META_KEY``) among a model's metadata entries, {} when absent or unreadable."""
    raw = entries.get(META_KEY)
    if raw is None:
        return {}
    try:
        found = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return found if isinstance(found, dict) else {}


def tensor_name(name: str) -> str:
    """The tensor name the converter gives the input ``name`` (what MediaPipe's metadata points at)."""
    return f"{SIGNATURE}_{name}"
