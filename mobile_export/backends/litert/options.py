"""What only the .tflite's export reads (nothing yet: its length is --max-seq-len, its precision --quant)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LitertOptions:
    """The .tflite's own export options: none beyond the export's (the length, the precision)."""
