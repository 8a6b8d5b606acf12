"""An .onnx (or .ort) run in an ONNX Runtime session on the CPU."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .precision import Precision, precision_for, session


class Runner:
    """An .onnx loaded in an ONNX Runtime InferenceSession on the CPU, in the host's precision mode
    (``precision``: the non-saturating one wherever the host's u8s8 kernel saturates)."""

    def __init__(self, path: Path, threads: int | None = None, precision: Precision | None = None) -> None:
        self.precision = precision or precision_for()
        self.session = session(Path(path), threads, self.precision)
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.session.run(None, {n: np.ascontiguousarray(feeds[n], dtype=np.int64) for n in self.input_names})
