"""The .tflite run in LiteRT's interpreter with its default XNNPACK delegate (as on the phone): each text padded to
the file's fixed length as int32, its per-token outputs cut back."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...core.signature import INPUT_NAMES
from ..fixed import cut, pad, text_length
from . import flatbuffer
from .metadata import INPUTS, SIGNATURE, facts


class LitertRunner:
    """A .tflite in LiteRT's interpreter (``ai_edge_litert``) with ``threads`` threads (None: LiteRT's default)."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        from ai_edge_litert import interpreter

        path = Path(path)
        recorded = facts(flatbuffer.stored_entries(path.read_bytes(), path.name))
        self.length = int(recorded["sequence_length"])
        self.outputs = list(recorded["outputs"])
        self.per_token = [n in recorded.get("per_token_outputs", ()) for n in self.outputs]
        self.interpreter = interpreter.Interpreter(model_path=str(path), num_threads=threads)
        self.signature = self.interpreter.get_signature_runner(SIGNATURE)

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs for one text (batch 1) of at most the file's length, as an unpadded run gives them."""
        n = text_length(feeds, self.length, "the .tflite")
        given = {ours: feeds[name] for ours, name in zip(INPUTS, INPUT_NAMES) if name in feeds}
        given.setdefault("segment_ids", np.zeros_like(np.asarray(feeds["input_ids"])))
        outs = self.signature(**pad(given, self.length, INPUTS, np.int32))
        ordered = [np.asarray(outs[f"output_{k}"]) for k in range(len(self.outputs))]
        return cut(ordered, self.per_token, n)
