"""report.json read back as typed records: what the rendered reports and the CLI summary show.

report.json stays the stable, versioned file (``assembly.REPORT_SCHEMA``); ``ReportRecord.from_json``
is the one place that knows its keys, so rendering reads attributes, not strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..backends.base import Coverage, coverage_from_dict
from ..core.fsutil import sha256_file
from ..measure.memory import MemoryFigures
from ..parity.metrics import LengthBucket, Worst


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _bucket(d: dict[str, Any]) -> LengthBucket:
    """One ``parity.by_length`` entry as the metrics' own record."""
    return LengthBucket(**{f.name: d[f.name] for f in fields(LengthBucket) if f.name in d})


@dataclass(frozen=True)
class VsHost:
    """An emulated run against this machine's run of the same artifact."""

    max_abs_diff: float
    agreement: float | None
    decisive_agreement: float | None


@dataclass(frozen=True)
class IsaRun:
    """The artifact on one emulated ARM64 CPU model."""

    cpu: str
    max_abs_diff: float
    sqnr_db: float
    min_example_sqnr_db: float | None
    decisive_agreement: float | None
    accuracy: float | None
    vs_host: VsHost
    passed: bool
    failures: tuple[str, ...]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IsaRun:
        """The record of one ``parity.isa`` entry."""
        v = d["vs_host"]
        return cls(
            d["cpu"],
            d["max_abs_diff"],
            d["sqnr_db"],
            _opt_float(d.get("min_example_sqnr_db")),
            _opt_float(d.get("decisive_agreement")),
            _opt_float(d.get("accuracy")),
            VsHost(v["max_abs_diff"], _opt_float(v.get("agreement")), _opt_float(v.get("decisive_agreement"))),
            bool(d["passed"]),
            tuple(d.get("failures", ())),
        )


@dataclass(frozen=True)
class Parity:
    """An artifact's parity against the fp32 reference, its gates and where it was run."""

    max_abs_diff: float
    mean_abs_diff: float
    sqnr_db: float
    min_example_sqnr_db: float | None
    min_cosine: float
    agreement: float | None
    decisive_agreement: float | None
    near_ties: int | None
    accuracy: float | None
    reference_accuracy: float | None
    passed: bool
    failures: tuple[str, ...]
    thresholds: dict[str, float | None]
    gates: tuple[str, ...]
    coverage: Coverage | None
    by_length: tuple[LengthBucket, ...]
    worst: tuple[Worst, ...]
    isa: tuple[IsaRun, ...]
    topk_overlap: float | None = None  # top-k heads: share of fp32's top K ids the artifact returned

    @classmethod
    def from_json(cls, d: dict[str, Any], quant: str | None) -> Parity:
        """The record of an artifact's ``parity`` object (``quant``: the artifact's)."""
        return cls(
            d["max_abs_diff"],
            d["mean_abs_diff"],
            d["sqnr_db"],
            _opt_float(d.get("min_example_sqnr_db")),
            d["min_cosine"],
            _opt_float(d.get("agreement")),
            _opt_float(d.get("decisive_agreement")),
            d.get("near_ties"),
            _opt_float(d.get("accuracy")),
            _opt_float(d.get("reference_accuracy")),
            bool(d["passed"]),
            tuple(d.get("failures", ())),
            dict(d.get("thresholds") or {}),
            tuple(str(g) for g in d.get("gates", ())),
            coverage_from_dict(d["coverage"], quant) if d.get("coverage") else None,
            tuple(_bucket(b) for b in d.get("by_length", ())),
            tuple(Worst(w["text"], int(w["length"]), w["max_abs_diff"]) for w in d.get("worst", ())),
            tuple(IsaRun.from_json(e) for e in d.get("isa", ())),
            _opt_float(d.get("topk_overlap")),
        )


@dataclass(frozen=True)
class Size:
    """An artifact's bytes by part, its sharing verdicts and (if measured) its RAM."""

    bytes: int
    deflate_bytes: int
    groups: dict[str, int] | None
    overhead_bytes: int
    sharing_preserved: bool | None
    memory_sharing_preserved: bool | None
    memory: MemoryFigures | None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Size:
        """The record of an artifact's ``size`` object."""
        memory = d.get("memory")
        return cls(
            int(d.get("bytes", 0)),
            int(d.get("deflate_bytes", 0)),
            d.get("groups"),
            int(d.get("overhead_bytes", 0)),
            d.get("sharing_preserved"),
            d.get("memory_sharing_preserved"),
            MemoryFigures.from_dict(memory) if memory else None,
        )


@dataclass(frozen=True)
class PlotSample:
    """The bounded samples the report plots."""

    reference: tuple[float, ...] = ()
    artifact: tuple[float, ...] = ()
    per_example: tuple[tuple[int, float], ...] = ()

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> PlotSample:
        """The record of an artifact's ``plot`` object (empty when absent)."""
        d = d or {}
        return cls(
            tuple(d.get("reference") or ()),
            tuple(d.get("artifact") or ()),
            tuple((int(x), float(y)) for x, y in d.get("per_example") or ()),
        )


def mismatch(folder: Path, file: str, sha256: str | None) -> str | None:
    """None when report.json's entry (``file``, ``sha256``) describes the file beside it in ``folder``; else
    what is there instead (``sha256`` None: the report has no entry for the file)."""
    if sha256 is None:
        return "no entry"
    path = folder / Path(file).name
    actual = sha256_file(path) if path.is_file() else None
    if actual == sha256:
        return None
    return f"the file's {actual[:12]}..." if actual else "not a regular file"


@dataclass(frozen=True)
class Artifact:
    """One artifact's entry."""

    file: str
    quant: str
    bytes: int
    sha256: str
    parity: Parity
    size: Size | None
    plot: PlotSample
    median_ms: float | None  # per text during the parity run

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Artifact:
        """The record of one ``artifacts`` entry."""
        quant = d.get("quant", "?")
        latency = (d.get("stats") or {}).get("parity_latency_ms") or {}
        return cls(
            d["file"],
            quant,
            int(d["bytes"]),
            d.get("sha256", ""),
            Parity.from_json(d["parity"], quant),
            Size.from_json(d["size"]) if d.get("size") else None,
            PlotSample.from_json(d.get("plot")),
            _opt_float(latency.get("median")),
        )


@dataclass(frozen=True)
class CrossRuntime:
    """Two artifacts against each other."""

    a: str
    b: str
    agreement: float | None
    decisions: int
    max_abs_diff: float


@dataclass(frozen=True)
class Budget:
    """The size budget an export was held to."""

    name: str
    bytes: int
    applies_to: str


@dataclass(frozen=True)
class ReportRecord:
    """A whole report.json."""

    tool: str
    passed: bool
    model: dict[str, Any]
    parity_data: dict[str, Any]
    artifacts: tuple[Artifact, ...]
    cross_runtime: tuple[CrossRuntime, ...]
    budget: Budget | None
    within_budget: bool | None
    versions: dict[str, str | None] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)  # the checking machine (report.json >= 5)
    diagnosis: dict[str, Any] = field(default_factory=dict)  # where int8's error comes from (>= 6, int8 exports)
    repair: dict[str, Any] = field(default_factory=dict)  # what --repair tried and kept (>= 6, when it ran)

    @classmethod
    def from_json(cls, report: dict[str, Any]) -> ReportRecord:
        """The typed record of a report.json object (KeyError/TypeError/ValueError if it is not one)."""
        b = report.get("budget")
        return cls(
            report.get("tool", ""),
            bool(report.get("passed")),
            dict(report.get("model") or {}),
            dict(report.get("parity_data") or {}),
            tuple(Artifact.from_json(a) for a in report["artifacts"]),
            tuple(
                CrossRuntime(
                    c["a"], c["b"], _opt_float(c.get("agreement")), int(c.get("decisions", 0)), c["max_abs_diff"]
                )
                for c in report.get("cross_runtime") or ()
            ),
            Budget(b["name"], int(b["bytes"]), b["applies_to"]) if b else None,
            report.get("within_budget"),
            dict(report.get("versions") or {}),
            dict(report.get("host") or {}),
            dict(report.get("diagnosis") or {}),
            dict(report.get("repair") or {}),
        )


def kept_fp32(repair: dict | None, file: str) -> list[str]:
    """The Linears a mixed-precision repair kept fp32 in ``file``: those of the last attempt that re-exported it
    (an export's ``repair`` record, report.json's JSON)."""
    kept: list[str] = []
    for attempt in (repair or {}).get("attempts", []):
        if any(o.get("file") == file for o in attempt.get("artifacts", [])):
            kept = [w for c in attempt.get("changes", []) if file in c.get("artifacts", []) for w in c["fp32_weights"]]
    return kept


GRANULARITY_RUNTIME = {"tensor": "ONNX Runtime (per tensor)", "token": "XNNPACK (per token)"}


@dataclass(frozen=True)
class DepthSeries:
    """One line of the int8 error by depth: the hidden state's SQNR after each run of the shared layer."""

    label: str
    measured: bool  # in the artifact's real runtime (False: emulated in PyTorch)
    sqnr_db: tuple[float | None, ...]


def depth_series(diagnosis: dict[str, Any], repair: dict[str, Any]) -> list[DepthSeries]:
    """The error-by-depth lines a report shows: each runtime emulated, each artifact in its runtime, and each
    artifact the applied repair re-exported (report.json's ``diagnosis`` and ``repair``)."""
    out = [
        DepthSeries(f"{GRANULARITY_RUNTIME.get(g, g)}, emulated", False, tuple(e.get("depth_sqnr_db") or ()))
        for g, e in (diagnosis.get("emulated") or {}).items()
    ]
    out += [
        DepthSeries(f"{f}, real", True, tuple(v)) for f, v in (diagnosis.get("runtime_depth_sqnr_db") or {}).items()
    ]
    applied: dict[str, Any] = next(
        (a for a in repair.get("attempts", []) if a.get("method") == repair.get("applied")), {}
    )
    for o in applied.get("artifacts", []):
        if o.get("after_depth_sqnr_db"):
            out.append(
                DepthSeries(f"{o['file']} repaired ({applied['method']}), real", True, tuple(o["after_depth_sqnr_db"]))
            )
    return [s for s in out if s.sqnr_db]
