"""The fp32 PyTorch reference: an export wrapper with plain tensor outputs, and golden outputs on text."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.signature import INPUT_NAMES, MASK_SLOTS
from ..core.tasks import OutputKind, TaskSpec
from ..core.text import sanitize


def additive_mask(keep: torch.Tensor, masked: float | None = None) -> torch.Tensor:
    """The additive attention mask of a 0/1 ``keep`` mask (already broadcast to the layout a layer reads):
    0 where attended, ``masked`` (default: the most negative float32) where padded."""
    return (1.0 - keep.to(torch.float32)) * (torch.finfo(torch.float32).min if masked is None else masked)


class ExportWrapper(torch.nn.Module):
    """Takes (input_ids, attention_mask[, token_type_ids]) int64 [batch, seq]; returns the task's outputs.

    ``token_type_ids`` reaches a model whose family takes it (every one but DistilBERT). The additive attention
    mask is built here, as a 4D float tensor that transformers passes through untouched: transformers 5's own
    mask construction breaks under PT2E prepare_pt2e. ``masked``: the value added where padded (default the
    most negative float32; a fixed-point target needs one its activation range can hold next to real scores).
    """

    def __init__(self, model: torch.nn.Module, task: TaskSpec, masked: float | None = None) -> None:
        super().__init__()
        self.model = model
        self.output_names = task.outputs
        self.types = "token_type_ids" in inspect.signature(model.forward).parameters
        self.masked = masked

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        additive = additive_mask(attention_mask[:, None, None, :], self.masked)
        extra = {"token_type_ids": token_type_ids} if self.types else {}
        out = self.model(input_ids=input_ids, attention_mask=additive, **extra)
        return tuple(out[name] for name in self.output_names)


class EagerRunner:
    """A checkpoint's fp32 PyTorch model behind the artifacts' ``Runner`` interface (``bench``'s reference)."""

    def __init__(self, loaded: Any) -> None:  # a LoadedModel
        self.model = ExportWrapper(loaded.model, loaded.task).eval()

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The model's outputs for the int64 inputs ``feeds`` (by name)."""
        with torch.no_grad():
            outputs = self.model(*(torch.from_numpy(feeds[name]) for name in INPUT_NAMES))
        return [o.numpy() for o in outputs]


@dataclass(frozen=True)
class Example:
    """One tokenized text, batch 1, ready to feed any runtime."""

    text: str
    feeds: dict[str, np.ndarray]

    @property
    def length(self) -> int:
        return int(self.feeds["input_ids"].shape[1])


def tokenize(tokenizer, texts: list[str], max_len: int) -> list[Example]:
    """Tokenize each text alone (no padding), truncated to ``max_len``."""
    examples = []
    for text in texts:
        enc = tokenizer(sanitize(text), truncation=True, max_length=max_len, return_token_type_ids=True)
        feeds = {name: np.asarray([enc[name]], dtype=np.int64) for name in INPUT_NAMES}
        examples.append(Example(text=text, feeds=feeds))
    return examples


def _numpy(t: torch.Tensor) -> np.ndarray:
    """An output as numpy: floats as float32, ids and positions as the integers the artifact returns."""
    return (t.float() if t.dtype.is_floating_point else t).detach().numpy()


@torch.no_grad()
def reference_outputs(model: torch.nn.Module, task: TaskSpec, examples: list[Example]) -> list[list[np.ndarray]]:
    """fp32 outputs of the unmodified transformers model (its own mask path), one example at a time."""
    results = []
    for ex in examples:
        out = model(**{k: torch.from_numpy(v) for k, v in ex.feeds.items()})
        results.append([_numpy(out[name]) for name in (*task.outputs, *task.reference_extras)])
    return results


@torch.no_grad()
def reference_batch(
    model: torch.nn.Module, task: TaskSpec, examples: list[Example], pad_id: int = 0
) -> list[list[np.ndarray]]:
    """fp32 outputs of several examples run as one batch, right-padded to the longest (attention mask 0
    and token type 0 on the padding), each cut back to its own length: per example, what
    ``reference_outputs`` gives, within fp32 rounding."""
    longest = max(ex.length for ex in examples)
    feeds = {name: np.zeros((len(examples), longest), dtype=np.int64) for name in INPUT_NAMES}
    feeds["input_ids"][:] = pad_id
    for b, ex in enumerate(examples):
        for name in INPUT_NAMES:
            feeds[name][b, : ex.length] = ex.feeds[name][0]
    out = model(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    results = []
    for b, ex in enumerate(examples):
        outs = []
        for name in (*task.outputs, *task.reference_extras):
            o = out[name][b : b + 1]
            outs.append(_numpy(o[:, : ex.length] if task.per_token else o).copy())
        results.append(outs)
    return results


def output_width(config, task: TaskSpec) -> int:
    """How many output values the model gives per token (per example for sequence classification)."""
    if task.kind in (OutputKind.HIDDEN_STATES, OutputKind.SENTENCE_EMBEDDING):
        return int(config.hidden_size)
    if task.kind is OutputKind.TOP_K:  # per example: the slots' probabilities (reference) dominate
        return int(config.vocab_size) * MASK_SLOTS
    if task.kind is OutputKind.SPAN_LOGITS:
        return 2
    if task.name == "fill-mask":
        return int(config.vocab_size)
    return int(config.num_labels)


def example_inputs(batch: int, seq: int, vocab_size: int) -> tuple[torch.Tensor, ...]:
    """Deterministic dummy inputs used to trace the graph (not for parity)."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab_size, (batch, seq), generator=gen, dtype=torch.long)
    mask = torch.ones(batch, seq, dtype=torch.long)
    types = torch.zeros(batch, seq, dtype=torch.long)
    return ids, mask, types
