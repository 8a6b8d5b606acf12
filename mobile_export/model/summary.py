"""What a report records of the model: its source, architecture, task, config fields and parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .loading import LoadedModel

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
