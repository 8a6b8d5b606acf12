"""Backend registry: capabilities as data (checked before any expensive work), code loaded lazily.

Each backend module provides::

    export(wrapper, example, dynamic_shapes, quant, dest, progress) -> dict   # stats for the report
    Runner(path).run(feeds: dict[str, np.ndarray]) -> list[np.ndarray]
    RUNTIME_VERSION() -> str

executorch and onnxruntime are imported only inside their backend module.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from ..config import Backend, Quant
from ..errors import UnsupportedError


@dataclass(frozen=True)
class BackendInfo:
    backend: Backend
    file_name: str
    module: str
    runtime: str
    quants: frozenset[Quant]
    dynamic_batch: bool
    notes: str


BACKENDS: dict[Backend, BackendInfo] = {
    Backend.EXECUTORCH: BackendInfo(
        backend=Backend.EXECUTORCH, file_name="model.pte", module="mobile_export.backends.executorch",
        runtime="ExecuTorch runtime, XNNPACK delegate", quants=frozenset({Quant.INT8, Quant.FP32}),
        dynamic_batch=False,
        notes="batch fixed at 1 (ExecuTorch plans memory for the upper bound of every dynamic dim); "
              "sequence length dynamic from 2 to the max length",
    ),
    Backend.ONNX: BackendInfo(
        backend=Backend.ONNX, file_name="model.onnx", module="mobile_export.backends.onnx",
        runtime="ONNX Runtime (CPU)", quants=frozenset({Quant.INT8, Quant.FP32}), dynamic_batch=True,
        notes="batch and sequence length dynamic; opset 18; self-contained (no external data)",
    ),
    Backend.ORT: BackendInfo(
        backend=Backend.ORT, file_name="model.ort", module="mobile_export.backends.ort",
        runtime="ONNX Runtime (CPU), ORT format", quants=frozenset({Quant.INT8, Quant.FP32}), dynamic_batch=True,
        notes="the .onnx converted to ONNX Runtime Mobile's ORT format (graph optimizations applied, "
              "no x86-only layouts); opt-in with --backend ort",
    ),
}


def get_info(backend: Backend) -> BackendInfo:
    return BACKENDS[backend]


def check_supported(backend: Backend, quant: Quant) -> None:
    """Raise UnsupportedError for a (backend, quant) pair the registry does not offer."""
    info = BACKENDS[backend]
    if quant not in info.quants:
        offered = ", ".join(sorted(q.value for q in info.quants))
        raise UnsupportedError(f"backend {backend.value} does not offer --quant {quant.value}; it offers: {offered}")


def load(backend: Backend) -> ModuleType:
    """Import the backend module (and with it its runtime library)."""
    return importlib.import_module(BACKENDS[backend].module)


def combinations() -> list[tuple[Backend, Quant]]:
    """Every (backend, quant) the registry offers, for listing and for the test guard."""
    return [(b, q) for b, info in BACKENDS.items() for q in sorted(info.quants, key=lambda q: q.value)]
