"""Task registry: which optimum tasks an ALBERT can be exported for, and what each one outputs.

Task names and the task -> model class mapping come from optimum's ``TasksManager``, so
``--task`` means what it means in ``optimum-cli``. The per-task data here is what the
exporter and the parity checker need to know about the outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .errors import UnsupportedError


class OutputKind(str, Enum):
    SEQUENCE_LOGITS = "sequence_logits"  # [batch, num_labels], argmax per example
    TOKEN_LOGITS = "token_logits"  # [batch, seq, n], argmax per (real) token
    SPAN_LOGITS = "span_logits"  # start/end [batch, seq], argmax per example over tokens
    HIDDEN_STATES = "hidden_states"  # [batch, seq, hidden]: no argmax, cosine/SQNR only
    SENTENCE_EMBEDDING = "sentence_embedding"  # [batch, hidden] pooled (heads.PoolingHead): cosine/SQNR only
    TOP_K = "top_k"  # fill-mask's top k at the masked positions (heads.TopKMasked): compared by token id


@dataclass(frozen=True)
class TaskSpec:
    """What the exporter and the parity checker need to know about one task."""

    name: str
    outputs: tuple[str, ...]
    kind: OutputKind
    has_labels: bool  # config.id2label is meaningful (write labels.json)
    reference_extras: tuple[str, ...] = ()  # outputs only the fp32 reference gives (parity compares with them)
    # heads.HeadSpec.describe(): the model's own head unless a phone head replaced it
    head: dict[str, Any] = field(default_factory=lambda: {"kind": "full"}, compare=False, hash=False)

    @property
    def has_argmax(self) -> bool:
        return self.kind not in (OutputKind.HIDDEN_STATES, OutputKind.SENTENCE_EMBEDDING)

    @property
    def per_token(self) -> bool:
        """Outputs have a sequence axis (axis 1), cut back to each example's length after a padded batch."""
        return self.kind in (OutputKind.TOKEN_LOGITS, OutputKind.SPAN_LOGITS, OutputKind.HIDDEN_STATES)


_TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("text-classification", ("logits",), OutputKind.SEQUENCE_LOGITS, True),
        TaskSpec("token-classification", ("logits",), OutputKind.TOKEN_LOGITS, True),
        TaskSpec("question-answering", ("start_logits", "end_logits"), OutputKind.SPAN_LOGITS, False),
        TaskSpec("fill-mask", ("logits",), OutputKind.TOKEN_LOGITS, False),
        TaskSpec("feature-extraction", ("last_hidden_state",), OutputKind.HIDDEN_STATES, False),
    )
}

# Architectures whose task optimum cannot infer, but whose weights fit a supported task.
_ARCHITECTURE_FALLBACK = {"AlbertForPreTraining": "fill-mask"}


def supported_tasks() -> list[str]:
    """The task names ``export`` accepts."""
    return list(_TASKS)


def get_task(name: str) -> TaskSpec:
    """Look a task up by its optimum name or one of optimum's synonyms (``sequence-classification``...)."""
    if name in _TASKS:  # an export's own name (a manifest's): no need for optimum, which imports torch
        return _TASKS[name]
    from optimum.exporters.tasks import TasksManager

    canonical = TasksManager.map_from_synonym(name)
    if canonical not in _TASKS:
        raise UnsupportedError(f"task '{name}' is not supported; supported: {', '.join(_TASKS)}")
    return _TASKS[canonical]


def infer_task(architectures: list[str] | None) -> str:
    """The task a checkpoint was trained for, from ``config.architectures``."""
    import transformers
    from optimum.exporters.tasks import TasksManager

    for arch in architectures or []:
        if arch in _ARCHITECTURE_FALLBACK:
            return _ARCHITECTURE_FALLBACK[arch]
        cls = getattr(transformers, arch, None)
        if cls is None:
            continue
        try:
            task = TasksManager._infer_task_from_model_or_model_class(model_class=cls)
        except ValueError:
            continue
        if task in _TASKS:
            return task
    if not architectures:
        return "feature-extraction"
    raise UnsupportedError(
        f"cannot tell the task of architectures {architectures}; pass --task (one of: {', '.join(_TASKS)})"
    )


def model_class_for(task: str, model_type: str = "albert") -> type:
    """The transformers class optimum uses for this task and model type."""
    from optimum.exporters.tasks import TasksManager

    return TasksManager.get_model_class_for_task(get_task(task).name, model_type=model_type)
