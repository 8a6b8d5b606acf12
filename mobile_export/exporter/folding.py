"""Exact folds taken on every int8 export: where an outlier channel is read through a pair of layers that can
rescale it exactly (the embedding projection, the attention output: ``quantize.smooth.foldable_pairs``), smoothing
scales folded into the weights change neither the fp32 function nor a byte of the files, and can only move the int8
error. They are taken before anything is lowered, whether the gate would pass the plain files or not, when the
emulated int8 of every chosen format's runtime gains (the lowest example losing none), as the repair judges its
input scales; the report says what was folded and what it gained."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import backends
from ..core.choices import Quant, Repair
from ..parity.diagnosis import Emulation, quantized_linears
from ..reports.summary import folds_line
from .context import ExportRun
from .repair.methods import MIN_GROUP_GAIN_DB, fold_changes, smoothed


@dataclass
class FreeFolds:
    """The exact folds an export found: what they rescale, the emulated SQNR before and after per runtime
    granularity, and whether they were taken."""

    changes: list[dict[str, Any]]
    emulated: dict[str, tuple[tuple[float, float], tuple[float, float]]] = field(default_factory=dict)
    taken: bool = False

    def to_json(self) -> dict[str, Any]:
        """report.json's ``folds``."""
        return {
            "taken": self.taken,
            "changes": self.changes,
            "stored_bytes": 0,
            "emulated_sqnr_db": {
                g: {
                    "before": round(b[0], 2),
                    "after": round(a[0], 2),
                    "lowest_before": round(b[1], 2),
                    "lowest_after": round(a[1], 2),
                }
                for g, (b, a) in self.emulated.items()
            },
        }


def fold_free(run: ExportRun) -> FreeFolds | None:
    """The exact folds of ``run``'s model on its sample, taken (``run.loaded`` replaced by the folded copy) when the
    emulated int8 of each of its formats' granularities gains ``MIN_GROUP_GAIN_DB`` with its lowest example losing
    none; None when there is nothing to fold (or the export is not int8, or ``--repair off`` asks for no change)."""
    if run.options.quant is not Quant.INT8 or run.options.repair is Repair.OFF or not run.sample:
        return None
    with run.progress.step("exact folds: outlier channels a pair of layers rescales at no byte cost"):
        folded, folds = smoothed(run.loaded, run.sample)
        if not folds:
            return None
        int8_table = run.options.quantize_embeddings
        names = quantized_linears(run.loaded.model)
        before, after = Emulation(run.loaded, run.sample, int8_table), Emulation(folded, run.sample, int8_table)
        found = FreeFolds(fold_changes(folds))
        for g in sorted({backends.get_info(b).granularity for b in run.options.backends}):
            found.emulated[g] = (before.sqnr(names, g), after.sqnr(names, g))
    found.taken = all(a[0] >= b[0] + MIN_GROUP_GAIN_DB and a[1] >= b[1] for b, a in found.emulated.values())
    if found.taken:
        run.loaded = folded
    run.progress.say(folds_line(found.to_json()))
    return found
