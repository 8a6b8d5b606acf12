"""The artifact's signature: the inputs every export takes, their axes and length range, and the outputs that
are integers. Stated here once; the lowerings, runners, checks and the manifest read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ArtifactLoadError, BadInputError

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
INTEGER_OUTPUTS = ("mask_positions", "top_ids")  # the top-k head's (heads.TopKMasked); every other output is float
MASK_SLOTS = 8  # the top-k head looks at the first MASK_SLOTS [MASK] tokens of input_ids
MIN_SEQ_LEN = 2  # [CLS] and [SEP]
MAX_BATCH = 1024  # the upper bound a format with a dynamic batch declares
EXAMPLE_SEQ_LEN = 8  # the example inputs' length (at most the max length) a lowering traces with


@dataclass(frozen=True)
class Signature:
    """The inputs an export takes: int64 ``[batch, seq]`` tensors, in this order."""

    inputs: tuple[str, ...] = INPUT_NAMES

    def example_shape(self, max_len: int, dynamic_batch: bool) -> tuple[int, int]:
        """(batch, seq) of the example inputs a lowering traces with: batch 2 where the batch is dynamic (a
        batch of 1 would be specialized), else 1."""
        return (2 if dynamic_batch else 1), min(EXAMPLE_SEQ_LEN, max_len)

    def dynamic_shapes(self, max_len: int, dynamic_batch: bool) -> dict[str, dict[int, Any]]:
        """torch.export's dynamic shapes of every input: the sequence axis from ``MIN_SEQ_LEN`` to ``max_len``,
        and the batch axis where the format takes any batch."""
        from torch.export import Dim

        seq = Dim("seq", min=MIN_SEQ_LEN, max=max_len)
        dims: dict[int, Any] = {0: Dim("batch", min=1, max=MAX_BATCH), 1: seq} if dynamic_batch else {1: seq}
        return {name: dims for name in self.inputs}


ENCODER = Signature()
MIN_INPUTS = 2  # every family takes input_ids and attention_mask; DistilBERT nothing more


def is_signature(names: list[str]) -> bool:
    """Whether ``names``, in order, are the inputs of some family's export (a prefix of ``INPUT_NAMES``)."""
    return MIN_INPUTS <= len(names) <= len(INPUT_NAMES) and tuple(names) == INPUT_NAMES[: len(names)]


def not_an_export(shown: str, found: str) -> ArtifactLoadError:
    """The one-line error for a well-formed file whose interface is not that of an export."""
    return ArtifactLoadError(
        f"{shown} is not an export of mobile-export: {found}; an export takes "
        f"{', '.join(INPUT_NAMES)} (int64, [batch, seq]; DistilBERT's the first two); pass a file written by "
        "mobile-export export"
    )


def check_max_seq_len(requested: int) -> None:
    """BadInputError unless ``requested`` leaves room for [CLS] and [SEP]."""
    if requested < MIN_SEQ_LEN:
        raise BadInputError(f"--max-seq-len {requested} is too small; it must be >= 2 ([CLS] and [SEP])")


def resolve_max_len(limit: int, requested: int | None) -> int:
    """The longest input artifacts accept: ``requested`` checked against the model's position table."""
    if requested is None:
        return limit
    check_max_seq_len(requested)
    if requested > limit:
        raise BadInputError(
            f"--max-seq-len {requested} exceeds the model's longest input ({limit} tokens, from its "
            f"max_position_embeddings); pass at most {limit}"
        )
    return requested
