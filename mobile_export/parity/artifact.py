"""One exported file and how it did: what a check returns per artifact and a report records."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..backends.base import ArtifactStats
from ..core.config import Backend, Quant
from .metrics import ParityResult
from .plots import PlotData


@dataclass
class ArtifactResult:
    """One exported file and how it did."""

    backend: Backend
    quant: Quant
    file: str
    bytes: int
    sha256: str
    export_seconds: float
    parity: ParityResult
    stats: ArtifactStats = field(default_factory=lambda: ArtifactStats())  # export and runtime facts, as JSON
    plot: PlotData | None = None
    isa: list[dict] = field(default_factory=list)  # the same artifact on other instruction sets (emulated)
