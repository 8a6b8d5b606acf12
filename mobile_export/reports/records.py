"""report.json's schema: the typed records it is written from (``ReportRecord.to_json``) and read back as
(``ReportRecord.from_json``), so that what a run found, the rendered reports and the CLI summary share one
definition. A record of a part the run computes (an artifact's result, its parity, a cross-runtime row, a
budget) is that part's own type; the size section is ``measure.size.SizeEntry``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.fsutil import sha256_file
from ..measure.budgets import Budget
from ..measure.size import SizeEntry
from ..parity.artifact import ArtifactResult, IsaRun
from ..parity.metrics import ParityResult
from ..parity.plots import CrossRuntime, PlotData

# The version of report.json's layout; docs/report-schema.md says what each changed.
REPORT_SCHEMA = 11


@dataclass(frozen=True)
class Artifact:
    """One artifact's entry: its result, and what the command that wrote the report added (``export``: the size
    section; ``parity``: the path it was given)."""

    result: ArtifactResult
    size: SizeEntry | None = None
    path: str | None = None

    # what the rendered reports read of the result
    @property
    def file(self) -> str:
        return self.result.file

    @property
    def quant(self) -> str:
        return self.result.quant.value

    @property
    def bytes(self) -> int:
        return self.result.bytes

    @property
    def parity(self) -> ParityResult:
        return self.result.parity

    @property
    def isa(self) -> list[IsaRun]:
        return self.result.isa

    @property
    def plot(self) -> PlotData | None:
        return self.result.plot

    def to_json(self) -> dict[str, Any]:
        """The entry in report.json's ``artifacts``."""
        added: dict[str, Any] = {"size": self.size} if self.size is not None else {}
        if self.path is not None:
            added["path"] = self.path
        return {**self.result.to_json(), **added}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Artifact:
        """The entry ``to_json`` wrote."""
        return cls(ArtifactResult.from_json(d), d.get("size"), d.get("path"))


@dataclass(frozen=True)
class ReportRecord:
    """A whole report.json: what ``export`` or ``parity`` found."""

    tool: str
    model: dict[str, Any]
    options: dict[str, Any]
    parity_data: dict[str, Any]
    artifacts: tuple[Artifact, ...]
    cross_runtime: tuple[CrossRuntime, ...]
    versions: dict[str, str | None] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)  # the checking machine (report.json >= 5)
    budget: Budget | None = None
    within_budget: bool | None = None
    timings_seconds: dict[str, float] = field(default_factory=dict)
    diagnosis: dict[str, Any] | None = None  # where int8's error comes from (>= 6, int8 exports)
    repair: dict[str, Any] | None = None  # what --repair tried and kept (>= 6, when it ran)
    folds: dict[str, Any] | None = None  # the exact folds found before lowering, taken or not (>= 11, int8)
    schema_version: int = REPORT_SCHEMA

    @property
    def passed(self) -> bool:
        return all(a.parity.passed for a in self.artifacts)

    def to_json(self) -> dict[str, Any]:
        """What report.json holds."""
        return {
            "schema_version": self.schema_version,
            "tool": self.tool,
            "versions": self.versions,
            "host": self.host,
            "model": self.model,
            "options": self.options,
            "parity_data": self.parity_data,
            "budget": self.budget.as_dict() if self.budget is not None else None,
            "artifacts": [a.to_json() for a in self.artifacts],
            "cross_runtime": [c.to_json() for c in self.cross_runtime],
            "passed": self.passed,
            "timings_seconds": self.timings_seconds,
            "within_budget": self.within_budget,
            "diagnosis": self.diagnosis,
            "repair": self.repair,
            "folds": self.folds,
        }

    @classmethod
    def from_json(cls, report: dict[str, Any]) -> ReportRecord:
        """The typed record of a report.json object (KeyError/TypeError/ValueError if it is not one)."""
        b = report.get("budget")
        return cls(
            tool=report.get("tool", ""),
            model=dict(report.get("model") or {}),
            options=dict(report.get("options") or {}),
            parity_data=dict(report.get("parity_data") or {}),
            artifacts=tuple(Artifact.from_json(a) for a in report["artifacts"]),
            cross_runtime=tuple(CrossRuntime.from_json(c) for c in report.get("cross_runtime") or ()),
            versions=dict(report.get("versions") or {}),
            host=dict(report.get("host") or {}),
            budget=Budget.from_dict(b) if b else None,
            within_budget=report.get("within_budget"),
            timings_seconds=dict(report.get("timings_seconds") or {}),
            diagnosis=report.get("diagnosis"),
            repair=report.get("repair"),
            folds=report.get("folds"),
            schema_version=int(report.get("schema_version", REPORT_SCHEMA)),
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


def kept_fp32(repair: dict | None, file: str) -> list[str]:
    """The Linears a mixed-precision repair kept fp32 in ``file``: those of the last attempt that re-exported it
    (an export's ``repair`` record, report.json's JSON)."""
    kept: list[str] = []
    for attempt in (repair or {}).get("attempts", []):
        if any(o.get("file") == file for o in attempt.get("artifacts", [])):
            kept = [
                w
                for c in attempt.get("changes", [])
                if file in c.get("artifacts", [])
                for w in c.get("fp32_weights", [])
            ]
    return kept


def granularity_label(granularity: str) -> str:
    """How a report names an emulated activation granularity: with the runtimes that compute it (the registry's)."""
    from .. import backends

    runtimes = [
        i.runtime.split(",")[0].split(" (")[0] for i in backends.BACKENDS.values() if i.granularity == granularity
    ]
    named = " / ".join(dict.fromkeys(runtimes))
    return f"{named} (per {granularity})" if named else f"per {granularity}"


@dataclass(frozen=True)
class DepthSeries:
    """One line of the int8 error by depth: the hidden state's SQNR after each run of the shared layer."""

    label: str
    measured: bool  # in the artifact's real runtime (False: emulated in PyTorch)
    sqnr_db: tuple[float | None, ...]


@dataclass(frozen=True)
class DepthWords:
    """How a report names the steps of the error by depth: runs of ALBERT's shared layer, or another family's
    layers (error by layer)."""

    step: str  # a table's column
    title: str
    axis: str
    after: str  # what each point is


def depth_words(model: dict[str, Any]) -> DepthWords:
    """The words for ``model`` (report.json's model section; a report without a model type is ALBERT's)."""
    if model.get("model_type", "albert") == "albert":
        return DepthWords(
            "depth",
            "int8 error by depth",
            "depth (runs of the shared layer)",
            "the hidden state after each run of the shared layer",
        )
    return DepthWords("layer", "int8 error by layer", "layer", "the hidden state after each layer")


def depth_series(diagnosis: dict[str, Any], repair: dict[str, Any]) -> list[DepthSeries]:
    """The error-by-depth lines a report shows: each runtime emulated, each artifact in its runtime, and each
    artifact the applied repair re-exported (report.json's ``diagnosis`` and ``repair``)."""
    out = [
        DepthSeries(f"{granularity_label(g)}, emulated", False, tuple(e.get("depth_sqnr_db") or ()))
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
