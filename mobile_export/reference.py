"""The fp32 PyTorch reference: an export wrapper with plain tensor outputs, and golden outputs on text."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .tasks import TaskSpec

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


def not_an_export(shown: str, found: str):
    """The one-line error for a well-formed file whose interface is not that of an export."""
    from .errors import ArtifactLoadError

    return ArtifactLoadError(f"{shown} is not an ALBERT export of mobile-export: {found}; an export takes "
                             f"{', '.join(INPUT_NAMES)} (int64, [batch, seq]); pass a file written by mobile-export export")


class ExportWrapper(torch.nn.Module):
    """Takes (input_ids, attention_mask, token_type_ids) int64 [batch, seq]; returns the task's outputs.

    The additive attention mask is built here, as a 4D float tensor that transformers passes
    through untouched: transformers 5's own mask construction breaks under PT2E prepare_pt2e.
    """

    def __init__(self, model: torch.nn.Module, task: TaskSpec) -> None:
        super().__init__()
        self.model = model
        self.output_names = task.outputs

    def forward(self, input_ids, attention_mask, token_type_ids):
        additive = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * torch.finfo(torch.float32).min
        out = self.model(input_ids=input_ids, attention_mask=additive, token_type_ids=token_type_ids)
        return tuple(out[name] for name in self.output_names)


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
    from .ondevice import sanitize

    examples = []
    for text in texts:
        enc = tokenizer(sanitize(text), truncation=True, max_length=max_len, return_token_type_ids=True)
        feeds = {name: np.asarray([enc[name]], dtype=np.int64) for name in INPUT_NAMES}
        examples.append(Example(text=text, feeds=feeds))
    return examples


@torch.no_grad()
def reference_outputs(model: torch.nn.Module, task: TaskSpec, examples: list[Example]) -> list[list[np.ndarray]]:
    """fp32 outputs of the unmodified transformers model (its own mask path), per example."""
    results = []
    for ex in examples:
        out = model(**{k: torch.from_numpy(v) for k, v in ex.feeds.items()})
        results.append([out[name].detach().float().numpy() for name in task.outputs])
    return results


def example_inputs(batch: int, seq: int, vocab_size: int) -> tuple[torch.Tensor, ...]:
    """Deterministic dummy inputs used to trace the graph (not for parity)."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab_size, (batch, seq), generator=gen, dtype=torch.long)
    mask = torch.ones(batch, seq, dtype=torch.long)
    types = torch.zeros(batch, seq, dtype=torch.long)
    return ids, mask, types
