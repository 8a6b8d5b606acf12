"""mobile-export: ALBERT checkpoints to verified int8 ExecuTorch (.pte) and ONNX artifacts.

Public API::

    from mobile_export import export, ExportOptions, Backend, Quant
    result = export("path/to/albert", "out/", ExportOptions(quant=Quant.INT8))
    predictor = load("out/", backend="onnx")   # an export without its checkpoint
    print(predictor("这个手机很好用"))           # typed results: Classification, Entity, Answer, ...

The names load on first use, so a process that needs one module (the emulated ARM64 worker needs only
the runtimes' runners) does not import the whole pipeline.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports each name on first use
    from .api import ArtifactResult, ExportResult, export, parity_check, size_report, write_tokenizer
    from .config import Backend, ExportOptions, ParityOptions, Quant, Thresholds
    from .errors import (
        BadInputError,
        BudgetError,
        CheckpointError,
        ExitCode,
        ExportFailedError,
        MobileExportError,
        OutputError,
        ParityError,
        UnsupportedError,
    )
    from .loading import LoadedModel, load_checkpoint
    from .predictor import Predictor, load

_HOMES = {
    "ArtifactResult": "api",
    "ExportResult": "api",
    "export": "api",
    "parity_check": "api",
    "size_report": "api",
    "write_tokenizer": "api",
    "Backend": "config",
    "ExportOptions": "config",
    "ParityOptions": "config",
    "Quant": "config",
    "Thresholds": "config",
    "BadInputError": "errors",
    "BudgetError": "errors",
    "CheckpointError": "errors",
    "ExitCode": "errors",
    "ExportFailedError": "errors",
    "MobileExportError": "errors",
    "OutputError": "errors",
    "ParityError": "errors",
    "UnsupportedError": "errors",
    "LoadedModel": "loading",
    "load_checkpoint": "loading",
    "Predictor": "predictor",
    "load": "predictor",
}
__all__ = [
    "ArtifactResult",
    "Backend",
    "BadInputError",
    "BudgetError",
    "CheckpointError",
    "ExitCode",
    "ExportFailedError",
    "ExportOptions",
    "ExportResult",
    "LoadedModel",
    "MobileExportError",
    "OutputError",
    "ParityError",
    "ParityOptions",
    "Predictor",
    "Quant",
    "Thresholds",
    "UnsupportedError",
    "export",
    "load",
    "load_checkpoint",
    "parity_check",
    "size_report",
    "write_tokenizer",
]


def __getattr__(name: str):
    """The public name ``name``, imported from its module on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module 'mobile_export' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value
