"""An .onnx (or .ort) run in an ONNX Runtime session on the CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .precision import Precision, precision_for, session

DEPTH_OUTPUT = "diagnosis/hidden_by_depth"  # the Loop's scan output a depth probe adds (not in the file)


class OnnxRunner:
    """An .onnx loaded in an ONNX Runtime InferenceSession on the CPU, in the host's precision mode
    (``precision``: a ``Precision`` or its value; default the non-saturating one wherever the host's u8s8 kernel
    saturates)."""

    def __init__(self, path: Path, threads: int | None = None, precision: Precision | str | None = None) -> None:
        self.precision = Precision(precision) if precision else precision_for()
        self.session = session(Path(path), threads, self.precision)
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.session.run(None, {n: np.ascontiguousarray(feeds[n], dtype=np.int64) for n in self.input_names})


class OnnxDepthRunner:
    """An .onnx whose layer Loop also hands out the hidden state after each depth (a scan output added to a
    copy of the graph in memory; the file is not changed), in the project's session."""

    def __init__(self, path: Path) -> None:
        self.session = session(Path(path), None, precision_for(), edit=_expose_depths)
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run_states(self, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The outputs and the hidden state after each depth of the Loop (batch 1), each ``[tokens, hidden]``."""
        got = self.session.run(None, {n: np.ascontiguousarray(feeds[n], dtype=np.int64) for n in self.input_names})
        by_depth = got[-1]  # [depth, 1, S, H]
        return got[:-1], [d.reshape(d.shape[-2], -1) for d in by_depth]


def _layer_loop(model: Any):
    """The graph's one Loop carrying one state (the export's shared layer), or None."""
    loops = [n for n in model.graph.node if n.op_type == "Loop"]
    if len(loops) != 1 or len(loops[0].output) != 1:
        return None
    body = next((a.g for a in loops[0].attribute if a.name == "body"), None)
    return (loops[0], body) if body is not None and len(body.output) == 2 else None


def _expose_depths(model: Any) -> None:
    """Add the Loop's carried hidden state as a scan output and a graph output (``DEPTH_OUTPUT``)."""
    from onnx import TensorProto, helper

    found = _layer_loop(model)
    if found is None:
        raise ValueError("no layer Loop to observe")
    loop, body = found
    scan = DEPTH_OUTPUT + "/body"
    body.node.append(helper.make_node("Identity", [body.output[1].name], [scan], name=scan))
    body.output.append(helper.make_tensor_value_info(scan, TensorProto.FLOAT, None))
    loop.output.append(DEPTH_OUTPUT)
    model.graph.output.append(helper.make_tensor_value_info(DEPTH_OUTPUT, TensorProto.FLOAT, None))


def depth_runner(path: Path) -> OnnxDepthRunner | None:
    """``path`` loaded for ``run_states``, or None when its layers are not one Loop (several layer groups are
    written unrolled)."""
    import onnx

    if _layer_loop(onnx.load(str(path), load_external_data=False)) is None:
        return None
    return OnnxDepthRunner(path)
