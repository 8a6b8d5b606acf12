"""Where the NPU file's error comes from, per tensor (what ONNX Runtime's ``qdq_loss_debug`` measures): each
activation of the QDQ model against the same tensor of the float model it was quantized from, on the export's
diagnosis sample, and each activation's own share (the float value rounded and clipped to the file's scale alone).
Both models run on ONNX Runtime's CPU provider (fast, and close to the HTP's QDQ arithmetic, not equal to it): the
file's own verdict stays the parity check's, on the simulator.

By depth: the output of each encoder layer (the second LayerNormalization after each attention Softmax, as in every
family the NPU file takes), so a loss that grows with the unrolled layers shows as it grows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.figures import db_json, sqnr_from_sums
from ..fixed import pad

if TYPE_CHECKING:  # the NPU file's runners and checks load without torch
    from ...model.reference import Example

REFERENCE_SUFFIX = ".fp32.tmp"  # the float model the lowering quantized, kept beside the file in the staging folder
LISTED = 8  # tensors a report names: those with the largest own error


def reference_path(dest: Path) -> Path:
    """Where the lowering leaves the float model it quantized into ``dest`` (for this diagnosis)."""
    return dest.with_name(dest.name + REFERENCE_SUFFIX)


@dataclass(frozen=True)
class TensorError:
    """One activation of the QDQ model against the float model's: ``sqnr_db`` with every error up to it,
    ``own_db`` its own rounding and clipping alone, ``clipped`` the share of float values outside its range."""

    tensor: str
    op: str
    layer: int | None  # 0: the embeddings; k: the k-th encoder layer; None: the head after the last
    sqnr_db: float
    own_db: float
    clipped: float

    def to_json(self) -> dict[str, Any]:
        return {
            "tensor": self.tensor,
            "op": self.op,
            "layer": self.layer,
            "sqnr_db": db_json(self.sqnr_db),
            "own_db": db_json(self.own_db),
            "clipped": round(self.clipped, 6),
        }


@dataclass(frozen=True)
class QdqDiagnosis:
    """The NPU file's error per tensor and by layer on ``texts`` texts."""

    file: str
    texts: int
    tensors: tuple[TensorError, ...]  # in the graph's order
    layer_db: tuple[float, ...]  # each encoder layer's output

    def named(self) -> list[TensorError]:
        """The ``LISTED`` tensors with the largest own error (rounding and clipping at their scale), largest first."""
        return sorted(self.tensors, key=lambda t: t.own_db)[:LISTED]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "texts": self.texts,
            "runtime": "ONNX Runtime CPU provider (QDQ), against the float model it was quantized from",
            "tensors_compared": len(self.tensors),
            "clipped_tensors": sum(1 for t in self.tensors if t.clipped > 0),
            "clipped": [t.tensor for t in self.tensors if t.clipped > 0],
            "layer_sqnr_db": [db_json(d) for d in self.layer_db],
            "named": [t.to_json() for t in self.named()],
        }


@dataclass
class _PairSums:
    signal: float = 0.0
    noise: float = 0.0
    own: float = 0.0
    clipped: int = 0
    count: int = 0


@dataclass(frozen=True)
class _Pair:
    """A quantized activation: its name in the float model, the QDQ model's dequantized copy, its scale."""

    name: str
    dequantized: str
    scale: float
    zero_point: int
    qmax: int


def _pairs(qdq: Any, float_names: set[str]) -> list[_Pair]:
    """Every activation the QDQ model quantizes with one scale (weights and per-channel tensors left out)."""
    from onnx import numpy_helper

    inits = {t.name: t for t in qdq.graph.initializer}
    dq_of = {n.input[0]: n for n in qdq.graph.node if n.op_type == "DequantizeLinear"}
    pairs = []
    for node in qdq.graph.node:
        if node.op_type != "QuantizeLinear" or node.input[0] in inits or node.output[0] not in dq_of:
            continue
        dq = dq_of[node.output[0]]
        scale = numpy_helper.to_array(inits[node.input[1]]) if node.input[1] in inits else None
        zp = numpy_helper.to_array(inits[node.input[2]]) if len(node.input) > 2 and node.input[2] in inits else None
        if scale is None or zp is None or scale.size != 1:
            continue
        # a graph output keeps its name on the DequantizeLinear (its producer's output was renamed)
        name = node.input[0] if node.input[0] in float_names else dq.output[0]
        if name in float_names:
            qmax = int(np.iinfo(zp.dtype).max)
            pairs.append(_Pair(name, dq.output[0], float(scale.reshape(())), int(zp.reshape(())), qmax))
    return pairs


def _session(model: Any, outputs: Sequence[str]):
    """A CPU session of ``model`` that also returns ``outputs``."""
    import onnxruntime as ort
    from onnx import helper

    have = {o.name for o in model.graph.output}
    for name in outputs:
        if name not in have:
            model.graph.output.append(helper.make_empty_tensor_value_info(name))
            have.add(name)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # every tensor as the graph names it
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _real(a: np.ndarray, n: int, length: int) -> np.ndarray:
    """``a`` without the padded positions where its sequence axis is clear: [1, S, ...] (hidden states, before the
    heads split) and [1, heads, S, ...] (after it; attention scores [1, heads, S, S] on both axes)."""
    if a.ndim >= 2 and a.shape[0] == 1 and a.shape[1] == length and (a.ndim < 4 or a.shape[2] != length):
        return a[:, :n]
    if a.ndim == 4 and a.shape[2] == length:
        return a[:, :, :n, :n] if a.shape[3] == length else a[:, :, :n]
    return a


def _layers(model: Any) -> tuple[dict[str, int | None], list[str]]:
    """Each node output's place (0: the embeddings, up to their LayerNormalization; k: the k-th encoder layer; None:
    the head after the last) and each layer's output tensor, in graph order."""
    outputs: list[str] = []
    nested = False
    norms_since_softmax: int | None = None
    place: dict[str, int | None] = {}
    for node in model.graph.node:
        if node.op_type == "Softmax":
            norms_since_softmax = 0
        for o in node.output:
            place[o] = len(outputs) + 1 if nested else 0
        if node.op_type == "LayerNormalization":
            nested = True
            if norms_since_softmax is not None:
                norms_since_softmax += 1
                if norms_since_softmax == 2:
                    outputs.append(node.output[0])
                    norms_since_softmax = None
    for name, layer in place.items():
        if layer is not None and layer > len(outputs):
            place[name] = None
    return place, outputs


def diagnose_qdq(qdq_path: Path, float_path: Path, examples: Sequence[Example], inputs: Sequence[str]) -> QdqDiagnosis:
    """The QDQ model at ``qdq_path`` against ``float_path`` per tensor and by layer on ``examples`` (each padded to
    the file's fixed length), both on ONNX Runtime's CPU provider."""
    import onnx

    qdq, ref = onnx.load(str(qdq_path)), onnx.load(str(float_path))
    op_of = {o: n.op_type for n in ref.graph.node for o in n.output}
    pairs = _pairs(qdq, set(op_of))
    q_session = _session(qdq, [p.dequantized for p in pairs])
    f_session = _session(ref, [p.name for p in pairs])
    length = int(q_session.get_inputs()[0].shape[1])
    sums = {p.name: _PairSums() for p in pairs}
    for ex in examples:
        n = min(ex.length, length)
        feeds = pad({k: v[:, :n] for k, v in ex.feeds.items()}, length, inputs)
        f_out = dict(zip([o.name for o in f_session.get_outputs()], f_session.run(None, feeds)))
        q_out = dict(zip([o.name for o in q_session.get_outputs()], q_session.run(None, feeds)))
        for p in pairs:
            x = _real(np.asarray(f_out[p.name], np.float64), n, length)
            y = _real(np.asarray(q_out[p.dequantized], np.float64), n, length)
            q = np.round(x / p.scale) + p.zero_point
            own = (np.clip(q, 0, p.qmax) - p.zero_point) * p.scale
            s = sums[p.name]
            s.signal += float(np.sum(x * x))
            s.noise += float(np.sum((x - y) ** 2))
            s.own += float(np.sum((x - own) ** 2))
            s.clipped += int(np.count_nonzero((q < 0) | (q > p.qmax)))
            s.count += x.size
    layer_of, layer_outputs = _layers(ref)
    tensors = tuple(
        TensorError(
            p.name,
            op_of[p.name],
            layer_of.get(p.name),
            sqnr_from_sums(sums[p.name].signal, sums[p.name].noise),
            sqnr_from_sums(sums[p.name].signal, sums[p.name].own),
            sums[p.name].clipped / max(sums[p.name].count, 1),
        )
        for p in pairs
    )
    by_name = {t.tensor: t for t in tensors}
    layer_db = tuple(by_name[o].sqnr_db for o in layer_outputs if o in by_name)
    return QdqDiagnosis(qdq_path.name, len(examples), tensors, layer_db)
