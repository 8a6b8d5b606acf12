"""The NPU file run on the HTP: each text padded to the file's fixed length, its per-token outputs cut back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .socs import SIMULATED, Soc
from ..fixed import cut, pad, text_length
from . import htp
from .metadata import META_KEY


class QnnRunner:
    """A .qnn.onnx in ONNX Runtime sessions on the HTP (every node; the simulator on x86-64), as the HTP of ``soc``
    (default: the one the QDQ model is checked as): one session per length the file holds (``graphs``), a text run
    in the shortest it fits. ``threads``: unused, the HTP schedules itself."""

    def __init__(self, path: Path, threads: int | None = None, soc: Soc = SIMULATED) -> None:
        path = Path(path)
        main = _session(path, path.name, soc)
        # the export's facts, from the metadata the session already read (the file is not parsed again)
        recorded = json.loads(main.get_modelmeta().custom_metadata_map.get(META_KEY, "{}"))
        self.length = int(recorded["sequence_length"])
        self.sessions = {self.length: main}
        self.lengths = sorted(int(n) for n in recorded.get("lengths") or [self.length])
        if len(self.lengths) > 1:  # every graph loaded now: a file one of whose graphs the HTP refuses is refused
            import onnx

            from .graphs import model_for

            whole = onnx.load(str(path))
            for n in self.lengths[:-1]:
                self.sessions[n] = _session(model_for(whole, n, path.name), f"{path.name} ({n} tokens)", soc)
        names = [o.name for o in self.sessions[self.length].get_outputs()]
        self.per_token = [n in recorded.get("per_token_outputs", ()) for n in names]
        self.input_names = [i.name for i in self.sessions[self.length].get_inputs()]
        self.last_length = self.length  # the graph the last text ran in

    @property
    def session(self) -> Any:
        """The session of the file's own (longest) graph."""
        return self.sessions[self.length]

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs for one text (batch 1) of at most the file's length, as an unpadded run gives them."""
        n = text_length(feeds, self.length, "the NPU file")
        self.last_length = min(m for m in self.lengths if m >= n)
        padded = pad(feeds, self.last_length, self.input_names)
        return cut(self.sessions[self.last_length].run(None, padded), self.per_token, n)


def _session(source: Path | bytes, shown: str, soc: Soc) -> Any:
    """An HTP session of ``source``, or the one-line refusal of why the HTP does not take it."""
    from ...core.native_stderr import caught_stderr
    from .refusal import why_not

    log: list[str] = []
    try:
        with caught_stderr(echo_on_error=False) as log:
            return htp.session(source, soc)
    except Exception as exc:  # ONNX Runtime's errors: nodes off the HTP, an unreadable context binary
        raise why_not(shown, exc, log) from None
