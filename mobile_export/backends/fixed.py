"""What the fixed-length formats (``Capability.FIXED_LENGTH``: the NPU file, the .tflite) share: how a text is
padded to the file's one length, and which outputs follow the sequence (cut back to the text's length)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.errors import BadInputError
from .base import Plan

if TYPE_CHECKING:
    import torch


def recorded_length(stats: dict[str, Any], section: str) -> int | None:
    """The one length a file runs, as its lowering recorded it under ``stats[section]`` (``base.FixedLength``)."""
    length = (stats.get(section) or {}).get("sequence_length")
    return int(length) if length else None


def pad(
    feeds: dict[str, np.ndarray], length: int, names: Sequence[str], dtype: type = np.int64
) -> dict[str, np.ndarray]:
    """The inputs ``names`` of one text (batch 1) right-padded with zeros to ``length`` (pad id 0, mask 0), as the
    app feeds a fixed-length file."""
    padded = {}
    for name in names:
        row: np.ndarray = np.zeros((1, length), dtype)
        row[:, : np.shape(feeds[name])[1]] = feeds[name]
        padded[name] = row
    return padded


def text_length(feeds: dict[str, np.ndarray], length: int, what: str) -> int:
    """The tokens of the one text in ``feeds``; BadInputError naming ``what`` file when it is not one text of at
    most ``length`` tokens."""
    ids = np.asarray(feeds["input_ids"])
    if ids.shape[0] != 1 or ids.shape[1] > length:
        raise BadInputError(
            f"{what} takes one text of at most {length} tokens, got {ids.shape[0]} x {ids.shape[1]}; "
            "export with a larger --max-seq-len"
        )
    return int(ids.shape[1])


def cut(outputs: list[np.ndarray], per_token: list[bool], n: int) -> list[np.ndarray]:
    """The outputs of a padded run as an unpadded run of ``n`` tokens gives them (per-token ones cut back)."""
    return [o[:, :n] if token else o for o, token in zip(outputs, per_token)]


def per_token_outputs(module: torch.nn.Module, plan: Plan) -> list[bool]:
    """For each output of ``module``, whether its second dimension is the sequence (it follows the input's
    length)."""
    import torch

    from ..model.reference import example_inputs

    shapes = []
    for length in (plan.max_len, plan.max_len - 1):
        with torch.no_grad():
            outs = module(*example_inputs(1, length, plan.vocab_size)[: len(plan.signature.inputs)])
        shapes.append([tuple(o.shape) for o in outs])
    return [len(a) > 1 and a[1] == plan.max_len and b[1] == plan.max_len - 1 for a, b in zip(*shapes)]
