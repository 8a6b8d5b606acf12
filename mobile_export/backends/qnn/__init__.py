"""The phone's NPU (Qualcomm Hexagon HTP) through ONNX Runtime's QNN execution provider: a QDQ .onnx at one fixed
sequence length, statically quantized (uint8 weights, uint16 or uint8 activations), the format's side of the
contract in ``..base``. Export (``lowering``), sessions on the HTP (``htp``: the simulator on x86-64, with CPU
fallback disabled), running it (``runner``; ``pool``: several simulators side by side), what a file holds
(``inspection``), whether it is sound (``validation``), how an app calls it (``convention``). onnxruntime_qnn is
imported only here."""

from __future__ import annotations

from pathlib import Path

from ..onnx.embedding import embed, embedded
from .convention import usage
from .htp import version as runtime_version
from .inspection import blobs, coverage, int4_group_size, memory_sharing, stored_quant
from .lowering import export
from .options import QnnOptions as Options
from .pool import Pool
from .precompile import precompile
from .runner import Runner
from .validation import check

__all__ = [
    "Options",
    "Pool",
    "Runner",
    "blobs",
    "check",
    "coverage",
    "depth_runner",
    "embed",
    "embedded",
    "export",
    "files",
    "int4_group_size",
    "memory_sharing",
    "precompile",
    "runtime_version",
    "stored_quant",
    "usage",
]


def files(path: Path) -> list[Path]:
    """The artifact's files: the QDQ model holds its weights."""
    return [path]


def depth_runner(path: Path) -> None:
    """None: the HTP runs the unrolled graph as one QNN graph; no depth's state is handed out."""
    return None
