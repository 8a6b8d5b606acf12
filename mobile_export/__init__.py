"""mobile-export: ALBERT checkpoints and the encoders beside them to phone formats, each checked in its runtime.

Public API::

    from mobile_export import export, ExportOptions, Backend, Quant
    result = export("path/to/albert", "out/", ExportOptions(quant=Quant.INT8))
    predictor = load("out/", backend="onnx")   # an export without its checkpoint
    print(predictor("这个手机很好用"))           # typed results: Classification, Entity, Answer, ...

The names load on first use, so a process that needs one module (the emulated ARM64 worker needs only
the runtimes' runners) does not import the whole pipeline. Where the code lives (subpackages by concept,
each importing only those below it): docs/contributing.md, "Where things are".
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports each name on first use
    from .assets.tokenizer import write_tokenizer
    from .core.choices import Quant
    from .backends import Backend
    from .core.errors import (
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
    from .core.thresholds import Thresholds
    from .exporter.check import parity_check
    from .exporter.options import ExportOptions, ParityOptions
    from .exporter.pipeline import ExportResult, export
    from .model.loading import LoadedModel, load_checkpoint
    from .parity.artifact import ArtifactResult
    from .reports.size import size_report
    from .run.predictor import Predictor, load
    from .run.results import Answer, Classification, Embedding, Entity, Fill, MaskFills

# Each public name and the module it lives in: export, parity, size, tokenizer assets, load / Predictor and
# its typed results, the loaded checkpoint, options, errors and exit codes.
_HOMES = {
    "export": "exporter.pipeline",
    "ExportResult": "exporter.pipeline",
    "parity_check": "exporter.check",
    "ArtifactResult": "parity.artifact",
    "size_report": "reports.size",
    "write_tokenizer": "assets.tokenizer",
    "load": "run.predictor",
    "Predictor": "run.predictor",
    "Classification": "run.results",
    "Entity": "run.results",
    "Answer": "run.results",
    "Fill": "run.results",
    "MaskFills": "run.results",
    "Embedding": "run.results",
    "LoadedModel": "model.loading",
    "load_checkpoint": "model.loading",
    "Backend": "backends",
    "ExportOptions": "exporter.options",
    "ParityOptions": "exporter.options",
    "Quant": "core.choices",
    "Thresholds": "core.thresholds",
    "BadInputError": "core.errors",
    "BudgetError": "core.errors",
    "CheckpointError": "core.errors",
    "ExitCode": "core.errors",
    "ExportFailedError": "core.errors",
    "MobileExportError": "core.errors",
    "OutputError": "core.errors",
    "ParityError": "core.errors",
    "UnsupportedError": "core.errors",
}
__all__ = [
    "Answer",
    "ArtifactResult",
    "Backend",
    "BadInputError",
    "BudgetError",
    "CheckpointError",
    "Classification",
    "Embedding",
    "Entity",
    "ExitCode",
    "ExportFailedError",
    "ExportOptions",
    "ExportResult",
    "Fill",
    "LoadedModel",
    "MaskFills",
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
