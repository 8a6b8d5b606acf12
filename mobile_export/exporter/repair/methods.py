"""The repairs themselves: smoothing scales folded exactly into the weights (``smooth``), each remaining Linear
with an outlier channel dividing its own input by smoothing scales (``scales``), and the fewest Linears kept in
fp32 whose emulated int8 lets the rest pass (``mixed``)."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from quantize.smooth import INPUT_SCALE, Fold, foldable_pairs, give_input_scales, smooth
from quantize.smooth_search import candidate_scales

from ...core.thresholds import Thresholds
from ...model.activations import OUTLIER_RATIO, channel_ranges
from ...model.loading import LoadedModel
from ...model.reference import Example
from ...parity.diagnosis import Emulation, attribution_sample, quantized_linears
from .record import MIXED_MARGINS_DB, finite

SAMPLED_ROWS = 4096  # input rows per Linear the scales are chosen on (the sample's tokens, every depth)
MIN_GROUP_GAIN_DB = 0.05  # a group's input scales are kept when the whole model's emulated int8 gains this much
# and all of them only when together they gain this much (beyond the sample's noise: a 0.4 dB gain on a tiny model's
# 12 texts was a 0.6 dB loss on 16 others)
MIN_SCALE_GAIN_DB = 0.5
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


@torch.no_grad()
def input_scaled(
    loaded: LoadedModel, examples: Sequence[Example], granularity: str, int8_table: bool = True
) -> tuple[LoadedModel, list[Fold]]:
    """A copy of ``loaded`` in which Linears whose input has an outlier channel on ``examples`` (over every depth)
    divide that input by smoothing scales (``quantize.smooth_search.candidate_scales``), each group's kept only where
    the whole model's emulated int8 at ``granularity`` gains ``MIN_GROUP_GAIN_DB`` (its lowest example losing none)
    and all of them only when together they gain ``MIN_SCALE_GAIN_DB``; the scales kept (none: the copy equals the
    model)."""
    ranges = channel_ranges(loaded.model, examples, rows=SAMPLED_ROWS)
    inputs = {n: r.rows for n, r in ranges.items() if r.outliers() and r.rows is not None}
    candidates = candidate_scales(loaded.model, inputs, granularity, threshold=OUTLIER_RATIO)
    model = copy.deepcopy(loaded.model)
    if not candidates:
        return dataclasses.replace(loaded, model=model), []
    trial = dataclasses.replace(loaded, model=copy.deepcopy(loaded.model))
    emulation = Emulation(trial, examples, int8_table)  # on a copy: the trials change its weights
    names = quantized_linears(loaded.model)
    start = best = emulation.sqnr(names, granularity)
    kept = []
    for group, scales in candidates:
        saved = _snapshot(emulation.model, group)
        give_input_scales(emulation.model, group, scales)
        emulation.forget(group)
        score = emulation.sqnr(names, granularity)
        if score[0] >= best[0] + MIN_GROUP_GAIN_DB and score[1] >= best[1]:
            best = score
            kept.append((group, scales))
        else:
            _restore(saved)
            emulation.forget(group)
    if best[0] < start[0] + MIN_SCALE_GAIN_DB:
        kept = []
    folds = [give_input_scales(model, group, scales) for group, scales in kept]
    return dataclasses.replace(loaded, model=model), folds


_Saved = list[tuple[torch.nn.Linear, type, torch.Tensor, torch.Tensor | None]]


def _snapshot(model: torch.nn.Module, names: Sequence[str]) -> _Saved:
    """What ``give_input_scales`` changes in the Linears ``names``: class, weight, input scale."""
    out = []
    for n in names:
        m = cast(torch.nn.Linear, model.get_submodule(n))
        scale = getattr(m, "input_scale", None)
        out.append((m, type(m), m.weight.detach().clone(), scale.clone() if scale is not None else None))
    return out


@torch.no_grad()
def _restore(saved: _Saved) -> None:
    """The Linears of a ``_snapshot`` as they were."""
    for m, cls, weight, scale in saved:
        m.weight.copy_(weight)
        m.__class__ = cls
        if scale is None:
            m._buffers.pop("input_scale", None)
        else:
            cast(torch.Tensor, m.input_scale).copy_(scale)


def fold_changes(folds: Sequence[Fold]) -> list[dict[str, Any]]:
    """The report's record of each fold, with the bytes it stores."""
    return [
        {
            **(
                {"readers": f.consumer.split(",")}
                if f.producer == INPUT_SCALE
                else {"producer": f.producer, "consumer": f.consumer}
            ),
            "channels_rescaled": f.channels,
            "largest_scale": round(f.largest_scale, 3),
            "stored_bytes": f.stored_bytes,
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
