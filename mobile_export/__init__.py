"""mobile-export: ALBERT checkpoints to verified int8 ExecuTorch (.pte) and ONNX artifacts.

Public API::

    from mobile_export import export, ExportOptions, Backend, Quant
    result = export("path/to/albert", "out/", ExportOptions(quant=Quant.INT8))
"""

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

__all__ = [
    "ArtifactResult", "Backend", "BadInputError", "BudgetError", "CheckpointError", "ExitCode",
    "ExportFailedError", "ExportOptions", "ExportResult", "LoadedModel", "MobileExportError", "OutputError",
    "ParityError", "ParityOptions", "Quant", "Thresholds", "UnsupportedError", "export", "load_checkpoint",
    "parity_check", "size_report", "write_tokenizer",
]
