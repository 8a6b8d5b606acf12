"""LiteRT (TensorFlow Lite) for the apps that already run it: a .tflite at one fixed sequence length with int32
inputs, converted by ``litert-torch`` and quantized by ``litert-quantizer`` (``lowering``), its buffers inside the
flatbuffer and stored once (``flatbuffer``), MediaPipe Tasks Text's metadata (``mediapipe``) beside our own entries
(``embedding``), run in LiteRT's interpreter with XNNPACK (``runner``), what a file holds (``inspection``), whether it
is sound (``validation``), how an app calls it (``convention``). The format's side of the contract in ``..base``;
litert_torch, litert_quantizer, ai_edge_litert and mediapipe are imported only here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .convention import usage
from .bundle import bundle, bundled
from .inspection import blobs, coverage, int4_group_size, memory_sharing, stored_quant
from .lowering import export
from .mediapipe import task_metadata
from .options import LitertOptions as Options
from .runner import LitertRunner as Runner
from .validation import check

__all__ = [
    "Options",
    "Runner",
    "blobs",
    "check",
    "coverage",
    "depth_runner",
    "bundle",
    "bundled",
    "export",
    "files",
    "int4_group_size",
    "memory_sharing",
    "runtime_version",
    "sequence_length",
    "stored_quant",
    "task_metadata",
    "usage",
]


def runtime_version() -> str:
    """The installed LiteRT interpreter's version (ai-edge-litert)."""
    from importlib.metadata import version

    return version("ai-edge-litert")


def files(path: Path) -> list[Path]:
    """The artifact's files: the flatbuffer holds its weights and its metadata."""
    return [path]


def depth_runner(path: Path) -> None:
    """None: the interpreter runs the unrolled graph; no depth's state is handed out."""
    return None


def sequence_length(stats: dict[str, Any]) -> int | None:
    """The one length the file runs, as its lowering recorded it (``base.FixedLength``)."""
    from ..fixed import recorded_length

    return recorded_length(stats, "litert")


def length_graphs(strings: dict[str, str], shown: str) -> dict[int, int]:
    """Empty: a .tflite runs one length (``base.FixedLength``)."""
    return {}
