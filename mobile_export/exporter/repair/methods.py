"""The repairs themselves: smoothing scales folded exactly into the weights (``smooth``), and the fewest Linears
kept in fp32 whose emulated int8 lets the rest pass (``mixed``)."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from quantize.smooth import Fold, foldable_pairs, smooth

from ...core.thresholds import Thresholds
from ...model.activations import OUTLIER_RATIO, channel_ranges
from ...model.loading import LoadedModel
from ...model.reference import Example
from ...parity.diagnosis import Emulation, attribution_sample, quantized_linears
from .record import MIXED_MARGINS_DB, finite

# where what stays int8 whatever is kept (the word table) limits the emulated SQNR, the target is this far
# below what keeping every Linear reaches
CEILING_SLACK_DB = 1.0


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
            "emulated_before_db": finite(self.emulated_before_db),
            "emulated_after_db": finite(self.emulated_after_db),
            "emulated_lowest_example_db": finite(self.emulated_lowest_db),
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
    few = attribution_sample(loaded.config, examples, len(names))  # the ranking needs an order, not the whole sample
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
