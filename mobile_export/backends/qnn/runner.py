"""The NPU file run on the HTP: each text padded to the file's fixed length, its per-token outputs cut back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...core.socs import SIMULATED, Soc
from ..fixed import cut, pad, text_length
from . import htp
from .metadata import META_KEY


class Runner:
    """A .qnn.onnx in an ONNX Runtime session on the HTP (every node; the simulator on x86-64), as the HTP of
    ``soc`` (default: the one the QDQ model is checked as). ``threads``: unused, the HTP schedules itself."""

    def __init__(self, path: Path, threads: int | None = None, soc: Soc = SIMULATED) -> None:
        from .refusal import native_log, why_not

        log: list[str] = []
        try:
            with native_log() as log:
                self.session = htp.session(Path(path), soc)
        except Exception as exc:  # ONNX Runtime's errors: nodes off the HTP, an unreadable context binary
            raise why_not(Path(path).name, exc, log) from None
        # the export's facts, from the metadata the session already read (the file is not parsed again)
        recorded = json.loads(self.session.get_modelmeta().custom_metadata_map.get(META_KEY, "{}"))
        self.length = int(recorded["sequence_length"])
        names = [o.name for o in self.session.get_outputs()]
        self.per_token = [n in recorded.get("per_token_outputs", ()) for n in names]
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs for one text (batch 1) of at most the file's length, as an unpadded run gives them."""
        n = text_length(feeds, self.length, "the NPU file")
        return cut(self.session.run(None, pad(feeds, self.length, self.input_names)), self.per_token, n)
