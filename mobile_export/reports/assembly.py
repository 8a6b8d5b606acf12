"""report.json's contents: the report record and its assembly from a run (model summary, artifacts, versions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from quantize.schemes import scheme_name

from ..core.config import DEFAULT_INT4_GROUP_SIZE
from ..model.summary import model_summary

if TYPE_CHECKING:
    from ..model.loading import LoadedModel
    from ..parity.artifact import ArtifactResult
    from ..parity.checker import Tally

# The version of report.json's layout; BENCHMARKS.md ("report.json versions") says what each changed.
REPORT_SCHEMA = 8


@dataclass
class ExportReport:
    """What ``export`` and ``parity`` found, as written to report.json (``to_json``) and rendered below.

    ``artifacts`` holds one JSON object per artifact (file, bytes, sha256, parity metrics, stats, size).
    """

    tool: str
    versions: dict
    host: dict
    model: dict
    options: dict
    parity_data: dict
    artifacts: list[dict]
    cross_runtime: list[dict]
    budget: dict | None = None
    within_budget: bool | None = None
    timings_seconds: dict = field(default_factory=dict)
    diagnosis: dict | None = None  # parity.diagnosis: where int8's error comes from (int8 exports)
    repair: dict | None = None  # exporter.repair: what --repair tried and kept
    schema_version: int = REPORT_SCHEMA

    @property
    def passed(self) -> bool:
        return all(a["parity"]["passed"] for a in self.artifacts)

    def to_json(self) -> dict:
        return {
            "schema_version": self.schema_version,
            "tool": self.tool,
            "versions": self.versions,
            "host": self.host,
            "model": self.model,
            "options": self.options,
            "parity_data": self.parity_data,
            "budget": self.budget,
            "artifacts": self.artifacts,
            "cross_runtime": self.cross_runtime,
            "passed": self.passed,
            "timings_seconds": self.timings_seconds,
            "within_budget": self.within_budget,
            "diagnosis": self.diagnosis,
            "repair": self.repair,
        }


def versions() -> dict[str, str | None]:
    """Versions of the packages that wrote and checked the artifacts."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in (
        "mobile-export",
        "torch",
        "executorch",
        "transformers",
        "optimum",
        "onnx",
        "onnxruntime",
        "onnxscript",
        "torchao",
        "numpy",
        "sentencepiece",
        "tokenizers",
    ):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


# ExecuTorch has no int8 precision switch: XNNPACK picks its kernels from the CPU's features.
EXECUTORCH_MODE = "XNNPACK dynamic int8 (qd8 x qc8w), kernels chosen by XNNPACK from the CPU's features"


def checking_host() -> dict:
    """The machine that ran the artifacts: CPU, int8 features, and each runtime's int8 mode there."""
    from ..backends.onnx.precision import precision_for
    from ..core.host import this_host

    host = this_host()
    return {
        **host.describe(),
        "precision": {"onnxruntime": precision_for(host).describe(host), "executorch": EXECUTORCH_MODE},
    }


def artifact_entry(r: ArtifactResult) -> dict[str, Any]:
    """One artifact's report.json entry."""
    return {
        "backend": r.backend.value,
        "file": r.file,
        "quant": r.quant.value,
        "scheme": scheme_name(r.quant.value, (r.stats.get("int4") or {}).get("group_size") or DEFAULT_INT4_GROUP_SIZE),
        "bytes": r.bytes,
        "sha256": r.sha256,
        "export_seconds": r.export_seconds,
        "stats": r.stats,
        "parity": {**r.parity.to_dict(), **({"isa": r.isa} if r.isa else {})},
        "plot": r.plot.to_dict() if r.plot else {},
    }


def build_report(
    tool: str,
    loaded: LoadedModel,
    run: Tally,
    parity_data: dict,
    results: list[ArtifactResult],
    options: dict,
    per_artifact: list[dict],
) -> ExportReport:
    """The one report both commands write: model, options, parity data, artifacts, cross-runtime."""
    return ExportReport(
        tool=tool,
        versions=versions(),
        host=checking_host(),
        model=model_summary(loaded),
        options=options,
        parity_data=parity_data,
        artifacts=[{**artifact_entry(r), **additions} for r, additions in zip(results, per_artifact)],
        cross_runtime=run.cross.rows(),
    )
