"""labels.json: a classifier's labels by class index and the function from its logits to scores."""

from __future__ import annotations


def labels(config) -> list[str]:
    """Labels by class index, from ``config.id2label``."""
    id2label = getattr(config, "id2label", None) or {}
    return [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(len(id2label))]


def score_function(config) -> str:
    """How a classifier's logits become scores, as transformers' pipeline decides: sigmoid for one label
    or multi-label models, none for regression, softmax otherwise."""
    return scores_for(getattr(config, "problem_type", None), int(getattr(config, "num_labels", 2)))


def scores_for(problem_type: str | None, num_labels: int) -> str:
    """The score function of a classifier with ``num_labels`` labels and transformers' ``problem_type``."""
    if problem_type == "regression":
        return "none"
    if problem_type == "multi_label_classification" or num_labels == 1:
        return "sigmoid"
    return "softmax"


def labels_file(config) -> dict:
    """labels.json: the labels by class index and the function from logits to scores."""
    return {"labels": labels(config), "scores": score_function(config)}


def read_labels(info: dict) -> tuple[tuple[str, ...], str]:
    """(labels, score function) from a labels.json (one written before it recorded ``scores``: the rule)."""
    labels = tuple(str(x) for x in info.get("labels", []))
    return labels, str(info.get("scores") or scores_for(None, len(labels)))
