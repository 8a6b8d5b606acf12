"""report.json's contents: the report record and its assembly from a run (model summary, artifacts, versions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from quantize.schemes import scheme_name

from ..config import DEFAULT_INT4_GROUP_SIZE

if TYPE_CHECKING:
    from ..checking import Tally
    from ..loading import LoadedModel
    from ..runtime_check import ArtifactResult

# The version of report.json's layout; BENCHMARKS.md ("report.json versions") says what each changed.
REPORT_SCHEMA = 5


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
    from ..host import this_host

    host = this_host()
    return {
        **host.describe(),
        "precision": {"onnxruntime": precision_for(host).describe(host), "executorch": EXECUTORCH_MODE},
    }


# The config fields a report records (enough to rebuild the model's shapes, e.g. for `size`).
SUMMARY_CONFIG_KEYS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_hidden_groups",
    "inner_group_num",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
    "hidden_act",
    "tie_word_embeddings",
)


def config_summary(config: dict) -> dict:
    """The config fields a report records, from a config.json dict."""
    summary = {k: config.get(k) for k in SUMMARY_CONFIG_KEYS}
    summary["num_labels"] = config.get("num_labels") or len(config.get("id2label") or {}) or 2
    return summary


def model_summary(loaded: LoadedModel) -> dict[str, Any]:
    """What report.json records of the model: source, architecture, task, config fields, parameters."""
    c = loaded.config
    params = sum(p.numel() for p in loaded.model.parameters())  # parameters() yields shared ones once
    return {
        "source": loaded.source,
        "weights_file": loaded.weights_file,
        "model_type": c.model_type,
        "architecture": getattr(loaded.model, "architecture", None) or type(loaded.model).__name__,
        "task": loaded.task.name,
        "outputs": list(loaded.task.outputs),
        "config": config_summary(c.to_dict()),
        "unique_parameters": int(params),
        "tokenizer": loaded.tokenizer_kind,
        "notes": list(loaded.notes),
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
