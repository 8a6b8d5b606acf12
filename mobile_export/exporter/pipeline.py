"""The export pipeline: load -> export and quantize per format -> runtime check -> size -> write.

Each stage is a plain function; ``export`` composes them and owns the output folder."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .. import backends
from ..assets.labels import labels, labels_file
from ..assets.tokenizer import write_tokenizer_assets
from ..backends.base import ArtifactStats, ExportStats
from ..core import interrupts
from ..core.config import Backend, ExportOptions, Quant, Repair, int4_group_size_for, resolve_max_len
from ..core.errors import ArtifactLoadError, BudgetError, ExportFailedError, MobileExportError, ParityError, first_line
from ..core.files import FAILED_REPORT, LABELS, MANIFEST, REPORT_HTML, REPORT_JSON, REPORT_MD, TOKENIZER_DIR
from ..core.fsutil import disk_error, make_staging, prepare_destination, publish, remove_staging, write_json
from ..core.progress import Progress, Silent
from ..core.signature import INPUT_NAMES
from ..core.tasks import get_task
from ..measure.bench import measure
from ..measure.budgets import Budget, resolve_budget
from ..measure.size import SizeEntry
from ..model.heads import parse_head, with_head
from ..model.loading import LoadedModel, load_checkpoint
from ..model.reference import Example, ExportWrapper, example_inputs, tokenize
from ..model.summary import model_summary
from ..parity.artifact import ArtifactResult
from ..parity.checker import ArtifactCheck, ParitySource, Tally
from ..parity.data import ParityData, read_parity_file
from ..parity.diagnosis import (
    GRANULARITY,
    SAMPLE_LENGTH,
    SAMPLE_TEXTS,
    Diagnosis,
    diagnose,
    reference_states,
    runtime_depth_sqnr,
)
from ..reports import write_reports
from ..reports.assembly import build_report
from ..reports.records import kept_fp32
from ..reports.size import size_entry
from .check import check_artifacts
from .manifest import build_manifest
from .repair import (
    METHODS,
    MIXED_MARGINS_DB,
    NO_LARGER_SET,
    NOTHING_TO_FOLD,
    NOTHING_TO_KEEP,
    Attempt,
    Cost,
    RepairRecord,
    failing,
    fold_changes,
    fp32_fallback,
    outcome,
    smoothed,
)

# Every name an export may write: with --overwrite, the ones this export does not write are removed.
OUTPUT_NAMES = tuple(n for info in backends.BACKENDS.values() for n in info.output_names) + (
    TOKENIZER_DIR,
    LABELS,
    REPORT_JSON,
    REPORT_MD,
    REPORT_HTML,
    MANIFEST,
)


@dataclass
class ExportResult:
    """What ``export`` wrote (or, when ``passed`` is False, what it refused to write)."""

    out: Path
    report: dict  # ExportReport.to_json(): what report.json holds
    artifacts: list[ArtifactResult]

    @property
    def passed(self) -> bool:
        return all(a.parity.passed for a in self.artifacts)


def dynamic_shapes(backend: Backend, max_len: int) -> tuple[tuple[int, int], dict]:
    from torch.export import Dim

    seq = Dim("seq", min=2, max=max_len)
    if backends.get_info(backend).dynamic_batch:
        batch = Dim("batch", min=1, max=1024)
        dims = {0: batch, 1: seq}
        shape = (2, min(8, max_len))
    else:
        dims = {1: seq}
        shape = (1, min(8, max_len))
    return shape, {name: dims for name in INPUT_NAMES}


def export(
    source: str | os.PathLike,
    out: str | os.PathLike,
    options: ExportOptions | None = None,
    progress: Progress | None = None,
) -> ExportResult:
    """Export an ALBERT checkpoint to verified mobile artifacts.

    Args:
        source: local Hugging Face folder or hub id.
        out: destination folder; must be absent or empty unless ``options.overwrite``.
        options: backends, quantization, task, max length, thresholds.
        progress: where progress lines go; silent by default.

    Returns:
        The report and per-artifact results. Artifacts are in ``out`` only if every parity check passed.

    Raises:
        BadInputError (and subclasses): bad checkpoint, options or destination (exit 2).
        ParityError: an artifact failed its parity thresholds (exit 3); ``report.failed.json`` is written.
        ExportFailedError: a converter failed (exit 1).
    """
    options = options or ExportOptions()
    progress = progress or Silent()
    out = Path(out)
    budget = _check_request(options, out)
    loaded, data, max_len = _load(source, options, progress)
    staging = make_staging(out)
    try:
        wrapper, replaced = export_module(loaded, options)
        exported = [
            export_one(backend, wrapper, options, loaded, max_len, staging, progress) for backend in options.backends
        ]
        del wrapper
        results, run, parity_data = _check_exported(exported, loaded, options, data, max_len, progress)
        sample = _sample(loaded, data, max_len) if options.quant is Quant.INT8 else []
        diagnosis = _diagnose(loaded, options, sample, progress, [(b, path) for b, path, _, _ in exported])
        repaired = None
        if diagnosis is not None and options.repair is not Repair.OFF and failing(results):
            exported, results, run, parity_data, repaired = _repair(
                exported, results, run, parity_data, loaded, options, data, max_len, staging, progress, sample
            )
        written = [f.name for r in results for f in backends.artifact_files(staging / r.file)]
        written += _write_assets(loaded, staging, max_len, progress)
        repair_json = repaired.to_json() if repaired is not None else None
        kept = {r.file: kept_fp32(repair_json, r.file) for r in results}
        sizes = _sizes(results, loaded, options, staging, bool(replaced), max_len, budget, progress, kept)
        report_record = build_report(
            "mobile-export",
            loaded,
            run,
            parity_data,
            results,
            _options_record(options, loaded, max_len, replaced),
            [{"size": e} for e in sizes],
        )
        over = [e for e in sizes if e.get("budgets") and not e["budgets"][0]["within"]]
        if budget:
            report_record.budget, report_record.within_budget = budget.as_dict(), not over
        report_record.diagnosis = diagnosis.to_json() if diagnosis is not None else None
        report_record.repair = repair_json
        report_record.timings_seconds = {k: round(v, 2) for k, v in progress.timings.items()}
        report = report_record.to_json()
        result = ExportResult(out=out, report=report, artifacts=results)
        _refuse_failures(result, over, budget)
        written += _write_reports(report, staging, loaded, run, results, written, progress)
        _publish(staging, out, written, options.overwrite, progress)
        return result
    except OSError as exc:
        disk = disk_error(exc, out)
        if disk is None:
            raise
        raise disk from exc
    finally:
        remove_staging(staging)


def _check_request(options: ExportOptions, out: Path) -> Budget | None:
    """Refuse what cannot work before loading a 50 MB checkpoint: capabilities, task, budget, destination."""
    for b in options.backends:
        backends.check_supported(b, options.quant)
    if options.task:
        get_task(options.task)
    budget = resolve_budget(options.budget) if options.budget else None
    prepare_destination(out, options.overwrite)
    return budget


def _load(
    source: str | os.PathLike, options: ExportOptions, progress: Progress
) -> tuple[LoadedModel, ParityData | None, int]:
    """The checkpoint with its head, the user's parity data (if any) and the export's max length."""
    with progress.step("loading checkpoint"):
        loaded = load_checkpoint(source, options.task)
        loaded = with_head(loaded, parse_head(loaded.task.name, options.head, options.pooling, options.normalize))
    data = read_parity_file(options.data, labels(loaded.config)) if options.data else None
    for note in loaded.notes:
        progress.say(f"note: {note}")
    return loaded, data, resolve_max_len(int(loaded.config.max_position_embeddings), options.max_seq_len)


def _check_exported(
    exported: list[tuple[Backend, Path, ExportStats, float]],
    loaded: LoadedModel,
    options: ExportOptions,
    data: ParityData | None,
    max_len: int,
    progress: Progress,
) -> tuple[list[ArtifactResult], Tally, dict]:
    """Each fresh artifact in its real runtime against the fp32 reference, with its export facts attached."""
    checks = [
        ArtifactCheck(path.name, backend, path, options.quant, options.thresholds_for(loaded.task.kind.value))
        for backend, path, _, _ in exported
    ]
    try:
        results, run, parity_data = check_artifacts(
            loaded, ParitySource.build(loaded.tokenizer, data, max_len), checks, max_len, progress
        )
    except ArtifactLoadError as exc:  # we just wrote them: our failure, not the user's
        raise ExportFailedError(f"{exc}; rerun with --debug and report it") from exc
    for r, (_, _, stats, seconds) in zip(results, exported):
        r.stats = ArtifactStats(**stats, **r.stats)
        r.export_seconds = round(seconds, 2)
    return results, run, parity_data


def _sample(loaded: LoadedModel, data: ParityData | None, max_len: int) -> list[Example]:
    """The parity texts the diagnosis and the repairs look at: the first non-empty ones, at most
    ``SAMPLE_LENGTH`` tokens each (one padded batch of them must stay small beside a 30,000-word head)."""
    texts = []
    for text, _ in ParitySource.build(loaded.tokenizer, data, max_len).items():
        if text.strip():
            texts.append(text)
            if len(texts) == SAMPLE_TEXTS:
                break
    return tokenize(loaded.tokenizer, texts, min(max_len, SAMPLE_LENGTH))


def _diagnose(
    loaded: LoadedModel,
    options: ExportOptions,
    sample: list[Example],
    progress: Progress,
    artifacts: list[tuple[Backend, Path]],
) -> Diagnosis | None:
    """Where int8's error comes from (an int8 export only), emulated for each exported runtime, and the error
    by depth of each artifact in its real runtime."""
    if options.quant is not Quant.INT8 or not sample:
        return None
    granularities = sorted({GRANULARITY[b] for b in options.backends})
    with progress.step(
        f"int8 diagnosis on {len(sample)} texts (emulated: {', '.join(granularities)}; each artifact by depth)"
    ):
        return diagnose(loaded, sample, granularities, options.quantize_embeddings, artifacts)


def _repair(
    exported: list[tuple[Backend, Path, ExportStats, float]],
    results: list[ArtifactResult],
    run: Tally,
    parity_data: dict,
    loaded: LoadedModel,
    options: ExportOptions,
    data: ParityData | None,
    max_len: int,
    staging: Path,
    progress: Progress,
    sample: list[Example],
) -> tuple[list[tuple[Backend, Path, ExportStats, float]], list[ArtifactResult], Tally, dict, RepairRecord]:
    """Each repair of ``options.repair`` in order of cost, while the gate refuses an artifact: the artifacts to
    keep (the last attempt's), their check, and the record of what was tried."""
    record = RepairRecord(options.repair.value)
    current = loaded  # a later method starts from what an earlier one changed in the model
    tried: dict[Backend, set[tuple[str, ...]]] = {}  # the fp32 sets each artifact was exported with
    reference: list | None = None  # the fp32 hidden state after each depth, for the repaired artifacts'
    measured: dict[Backend, Cost] = {}  # each artifact's cost as it is now (a later attempt's "before")
    steps = [(m, margin) for m in METHODS[options.repair] for margin in (MIXED_MARGINS_DB if m == "mixed" else (0.0,))]
    for method, margin in steps:
        if not failing(results):
            break
        progress.say(f"repair: {', '.join(r.file for r in failing(results))} failed the gate; trying {method}")
        if method == "smooth":
            with progress.step("repair (smooth): smoothing scales folded into the weights"):
                fixed, folds = smoothed(current, sample)
            attempt = Attempt(method, fold_changes(folds), NOTHING_TO_FOLD if not folds else "")
            # every artifact is re-exported: an export's artifacts come from one model
            redo: dict[Backend, tuple[str, ...]] = {r.backend: () for r in results} if folds else {}
        else:
            fixed = current
            if any(a.note == NOTHING_TO_KEEP for a in record.attempts):
                break  # int8 is not what the gate refuses: a larger margin cannot help
            attempt, redo = _mixed(current, failing(results), options, sample, progress, margin)
            if redo and all(keep in tried.get(b, set()) for b, keep in redo.items()):
                attempt.note, redo = NO_LARGER_SET, {}
        record.attempts.append(attempt)
        if not redo:
            continue
        for b, keep in redo.items():
            tried.setdefault(b, set()).add(keep)
        current = fixed
        if options.measure_memory:
            for b in redo:
                measured.setdefault(b, _cost(b, staging, loaded, max_len))
        before_cost = {b: measured[b] for b in redo if b in measured}
        wrapper, _ = export_module(current, options)
        exported = [
            export_one(b, wrapper, options, current, max_len, staging, progress, keep=redo[b]) if b in redo else e
            for e in exported
            for b in [e[0]]
        ]
        del wrapper
        before = {r.backend: r for r in results}
        results, run, parity_data = _check_exported(exported, loaded, options, data, max_len, progress)
        if reference is None:
            reference = reference_states(loaded, sample)
        for b in before_cost:
            measured[b] = _cost(b, staging, loaded, max_len)
        attempt.outcomes = [
            outcome(
                before[r.backend],
                r,
                runtime_depth_sqnr(r.backend, staging / r.file, sample, reference),
                (before_cost[r.backend], measured[r.backend]) if r.backend in before_cost else None,
            )
            for r in results
            if r.backend in redo
        ]
    progress.say(f"repair: {record.headline()}")
    return exported, results, run, parity_data, record


COST_TOKENS = 128  # the length a repair's latency is reported at (the export's max length if shorter)
COST_THREADS = 2


def _cost(backend: Backend, staging: Path, loaded: LoadedModel, max_len: int) -> Cost:
    """The artifact of ``backend`` in ``staging`` as ``bench`` measures it: a fresh process, batch-1 calls at
    ``COST_TOKENS`` tokens on ``COST_THREADS`` threads, the model's RAM after them."""
    tokens = min(COST_TOKENS, max_len)
    path = staging / backends.get_info(backend).file_name
    got = measure(backend.value, str(path), COST_THREADS, [tokens], int(loaded.config.vocab_size), runs=10, warmup=3)
    return Cost(tokens, float(got["latency_ms"][str(tokens)]["median"]), int(got["model_rss_bytes"]))


def _mixed(
    current: LoadedModel,
    refused: list[ArtifactResult],
    options: ExportOptions,
    sample: list[Example],
    progress: Progress,
    margin_db: float,
) -> tuple[Attempt, dict[Backend, tuple[str, ...]]]:
    """The mixed-precision attempt: per runtime granularity of the refused artifacts, the Linears kept fp32
    (emulated), and the weights each refused artifact is re-exported with."""
    thresholds = options.thresholds_for(current.task.kind.value)
    choices = {}
    for g in sorted({GRANULARITY[r.backend] for r in refused}):
        with progress.step(
            f"repair (mixed): the fewest weights to keep fp32 ({g} activations, emulated, {margin_db:g} dB margin)"
        ):
            choices[g] = fp32_fallback(current, sample, g, thresholds, options.quantize_embeddings, margin_db)
    changes = [
        {**c.to_json(), "artifacts": [r.file for r in refused if GRANULARITY[r.backend] == g]}
        for g, c in choices.items()
    ]
    if not any(c.weights for c in choices.values()):  # int8 is not what the gate refuses: nothing to keep
        return Attempt("mixed", changes, NOTHING_TO_KEEP), {}
    redo = {r.backend: choices[GRANULARITY[r.backend]].weights for r in refused}
    return Attempt("mixed", changes), redo


def _write_assets(loaded: LoadedModel, staging: Path, max_len: int, progress: Progress) -> list[str]:
    """The tokenizer assets and (for a classifier) labels.json an app needs; returns the names written."""
    with progress.step("tokenizer assets"):
        write_tokenizer_assets(loaded.tokenizer, loaded.tokenizer_kind, loaded.folder, staging / TOKENIZER_DIR, max_len)
    written = [TOKENIZER_DIR]
    if loaded.task.has_labels:
        write_json(staging / LABELS, labels_file(loaded.config))
        written.append(LABELS)
    return written


def _sizes(
    results: list[ArtifactResult],
    loaded: LoadedModel,
    options: ExportOptions,
    staging: Path,
    int8_embeddings: bool,
    max_len: int,
    budget: Budget | None,
    progress: Progress,
    kept: dict[str, list[str]],
) -> list[SizeEntry]:
    """Each artifact's size section: bytes by part, sharing, memory (unless turned off), budget verdict
    (``kept``: per file, the Linears a repair kept fp32)."""
    summary = model_summary(loaded)
    with progress.step("size breakdown" + (" and memory" if options.measure_memory else "")):
        try:
            return [
                size_entry(
                    staging / r.file,
                    summary,
                    options.quant,
                    int8_embeddings,
                    max_len,
                    budget,
                    options.measure_memory,
                    kept[r.file],
                )
                for r in results
            ]
        except ArtifactLoadError as exc:  # we just wrote and checked them: our failure, not the user's
            raise ExportFailedError(str(exc)) from exc


def _options_record(options: ExportOptions, loaded: LoadedModel, max_len: int, replaced: list[str]) -> dict:
    """The options report.json records."""
    int4 = (
        {
            "int4_group_size": int4_group_size_for(int(loaded.config.hidden_size), options.int4_group_size),
            "int4_kernel": options.int4_kernel,
        }
        if options.quant is Quant.INT4
        else {}
    )
    return {
        "backends": [b.value for b in options.backends],
        "quant": options.quant.value,
        "task": loaded.task.name,
        "max_seq_len": max_len,
        "int8_embeddings": replaced,
        **int4,
    }


def _refuse_failures(result: ExportResult, over: list[SizeEntry], budget: Budget | None) -> None:
    """Over budget or failed parity: report.failed.json beside the destination, nothing else written."""
    out, report = result.out, result.report
    if result.passed and over and budget is not None:
        write_json(out / FAILED_REPORT, report)
        what = "compressed size" if budget.compressed else "size"
        detail = "; ".join(
            f"{e['file']} {what} is {e['budgets'][0]['measured_bytes']:,} B, {e['budgets'][0]['over_bytes']:,} B over"
            for e in over
        )
        raise BudgetError(f"over the size budget of {budget.bytes:,} B ({budget.name}; {detail}); nothing was written")
    if not result.passed:
        write_json(out / FAILED_REPORT, report)
        failed = "; ".join(
            f"{r.backend.value}: {', '.join(r.parity.failures)}" for r in result.artifacts if not r.parity.passed
        )
        raise ParityError(f"parity check failed ({failed}); no artifact was written, details in {out / FAILED_REPORT}")


def _write_reports(
    report: dict,
    staging: Path,
    loaded: LoadedModel,
    run: Tally,
    results: list[ArtifactResult],
    written: list[str],
    progress: Progress,
) -> list[str]:
    """report.json, report.md, report.html and (last, listing every file) manifest.json; returns their names."""
    write_json(staging / REPORT_JSON, report)
    names = [REPORT_JSON]
    with progress.step(f"human reports ({REPORT_MD}, {REPORT_HTML})"):
        names += write_reports(report, staging)
    write_json(staging / MANIFEST, build_manifest(staging, [*written, *names], loaded, run, results))
    return [*names, MANIFEST]


def _publish(staging: Path, out: Path, written: list[str], overwrite: bool, progress: Progress) -> None:
    """Move the staged files into ``out`` (an earlier export's files this one does not write removed)."""
    if overwrite:
        for stale in OUTPUT_NAMES:
            if stale not in written and (out / stale).is_file():
                (out / stale).unlink()
    failed_report = out / FAILED_REPORT
    if failed_report.exists():
        failed_report.unlink()
    publish(staging, out, written)
    progress.say(f"wrote {', '.join(written)} to {out}")


def export_module(loaded: LoadedModel, options: ExportOptions) -> tuple[torch.nn.Module, list[str]]:
    """The module to export: the model itself, or (int8 with embeddings) a copy with an int8 word table."""
    if options.quant is not Quant.INT8 or not options.quantize_embeddings:
        return ExportWrapper(loaded.model, loaded.task).eval(), []
    import copy

    from quantize.embedding import quantize_embeddings

    model = copy.deepcopy(loaded.model)
    replaced = quantize_embeddings(model)
    return ExportWrapper(model, loaded.task).eval(), replaced


def export_one(
    backend: Backend,
    wrapper: torch.nn.Module,
    options: ExportOptions,
    loaded: LoadedModel,
    max_len: int,
    staging: Path,
    progress: Progress,
    keep: tuple[str, ...] = (),
) -> tuple[Backend, Path, ExportStats, float]:
    """Export one artifact into ``staging``: (backend, path, export stats, seconds); ``keep``: int8 Linear
    modules left fp32 (a repair's mixed precision), by name in the model."""
    quant = options.quant
    info = backends.get_info(backend)
    module = backends.load(backend)
    shape, dyn = dynamic_shapes(backend, max_len)
    example = example_inputs(shape[0], shape[1], int(loaded.config.vocab_size))
    dest = staging / info.file_name
    t0 = time.monotonic()
    try:
        with torch.no_grad():
            int4: dict[str, Any] = (
                {
                    "group_size": int4_group_size_for(int(loaded.config.hidden_size), options.int4_group_size),
                    "int4_kernel": options.int4_kernel,
                }
                if quant is Quant.INT4
                else {}
            )
            stats = module.export(
                wrapper, example, dyn, quant, dest, progress, **int4, entry=options.pte_entry, keep=keep
            )
    except MobileExportError:
        raise
    except Exception as exc:
        if interrupts.wrapped(exc) or interrupts.requested():
            raise KeyboardInterrupt from exc
        disk = disk_error(exc, staging.parent)
        if disk is not None:
            raise disk from exc
        msg = first_line(exc)
        raise ExportFailedError(
            f"{backend.value} export failed: {type(exc).__name__}: {msg}; rerun with --debug for the traceback"
        ) from exc
    return backend, dest, stats, time.monotonic() - t0
