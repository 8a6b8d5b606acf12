"""What a report records of the model: its source, architecture, task, config fields and parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .loading import LoadedModel

from .families import family_of


def config_summary(config: dict) -> dict:
    """The config fields a report records (its family's: enough to rebuild the model's shapes, e.g. for
    ``size``), from a config.json dict."""
    summary = {k: config.get(k) for k in family_of(config.get("model_type", "albert")).summary_keys}
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
        # a sentence-transformers folder's Dense modules after the pooling (their bytes: the size breakdown's head)
        **({"projections": projections} if (projections := list(loaded.task.head.get("projections") or ())) else {}),
    }
