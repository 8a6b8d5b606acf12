"""ONNX (opset 18) for ONNX Runtime: the format's side of the contract in ``..base``.

Export (``lowering``: the torch exporter, the shared layer as a Loop body, int8 per-token / int4 block-wise
weights), the host's int8 modes (``precision``: ``base.HostPrecision``), the file's layout (``layout``:
page-aligned external data), what a file holds (``inspection``), whether a user's file is sound (``validation``)
and running it (``runner``). onnxruntime is imported only here.
"""

from __future__ import annotations

from .bundle import bundle, bundled
from .convention import usage
from .inspection import INT4_OPS, coverage, int4_group_size, matmul_coverage, memory_sharing, quant_of, stored_quant
from .layout import DATA_SUFFIX, blobs, files
from .lowering import OPSET, export
from .options import OnnxOptions as Options
from .precision import describe_precision, phone_precision, precision_modes
from .runner import OnnxRunner as Runner
from .runner import depth_runner
from .validation import check, check_interface

__all__ = [
    "Options",
    "DATA_SUFFIX",
    "INT4_OPS",
    "OPSET",
    "Runner",
    "blobs",
    "check",
    "check_interface",
    "coverage",
    "describe_precision",
    "bundle",
    "bundled",
    "depth_runner",
    "export",
    "files",
    "int4_group_size",
    "matmul_coverage",
    "memory_sharing",
    "phone_precision",
    "precision_modes",
    "quant_of",
    "runtime_version",
    "stored_quant",
    "usage",
]


def runtime_version() -> str:
    """The installed ONNX Runtime version."""
    import onnxruntime

    return onnxruntime.__version__
