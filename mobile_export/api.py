"""The Python API: export a checkpoint, check artifacts, write tokenizer assets, break sizes down.

Each command lives in its own module (``pipeline``, ``runtime_check``, ``assets``, ``size_command``);
this module is the stable place to import them from.
"""

from __future__ import annotations

from .assets import write_tokenizer
from .pipeline import ExportResult, export
from .runtime_check import ArtifactResult, detect_quant, parity_check
from .size_command import size_report

__all__ = ["ArtifactResult", "ExportResult", "detect_quant", "export", "parity_check", "size_report", "write_tokenizer"]
