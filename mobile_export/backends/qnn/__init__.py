"""The phone's NPU (Qualcomm Hexagon HTP) through ONNX Runtime's QNN execution provider: a QDQ .onnx at one fixed
sequence length, statically quantized (uint8 weights, uint16 or uint8 activations), the format's side of the
contract in ``..base``. Export (``lowering``), sessions on the HTP (``htp``: the simulator on x86-64, with CPU
fallback disabled), running it (``runner``; ``pool``: several simulators side by side), what a file holds
(``inspection``), whether it is sound (``validation``), how an app calls it (``convention``). onnxruntime_qnn is
imported only here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..onnx.bundle import bundle, bundled
from .convention import usage
from .htp import version as runtime_version
from .inspection import blobs, coverage, int4_group_size, memory_sharing, stored_quant
from .lowering import export
from .options import QnnOptions as Options
from .pool import SimulatorPool as Pool
from .precompile import compiled_for, precompile, targets
from .ranges import REPAIRED
from .runner import QnnRunner as Runner
from .validation import check

if TYPE_CHECKING:  # the runners load without torch
    from ...model.reference import Example

__all__ = [
    "Options",
    "Pool",
    "Runner",
    "blobs",
    "check",
    "compiled_for",
    "coverage",
    "depth_runner",
    "diagnose",
    "bundle",
    "bundled",
    "export",
    "files",
    "int4_group_size",
    "length_graphs",
    "memory_sharing",
    "precompile",
    "targets",
    "ranges_headroom",
    "runtime_version",
    "sequence_length",
    "stored_quant",
    "usage",
]


def files(path: Path) -> list[Path]:
    """The artifact's files: the QDQ model holds its weights."""
    return [path]


def depth_runner(path: Path) -> None:
    """None: the HTP runs the unrolled graph as one QNN graph; no depth's state is handed out."""
    return None


def sequence_length(stats: dict[str, Any]) -> int | None:
    """The one length the file runs, as its lowering recorded it (``base.FixedLength``)."""
    from ..fixed import recorded_length

    return recorded_length(stats, "qnn")


def length_graphs(strings: dict[str, str], shown: str) -> dict[int, int]:
    """The bytes of the graph stored for each shorter length (``--npu-lengths``), by length (``base.FixedLength``)."""
    from .graphs import stored_bytes

    return stored_bytes(strings, shown)


def diagnose(path: Path, examples: Sequence[Example], inputs: Sequence[str]) -> dict[str, Any] | None:
    """The freshly lowered file against the float model its lowering quantized and left beside it, per tensor
    (``diagnosis``); None when that model is not there (``base.Diagnosing``)."""
    from .diagnosis import diagnose_qdq, reference_path

    reference = reference_path(path)
    if not reference.exists() or not examples:
        return None
    return diagnose_qdq(path, reference, examples, inputs).to_json()


def ranges_headroom() -> dict[str, float]:
    """The ranges repair's factor for a clipped activation, per activation precision (``ranges.REPAIRED``)."""
    return {f"uint{bits}": factor for bits, factor in REPAIRED.items()}
