"""Parity beyond the headline numbers: by sequence length, across runtimes, and the data for plots.

``export`` and ``mobile-export parity`` both use this, so their reports carry the same sections.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .config import Thresholds
from .tasks import TaskSpec
from .verify import LengthBucket, _decisions, compare

MAX_POINTS = 3000


@dataclass(frozen=True)
class PlotData:
    """What the HTML report plots: sampled (fp32, artifact) output values, and per example its length
    and max |diff|."""

    reference: list[float]
    artifact: list[float]
    per_example: list[list]

    def to_dict(self) -> dict:
        return asdict(self)


def by_length(task: TaskSpec, reference, actual, lengths: list[int]) -> list[LengthBucket]:
    """Metrics per sequence-length bucket (only buckets that have examples), without any gate."""
    return list(compare(task, reference, actual, Thresholds(), lengths=lengths).by_length)


def plot_data(reference, actual, lengths: list[int]) -> PlotData:
    """What the HTML report plots, small enough to keep in report.json: a deterministic sample of
    (fp32, artifact) output values and each example's length and max |diff|."""
    ref = np.concatenate([np.asarray(o, np.float64).ravel() for outs in reference for o in outs])
    act = np.concatenate([np.asarray(o, np.float64).ravel() for outs in actual for o in outs])
    step = max(1, len(ref) // MAX_POINTS)
    per_example = []
    for outs_r, outs_a, n in zip(reference, actual, lengths):
        d = max((float(np.max(np.abs(np.asarray(r, np.float64) - np.asarray(a, np.float64)))) if np.size(r) else 0.0)
                for r, a in zip(outs_r, outs_a))
        per_example.append([int(n), d])
    return PlotData(reference=[round(float(v), 5) for v in ref[::step][:MAX_POINTS]],
                    artifact=[round(float(v), 5) for v in act[::step][:MAX_POINTS]], per_example=per_example)


def cross_runtime(task: TaskSpec, outputs: dict[str, list[list[np.ndarray]]]) -> list[dict]:
    """Pairwise agreement between artifacts (e.g. .pte vs .onnx) on the same examples."""
    names = list(outputs)
    rows = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            agree = total = 0
            max_diff = 0.0
            for oa, ob in zip(outputs[a], outputs[b]):
                for x, y in zip(oa, ob):
                    if np.size(x):
                        max_diff = max(max_diff, float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)))))
                if task.has_argmax:
                    da, db = _decisions(task.kind, oa), _decisions(task.kind, ob)
                    agree += int(np.sum(da == db))
                    total += int(da.size)
            rows.append({"a": a, "b": b, "agreement": agree / total if total else None, "decisions": total,
                         "max_abs_diff": max_diff})
    return rows
