"""One exported file and how it did: what a check returns per artifact and report.json records of it
(``ArtifactResult.to_json`` writes the entry, ``from_json`` reads it back)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from quantize.schemes import scheme_name

from ..backends.base import ArtifactStats
from ..core.choices import DEFAULT_INT4_GROUP_SIZE, Quant
from ..backends import Backend
from .metrics import ParityResult
from .plots import PlotData


@dataclass(frozen=True)
class VsHost:
    """An emulated run against this machine's run of the same artifact."""

    decisive_agreement: float | None
    agreement: float | None
    max_abs_diff: float
    sqnr_db: float
    min_agreement: float  # the gate on decisive agreement with this machine


@dataclass(frozen=True)
class IsaRun:
    """The artifact on one emulated CPU model (``parity --isa arm64``): judged against fp32 by the artifact's own
    limits, and against this machine's run of it."""

    cpu: str
    n_examples: int
    max_abs_diff: float
    sqnr_db: float
    min_example_sqnr_db: float | None
    agreement: float | None
    decisive_agreement: float | None
    near_ties: int
    accuracy: float | None
    vs_host: VsHost
    failures: tuple[str, ...]
    isa: str = "arm64"
    features: tuple[str, ...] = ()  # what the emulated CPU announced (dotprod, i8mm, sve2, sme2, ...)

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        """One entry of report.json's ``parity.isa``."""
        d = asdict(self)
        return {
            "isa": d.pop("isa"),
            **{k: d[k] for k in ("cpu", "n_examples", "max_abs_diff", "sqnr_db", "min_example_sqnr_db")},
            "features": list(self.features),
            **{k: d[k] for k in ("agreement", "decisive_agreement", "near_ties", "accuracy", "vs_host")},
            "passed": self.passed,
            "failures": list(self.failures),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IsaRun:
        """The run ``to_json`` wrote."""
        v = d["vs_host"]
        return cls(
            d["cpu"],
            int(d.get("n_examples", 0)),
            d["max_abs_diff"],
            d["sqnr_db"],
            d.get("min_example_sqnr_db"),
            d.get("agreement"),
            d.get("decisive_agreement"),
            int(d.get("near_ties") or 0),
            d.get("accuracy"),
            VsHost(
                v.get("decisive_agreement"),
                v.get("agreement"),
                v["max_abs_diff"],
                v.get("sqnr_db", 0.0),
                v.get("min_agreement", 0.99),
            ),
            tuple(d.get("failures", ())),
            d.get("isa", "arm64"),
            tuple(d.get("features", ())),
        )


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
    isa: list[IsaRun] = field(default_factory=list)  # the same artifact on other instruction sets (emulated)

    @property
    def scheme(self) -> str:
        """The quantization scheme's name (int4: with the group size the lowering used)."""
        return scheme_name(
            self.quant.value, (self.stats.get("int4") or {}).get("group_size") or DEFAULT_INT4_GROUP_SIZE
        )

    @property
    def median_ms(self) -> float | None:
        """Median ms per text during the parity run (batch 1, mixed lengths; not a benchmark)."""
        latency = (self.stats or {}).get("parity_latency_ms") or {}
        return latency.get("median")

    def to_json(self) -> dict[str, Any]:
        """The artifact's report.json entry (a report adds its ``size`` or ``path``)."""
        return {
            "backend": self.backend.value,
            "file": self.file,
            "quant": self.quant.value,
            "scheme": self.scheme,
            "bytes": self.bytes,
            "sha256": self.sha256,
            "export_seconds": self.export_seconds,
            "stats": self.stats,
            "parity": {**self.parity.to_dict(), **({"isa": [e.to_json() for e in self.isa]} if self.isa else {})},
            "plot": self.plot.to_dict() if self.plot else {},
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ArtifactResult:
        """The result ``to_json`` wrote (KeyError/ValueError when ``d`` is not an artifact entry)."""
        quant = Quant(d["quant"])
        return cls(
            Backend(d["backend"]),
            quant,
            d["file"],
            int(d["bytes"]),
            d.get("sha256", ""),
            float(d.get("export_seconds") or 0.0),
            ParityResult.from_dict(d["parity"], quant.value),
            ArtifactStats(**(d.get("stats") or {})),
            PlotData.from_dict(d.get("plot")),
            [IsaRun.from_json(e) for e in d["parity"].get("isa", ())],
        )
