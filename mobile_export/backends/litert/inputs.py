"""The module litert-torch traces: ``ids``, ``mask``, ``segment_ids`` as int32 ``[1, length]`` (MediaPipe's BERT
inputs), widened to the export wrapper's int64 inputs. Imported only when converting (it needs torch)."""

from __future__ import annotations

from typing import Any

import torch


class Int32Inputs(torch.nn.Module):
    """``wrapper`` (reading ``inputs``, a prefix of ids, mask, token types) behind MediaPipe's three int32 inputs; a
    family without token types ignores ``segment_ids``, which MediaPipe feeds all the same."""

    def __init__(self, wrapper: torch.nn.Module, inputs: tuple[str, ...]) -> None:
        super().__init__()
        self.inner = wrapper
        self.count = len(inputs)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, segment_ids: torch.Tensor) -> Any:
        """The wrapper's outputs for one padded text."""
        outs = self.inner(*(ids.long(), mask.long(), segment_ids.long())[: self.count])
        if self.count < 3:  # keep segment_ids an input of the graph: MediaPipe finds its tensors by name
            outs = (outs[0] + (segment_ids[:1, :1] * 0).to(outs[0].dtype), *outs[1:])
        return outs
