"""Parity beyond the headline numbers: across runtimes, and the bounded samples the report plots.

``export`` and ``mobile-export parity`` both use this, so their reports carry the same sections. Both
accumulators take one example at a time and merge with the accumulator of the next batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..core.tasks import OutputKind, TaskSpec
from .metrics import decisions_of

MAX_POINTS = 3000


@dataclass(frozen=True)
class PlotData:
    """What the HTML report plots: sampled (fp32, artifact) output values, and for sampled examples their
    length and max |diff|."""

    reference: list[float]
    artifact: list[float]
    per_example: list[list]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> PlotData | None:
        """The samples ``to_dict`` wrote; None for an artifact without them (written as ``{}``)."""
        if not d:
            return None
        return cls(
            list(d.get("reference") or ()), list(d.get("artifact") or ()), [list(e) for e in d.get("per_example") or ()]
        )


class BottomK:
    """A uniform random sample of at most ``k`` rows from a stream of any length: every row gets a
    uniform key, the ``k`` smallest keys are kept. A batch of ``n`` rows draws keys only for the rows
    that can enter (at most ``k``), so a million output values cost a few thousand draws. Samples of
    consecutive streams merge into a sample of their concatenation."""

    def __init__(self, k: int, width: int, seed: int = 0) -> None:
        self.k = k
        self.rng = np.random.default_rng(seed)
        self.seen = 0
        self.keys = np.empty(0)
        self.order = np.empty(0, dtype=np.int64)
        self.rows = np.empty((0, width))

    def add(self, columns: Sequence[np.ndarray]) -> None:
        """Offer the rows given as equal-length columns."""
        n = len(columns[0])
        bound = 1.0 if len(self.keys) < self.k else float(self.keys.max())
        take = int(self.rng.binomial(n, bound)) if bound < 1.0 else n  # rows whose keys fall below the bound
        if take > self.k:  # only the k smallest of them can stay: the k-th is Beta-distributed, the rest below it
            top = bound * float(self.rng.beta(self.k, take - self.k + 1))
            keys = np.append(self.rng.random(self.k - 1) * top, top)
            self.rng.shuffle(keys)
        else:
            keys = self.rng.random(take) * bound
        if len(keys):
            pos = np.sort(self.rng.choice(n, size=len(keys), replace=False))
            rows = np.stack([np.asarray(c)[pos].astype(np.float64) for c in columns], axis=1)
            self._keep(keys, self.seen + pos, rows)
        self.seen += n

    def merge(self, other: "BottomK") -> None:
        """Fold in the sample of the stream that follows this one."""
        self._keep(other.keys, other.order + self.seen, other.rows)
        self.seen += other.seen

    def _keep(self, keys: np.ndarray, order: np.ndarray, rows: np.ndarray) -> None:
        keys, order = np.concatenate([self.keys, keys]), np.concatenate([self.order, order])
        rows = np.concatenate([self.rows, rows])
        if len(keys) > self.k:
            best = np.argpartition(keys, self.k - 1)[: self.k]
            keys, order, rows = keys[best], order[best], rows[best]
        self.keys, self.order, self.rows = keys, order, rows

    def sample(self) -> np.ndarray:
        """The kept rows, in stream order."""
        return self.rows[np.argsort(self.order, kind="stable")]


class PlotSampler:
    """Bounded samples for the report's plots: (fp32, artifact) output values and (length, max |diff|)
    of examples, each at most ``MAX_POINTS``."""

    def __init__(self, seed: int = 0) -> None:
        self.values = BottomK(MAX_POINTS, 2, seed)
        self.examples = BottomK(MAX_POINTS, 2, seed + 1)

    def add(
        self, reference: Sequence[np.ndarray], actual: Sequence[np.ndarray], length: int, max_abs_diff: float
    ) -> None:
        """Offer one example's outputs and its max |diff|."""
        self.values.add([_flat(reference), _flat(actual)])
        self.examples.add([np.array([length]), np.array([max_abs_diff])])

    def merge(self, other: "PlotSampler") -> None:
        self.values.merge(other.values)
        self.examples.merge(other.examples)

    def plot(self) -> PlotData:
        values, examples = self.values.sample(), self.examples.sample()
        return PlotData(
            reference=[round(float(v), 5) for v in values[:, 0]],
            artifact=[round(float(v), 5) for v in values[:, 1]],
            per_example=[[int(n), float(d)] for n, d in examples],
        )


def _flat(outputs: Sequence[np.ndarray]) -> np.ndarray:
    """All output values in one vector (a view when there is one output)."""
    return np.ravel(outputs[0]) if len(outputs) == 1 else np.concatenate([np.ravel(o) for o in outputs])


@dataclass(frozen=True)
class CrossRuntime:
    """Two artifacts against each other on the same examples (report.json's ``cross_runtime`` rows)."""

    a: str
    b: str
    agreement: float | None  # share of equal top-1 decisions; None where the task makes none
    decisions: int
    max_abs_diff: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CrossRuntime:
        """The row ``to_json`` wrote."""
        agreement = d.get("agreement")
        return cls(
            d["a"],
            d["b"],
            None if agreement is None else float(agreement),
            int(d.get("decisions", 0)),
            d["max_abs_diff"],
        )


class CrossRuntimeTally:
    """Pairwise agreement and max |diff| between artifacts (e.g. .pte vs .onnx) on the same examples."""

    def __init__(self, task: TaskSpec, names: Sequence[str]) -> None:
        self.task = task
        self.pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        self.agree = [0] * len(self.pairs)
        self.total = [0] * len(self.pairs)
        self.max_diff = [0.0] * len(self.pairs)

    def add(self, outputs: dict[str, Sequence[np.ndarray]]) -> None:
        """Fold in one example's outputs of every artifact."""
        # a top-k head's ids and positions are labels, not values: only its scores are compared by value
        values = {n: [o[2]] if self.task.kind is OutputKind.TOP_K else o for n, o in outputs.items()}
        for k, (a, b) in enumerate(self.pairs):
            if a not in values or b not in values:  # a sampled runtime (the NPU simulator) skipped this text
                continue
            for x, y in zip(values[a], values[b]):
                if np.size(x):
                    self.max_diff[k] = max(
                        self.max_diff[k], float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
                    )
            if self.task.has_argmax:
                da, db = decisions_of(self.task.kind, outputs[a]), decisions_of(self.task.kind, outputs[b])
                self.agree[k] += int(np.sum(da == db))
                self.total[k] += int(da.size)

    def merge(self, other: "CrossRuntimeTally") -> None:
        for k in range(len(self.pairs)):
            self.agree[k] += other.agree[k]
            self.total[k] += other.total[k]
            self.max_diff[k] = max(self.max_diff[k], other.max_diff[k])

    def rows(self) -> list[CrossRuntime]:
        """One record per pair of artifacts."""
        return [
            CrossRuntime(
                a, b, self.agree[k] / self.total[k] if self.total[k] else None, self.total[k], self.max_diff[k]
            )
            for k, (a, b) in enumerate(self.pairs)
        ]
