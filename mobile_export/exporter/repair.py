"""Repairs of an int8 export that fails its parity gate, in order of cost; each repaired artifact is judged
by the same gate against the same fp32 reference as the plain one.

``smooth``: SmoothQuant's migration folded exactly into ALBERT's foldable weight pairs (``quantize.smooth``),
its scales from the input ranges of the diagnosis sample over every depth of the shared layer at once. The
fp32 function is unchanged, the graph is the plain one's (same operators, shapes and bytes per weight), so
the artifact keeps every property of a plain export.

``mixed``: the smallest set of Linears kept in fp32 whose emulated int8 (``parity.diagnosis.Emulation``, the
runtime's activation granularity) clears the gate with a margin: weights ranked by what keeping each alone in
fp32 recovers, added until the target is met, then each dropped again if the rest still meet it. A shared
layer's weight counts once, whatever the depth. For outliers no rescaling can fold (the residual stream).
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

from ..core.config import Repair, Thresholds
from ..model.activations import OUTLIER_RATIO, channel_ranges
from ..model.loading import LoadedModel
from ..model.reference import Example
from ..parity.artifact import ArtifactResult
from ..parity.diagnosis import Emulation, attribution_sample, quantized_linears

NOTHING_TO_FOLD = (
    "nothing to fold: no outlier channel at an input the graph rescales exactly (the embedding projection, "
    "the attention output)"
)
NO_LARGER_SET = "a larger margin chose no weight beyond the ones already tried"
NOTHING_TO_KEEP = (
    "nothing to keep in fp32: the emulated int8 of every weight already clears the gate, so int8 is not what "
    "the gate refuses (check the weights that were exported)"
)
METHODS: dict[Repair, tuple[str, ...]] = {
    Repair.AUTO: ("smooth", "mixed"),
    Repair.SMOOTH: ("smooth",),
    Repair.MIXED: ("mixed",),
    Repair.OFF: (),
}
# dB above the gate's SQNR limits the emulated int8 of a mixed-precision choice must reach, one round each
# while the real gate still refuses: the emulation is within ~3 dB of the real runtime on the same texts
# (tests/test_outliers.py), but the sample is 16 texts and the gate also judges each length bucket
MIXED_MARGINS_DB = (6.0, 12.0)
# where what stays int8 whatever is kept (the word table) limits the emulated SQNR, the target is this far
# below what keeping every Linear reaches
CEILING_SLACK_DB = 1.0


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
    # median ms per text during each parity run (batch 1, the parity texts' mixed lengths; not a benchmark)
    parity_ms_before: float | None = None
    parity_ms_after: float | None = None
    # the repaired artifact's hidden state after each depth, in its real runtime (SQNR dB; the plain one's
    # is the diagnosis'); None where its layers are not a loop the runtime exposes
    after_depth_sqnr_db: tuple[float | None, ...] | None = None
    # what the device feels, each artifact in a fresh process as ``bench`` measures it (``Cost``): median ms of
    # one call at ``cost_tokens`` tokens, and the model's RAM after load + runs; None with --no-memory
    cost_tokens: int | None = None
    latency_ms_before: float | None = None
    latency_ms_after: float | None = None
    model_rss_before: int | None = None
    model_rss_after: int | None = None

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


@dataclass(frozen=True)
class Cost:
    """One artifact as the device feels it: ``bench``'s fresh-process measurement at one length."""

    tokens: int
    latency_ms: float  # median of batch-1 calls
    model_rss: int  # bytes: the model's RAM after load and the calls


def outcome(
    before: ArtifactResult,
    after: ArtifactResult,
    after_depth_db: Sequence[float] | None = None,
    costs: tuple[Cost, Cost] | None = None,
) -> Outcome:
    """``after`` (the repaired artifact) against ``before`` (the plain one); ``after_depth_db``: its error by
    depth in its runtime; ``costs``: (before, after) measured on the device's path."""
    cost: dict[str, Any] = {}
    if costs is not None:
        cost = {
            "cost_tokens": costs[1].tokens,
            "latency_ms_before": costs[0].latency_ms,
            "latency_ms_after": costs[1].latency_ms,
            "model_rss_before": costs[0].model_rss,
            "model_rss_after": costs[1].model_rss,
        }
    return Outcome(
        file=after.file,
        before_sqnr_db=_finite(before.parity.sqnr_db),
        after_sqnr_db=_finite(after.parity.sqnr_db),
        before_min_example_db=_finite(before.parity.min_example_sqnr_db),
        after_min_example_db=_finite(after.parity.min_example_sqnr_db),
        passed=after.parity.passed,
        bytes_before=before.bytes,
        bytes_after=after.bytes,
        parity_ms_before=_median_ms(before),
        parity_ms_after=_median_ms(after),
        after_depth_sqnr_db=None if after_depth_db is None else tuple(_finite(d) for d in after_depth_db),
        **cost,
    )


def _median_ms(result: ArtifactResult) -> float | None:
    latency = (result.stats or {}).get("parity_latency_ms") or {}
    return latency.get("median")


@dataclass(frozen=True)
class Fallback:
    """The Linears a mixed-precision repair keeps in fp32 for one runtime granularity, and why."""

    granularity: str
    weights: tuple[str, ...]
    emulated_before_db: float  # every Linear int8
    emulated_after_db: float  # with ``weights`` in fp32
    emulated_lowest_db: float  # the sample's lowest example, with ``weights`` in fp32
    target_db: float
    margin_db: float
    met: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "granularity": self.granularity,
            "fp32_weights": list(self.weights),
            "emulated_before_db": _finite(self.emulated_before_db),
            "emulated_after_db": _finite(self.emulated_after_db),
            "emulated_lowest_example_db": _finite(self.emulated_lowest_db),
            "target_db": self.target_db,
            "margin_db": self.margin_db,
            "target_met": self.met,
        }


@torch.no_grad()
def fp32_fallback(
    loaded: LoadedModel,
    examples: Sequence[Example],
    granularity: str,
    thresholds: Thresholds,
    int8_table: bool = True,
    margin_db: float = MIXED_MARGINS_DB[0],
) -> Fallback:
    """The smallest set of ``loaded``'s Linears (greedy, then pruned) whose being fp32 lets the emulated int8 of
    the rest clear ``thresholds`` by ``margin_db`` on ``examples``; where what stays int8 whatever is
    kept (the word table) already costs more, the target is what keeping every Linear reaches (``CEILING_SLACK_DB``)."""
    emulation = Emulation(loaded, examples, int8_table)
    tied = {id(m.weight) for m in loaded.model.modules() if isinstance(m, torch.nn.Embedding)}
    # a decoder tied to the word table is int8 with the table, whatever the choice: not a candidate
    names = [n for n in quantized_linears(loaded.model) if id(loaded.model.get_submodule(n).weight) not in tied]

    def scores(kept: Sequence[str]) -> tuple[float, float]:
        return emulation.sqnr([n for n in names if n not in kept], granularity)

    ceiling = scores(names)
    target = min((thresholds.min_sqnr_db or 0.0) + margin_db, ceiling[0] - CEILING_SLACK_DB)
    floor = min((thresholds.min_example_sqnr_db or -math.inf) + margin_db, ceiling[1] - CEILING_SLACK_DB)

    def meets(score: tuple[float, float]) -> bool:
        return score[0] >= target and score[1] >= floor

    before = scores(())
    few = attribution_sample(loaded.config, examples)  # the ranking needs an order, not the whole sample
    ranking = emulation if len(few) == len(examples) else Emulation(loaded, few, int8_table)
    _, errors = ranking.weight_errors(names, granularity)
    ranked = [e.weight for e in sorted(errors, key=lambda e: e.alone_db)]  # the costliest alone first
    kept: list[str] = []
    score = before
    for name in ranked:
        if meets(score):
            break
        kept.append(name)
        score = scores(kept)
    for name in reversed(kept[:-1] if meets(score) else []):  # the last one added was needed
        trial = [k for k in kept if k != name]
        trial_score = scores(trial)
        if meets(trial_score):
            kept, score = trial, trial_score
    return Fallback(granularity, tuple(kept), before[0], score[0], score[1], round(target, 2), margin_db, meets(score))
