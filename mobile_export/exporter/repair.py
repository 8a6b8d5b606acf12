"""Repairs of an int8 export that fails its parity gate, in order of cost; each repaired artifact is judged
by the same gate against the same fp32 reference as the plain one.

``smooth``: SmoothQuant's migration folded exactly into ALBERT's foldable weight pairs (``quantize.smooth``),
its scales from the input ranges of the diagnosis sample over every depth of the shared layer at once. The
fp32 function is unchanged, the graph is the plain one's (same operators, shapes and bytes per weight), so
the artifact keeps every property of a plain export.
"""

from __future__ import annotations

import copy
import math
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from quantize.smooth import Fold, foldable_pairs, smooth

from ..core.config import Repair
from ..model.activations import OUTLIER_RATIO, channel_ranges
from ..model.loading import LoadedModel
from ..model.reference import Example
from ..parity.artifact import ArtifactResult

NOTHING_TO_FOLD = (
    "nothing to fold: no outlier channel at an input the graph rescales exactly (the embedding projection, "
    "the attention output)"
)
METHODS: dict[Repair, tuple[str, ...]] = {Repair.AUTO: ("smooth",), Repair.SMOOTH: ("smooth",), Repair.OFF: ()}


@dataclass(frozen=True)
class Outcome:
    """One artifact before and after one repair."""

    file: str
    before_sqnr_db: float | None
    after_sqnr_db: float | None
    before_min_example_db: float | None
    after_min_example_db: float | None
    passed: bool
    bytes_before: int
    bytes_after: int

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Attempt:
    """One repair method tried: what it changed in the model, and what the gate said of each artifact."""

    method: str
    changes: list[dict[str, Any]]
    note: str = ""
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and all(o.passed for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "changes": self.changes,
            "note": self.note,
            "passed": self.passed,
            "artifacts": [o.to_json() for o in self.outcomes],
        }


@dataclass
class RepairRecord:
    """What ``--repair`` did: the mode, every attempt in order, and the method whose artifacts were kept."""

    mode: str
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def applied(self) -> str | None:
        return next((a.method for a in self.attempts if a.passed), None)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "applied": self.applied, "attempts": [a.to_json() for a in self.attempts]}

    def headline(self) -> str:
        """One line for progress and the CLI: each attempt and its artifacts' SQNR before -> after."""
        parts = []
        for a in self.attempts:
            done = ", ".join(
                f"{o.file} {_db(o.before_sqnr_db)} -> {_db(o.after_sqnr_db)} dB {'pass' if o.passed else 'FAIL'}"
                for o in a.outcomes
            )
            parts.append(f"{a.method}: {a.note or done}" + (f" ({done})" if a.note and done else ""))
        return "; ".join(parts)


def _finite(v: float | None) -> float | None:
    return round(v, 2) if v is not None and math.isfinite(v) else None


def _db(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def failing(results: Sequence[ArtifactResult]) -> list[ArtifactResult]:
    """The artifacts the gate refused."""
    return [r for r in results if not r.parity.passed]


@torch.no_grad()
def smoothed(loaded: LoadedModel, examples: Sequence[Example]) -> tuple[LoadedModel, list[Fold]]:
    """A copy of ``loaded`` with smoothing scales folded into each exact pair whose consumer's input has an
    outlier channel on ``examples`` (over every depth); the folds made (none: the copy equals the model)."""
    model = copy.deepcopy(loaded.model)
    consumers = {c for _, c in foldable_pairs(model)}
    ranges = channel_ranges(model, examples)
    absmax = {n: torch.from_numpy(r.absmax) for n, r in ranges.items() if n in consumers and r.outliers()}
    folds = smooth(model, absmax, threshold=OUTLIER_RATIO)
    return dataclasses.replace(loaded, model=model), folds


def fold_changes(folds: Sequence[Fold]) -> list[dict[str, Any]]:
    """The report's record of each fold."""
    return [
        {
            "producer": f.producer,
            "consumer": f.consumer,
            "channels_rescaled": f.channels,
            "largest_scale": round(f.largest_scale, 3),
        }
        for f in folds
    ]


def outcome(before: ArtifactResult, after: ArtifactResult) -> Outcome:
    """``after`` (the repaired artifact) against ``before`` (the plain one)."""
    return Outcome(
        file=after.file,
        before_sqnr_db=_finite(before.parity.sqnr_db),
        after_sqnr_db=_finite(after.parity.sqnr_db),
        before_min_example_db=_finite(before.parity.min_example_sqnr_db),
        after_min_example_db=_finite(after.parity.min_example_sqnr_db),
        passed=after.parity.passed,
        bytes_before=before.bytes,
        bytes_after=after.bytes,
    )
