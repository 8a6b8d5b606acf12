"""The artifact's signature: the input names every export takes and the outputs that are integers."""

from __future__ import annotations

from .errors import ArtifactLoadError

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
INTEGER_OUTPUTS = ("mask_positions", "top_ids")  # the top-k head's (heads.TopKMasked); every other output is float
MASK_SLOTS = 8  # the top-k head looks at the first MASK_SLOTS [MASK] tokens of input_ids


def not_an_export(shown: str, found: str) -> ArtifactLoadError:
    """The one-line error for a well-formed file whose interface is not that of an export."""
    return ArtifactLoadError(
        f"{shown} is not an ALBERT export of mobile-export: {found}; an export takes "
        f"{', '.join(INPUT_NAMES)} (int64, [batch, seq]); pass a file written by mobile-export export"
    )
