"""The repair loop: while the gate refuses an artifact, the next repair of ``--repair`` in order of cost; the
artifacts it changes are lowered again and judged by the same gate against the same fp32 reference."""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import backends
from ...core.choices import Repair
from ...backends import Backend
from ...model.loading import LoadedModel
from ...parity.artifact import ArtifactResult
from ...parity.checker import Checked
from ...parity.diagnosis import reference_states, runtime_depth_sqnr
from ..check import check_lowered
from ..context import ExportRun
from .. import lowering
from ..lowering import Lowered, export_module, plain_module
from .cost import Cost, cost
from .methods import fold_changes, fp32_fallback, input_scaled, smoothed
from .record import (
    MIXED_MARGINS_DB,
    NO_LARGER_SET,
    NOTHING_TO_FOLD,
    NOTHING_TO_SCALE,
    NOTHING_CLIPPED,
    NOTHING_TO_KEEP,
    Attempt,
    RepairRecord,
    failing,
    outcome,
)

METHODS: dict[Repair, tuple[str, ...]] = {
    # what stores nothing first (folds), then a scale vector per input (bytes), then fp32 weights (megabytes)
    Repair.AUTO: ("ranges", "smooth", "scales", "mixed"),
    Repair.SMOOTH: ("smooth", "scales"),
    Repair.MIXED: ("mixed",),
    Repair.RANGES: ("ranges",),
    Repair.OFF: (),
}


@dataclass
class Repaired:
    """What the repairs leave: the artifacts to keep (the last attempt's), their check, and the record of what
    was tried."""

    lowered: list[Lowered]
    checked: Checked
    record: RepairRecord
    model: LoadedModel  # a later method starts from what an earlier one changed in the model
    tried: dict[Backend, set[tuple[str, ...]]] = field(default_factory=dict)  # the fp32 sets each was lowered with
    reference: list | None = None  # the fp32 hidden state after each depth, for the repaired artifacts' error
    widen: dict[Backend, tuple[str, ...]] = field(default_factory=dict)  # activations the ranges repair widened
    measured: dict[Backend, Cost] = field(default_factory=dict)  # each artifact's cost now (a later "before")


def steps(mode: Repair) -> list[tuple[str, float]]:
    """(method, margin in dB) in the order ``mode`` tries them: mixed precision once per margin."""
    return [(m, margin) for m in METHODS[mode] for margin in (MIXED_MARGINS_DB if m == "mixed" else (0.0,))]


def repair(run: ExportRun, lowered: list[Lowered], checked: Checked, npu: list[dict] | None = None) -> Repaired:
    """Each repair of ``run.options.repair`` in order of cost, while the gate refuses an artifact; what they
    leave (``Repaired``). ``npu``: the statically quantized files' diagnoses (``diagnose_npu``)."""
    state = Repaired(lowered, checked, RepairRecord(run.options.repair.value), run.loaded)
    for method, margin in steps(run.options.repair):
        refused = failing(state.checked.results)
        static = [r for r in refused if backends.get_info(r.backend).calibrated]
        if not refused:
            break
        if method == "ranges" and not static or method == "mixed" and len(static) == len(refused):
            continue  # ranges: only a statically quantized file's; mixed: only the CPU files' dynamic int8
        run.progress.say(f"repair: {', '.join(r.file for r in refused)} failed the gate; trying {method}")
        if method == "ranges":
            attempt, widen = _ranges(static, npu or [])
            state.record.attempts.append(attempt)
            if widen:
                state.widen.update(widen)
                attempt.outcomes = _lower_again(run, state, {b: () for b in widen})
            continue
        if method in ("smooth", "scales"):
            if method == "smooth":
                with run.progress.step("repair (smooth): smoothing scales folded into the weights"):
                    model, folds = smoothed(state.model, run.sample)
            else:
                granularity = _scales_granularity(refused)
                with run.progress.step("repair (scales): each Linear with an outlier channel scales its own input"):
                    model, folds = input_scaled(state.model, run.sample, granularity)
            nothing = NOTHING_TO_FOLD if method == "smooth" else NOTHING_TO_SCALE
            attempt = Attempt(method, fold_changes(folds), nothing if not folds else "")
            # every artifact is lowered again: an export's artifacts come from one model
            redo: dict[Backend, tuple[str, ...]] = {r.backend: () for r in state.checked.results} if folds else {}
        else:
            if any(a.note == NOTHING_TO_KEEP for a in state.record.attempts):
                break  # int8 is not what the gate refuses: a larger margin cannot help
            model = state.model
            attempt, redo = _mixed(run, model, [r for r in refused if r not in static], margin)
            if redo and all(keep in state.tried.get(b, set()) for b, keep in redo.items()):
                attempt.note, redo = NO_LARGER_SET, {}
        state.record.attempts.append(attempt)
        if redo:
            state.model = model
            attempt.outcomes = _lower_again(run, state, redo)
    run.progress.say(f"repair: {state.record.headline()}")
    return state


def _lower_again(run: ExportRun, state: Repaired, redo: dict[Backend, tuple[str, ...]]) -> list:
    """Lower the artifacts of ``redo`` (each with the Linears it keeps fp32) from ``state.model``, check every
    artifact again, and return each changed artifact's outcome (SQNR, error by depth, cost before and after)."""
    for b, keep in redo.items():
        state.tried.setdefault(b, set()).add(keep)
    if run.options.measure_memory:
        for b in redo:
            state.measured.setdefault(b, _cost_of(run, b))
    before_cost = {b: state.measured[b] for b in redo if b in state.measured}
    wrapper, replaced = export_module(state.model, run.options)
    # as the export lowered them: a format that quantizes the word table itself (the NPU file) gets the float table
    plain = plain_module(state.model) if replaced else wrapper
    state.lowered = [
        lowering.lower(
            run,
            x.backend,
            wrapper if backends.get_info(x.backend).int8_table else plain,
            redo[x.backend],
            state.widen.get(x.backend, ()),
        )
        if x.backend in redo
        else x
        for x in state.lowered
    ]
    del wrapper, plain
    before = {r.backend: r for r in state.checked.results}
    state.checked = check_lowered(run, state.lowered)
    if state.reference is None:
        state.reference = reference_states(run.loaded, run.sample)
    for b in before_cost:
        state.measured[b] = _cost_of(run, b)
    return [
        outcome(
            before[r.backend],
            r,
            runtime_depth_sqnr(r.backend, run.staging / r.file, run.sample, state.reference),
            (before_cost[r.backend], state.measured[r.backend]) if r.backend in before_cost else None,
        )
        for r in state.checked.results
        if r.backend in redo
    ]


def _ranges(static: list[ArtifactResult], npu: list[dict]) -> tuple[Attempt, dict[Backend, tuple[str, ...]]]:
    """The ranges attempt: each refused statically quantized file's activations its diagnosis found clipped, to
    be calibrated again with its format's wider headroom (``Diagnosing.ranges_headroom``)."""
    clipped = {d["file"]: tuple(d.get("clipped", ())) for d in npu}
    formats = {r.backend: backends.diagnosing(r.backend) for r in static}
    widen = {r.backend: clipped[r.file] for r in static if clipped.get(r.file) and formats[r.backend] is not None}
    changes = [
        {
            "artifacts": [r.file],
            "tensors": list(widen[r.backend]),
            "headroom": formats[r.backend].ranges_headroom(),  # type: ignore[union-attr]  # in widen: not None
        }
        for r in static
        if r.backend in widen
    ]
    return Attempt("ranges", changes, "" if widen else NOTHING_CLIPPED), widen


def _cost_of(run: ExportRun, backend: Backend) -> Cost:
    return cost(backend, run.staging, int(run.loaded.config.vocab_size), run.max_len)


def _scales_granularity(refused: list) -> str:
    """The activation granularity input scales are chosen for: the refused dynamically quantized formats' (each asked
    its own), else the calibrated ones'; per tensor where refused formats differ (scales that help a whole tensor's
    one scale help its rows too)."""
    infos = [backends.get_info(r.backend) for r in refused]
    chosen = {i.granularity for i in infos if not i.calibrated} or {i.granularity for i in infos}
    return "tensor" if "tensor" in chosen else chosen.pop()


def _mixed(
    run: ExportRun, model: LoadedModel, refused: list[ArtifactResult], margin_db: float
) -> tuple[Attempt, dict[Backend, tuple[str, ...]]]:
    """The mixed-precision attempt: per runtime granularity of the refused artifacts, the Linears kept fp32
    (emulated), and the weights each refused artifact is lowered again with."""
    granularity = {r.backend: backends.get_info(r.backend).granularity for r in refused}
    choices = {}
    for g in sorted(set(granularity.values())):
        with run.progress.step(
            f"repair (mixed): the fewest weights to keep fp32 ({g} activations, emulated, {margin_db:g} dB margin)"
        ):
            choices[g] = fp32_fallback(model, run.sample, g, run.thresholds, run.options.quantize_embeddings, margin_db)
    changes = [
        {**c.to_json(), "artifacts": [r.file for r in refused if granularity[r.backend] == g]}
        for g, c in choices.items()
    ]
    if not any(c.weights for c in choices.values()):  # int8 is not what the gate refuses: nothing to keep
        return Attempt("mixed", changes, NOTHING_TO_KEEP), {}
    return Attempt("mixed", changes), {r.backend: choices[granularity[r.backend]].weights for r in refused}
