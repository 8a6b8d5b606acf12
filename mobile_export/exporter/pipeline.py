"""The export, as a story: start (refuse what cannot work, load the checkpoint) -> the exact folds that cost no byte
-> lower each format -> check
each artifact in its real runtime -> diagnose int8 -> repair what the gate refused -> the app's assets (bundled in each
artifact too) and each artifact's size -> the report -> refuse, or publish every file at once.

Each stage is a function of the run (``ExportRun``: checkpoint, options, staging folder, progress, what was
computed once) and of the named records the stages before it returned (``Lowered``, ``Checked``,
``Repaired``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import backends
from ..core.choices import Quant, Repair
from ..backends import Backend
from ..core.fsutil import disk_error, remove_empty, remove_staging
from ..core.progress import Progress, Silent
from ..parity.artifact import ArtifactResult
from ..parity.diagnosis import Diagnosis, diagnose
from ..reports.assembly import build_report
from ..reports.records import kept_fp32
from .check import check_lowered
from .context import ExportRun
from .folding import fold_free
from .bundling import bundle_assets
from .precompiled import precompile_all
from . import lowering
from .lowering import Lowered, export_module, plain_module
from .options import ExportOptions
from .outputs import (
    measure_sizes,
    options_record,
    over_budget,
    publish_outputs,
    refuse_failures,
    write_assets,
    write_report_files,
)
from .repair import Repaired, failing, repair


@dataclass
class ExportResult:
    """What ``export`` wrote (or, when ``passed`` is False, what it refused to write)."""

    out: Path
    report: dict  # ReportRecord.to_json(): what report.json holds
    artifacts: list[ArtifactResult]

    @property
    def passed(self) -> bool:
        return all(a.parity.passed for a in self.artifacts)


def export(
    source: str | os.PathLike,
    out: str | os.PathLike,
    options: ExportOptions | None = None,
    progress: Progress | None = None,
) -> ExportResult:
    """Export a checkpoint to verified mobile artifacts.

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
    out = Path(out)
    run = ExportRun.start(source, out, options or ExportOptions(), progress or Silent())
    try:
        folds = fold_free(run)
        lowered, replaced = lower_all(run)
        checked = check_lowered(run, lowered)
        diagnosis = diagnose_int8(run, lowered)
        npu_diagnosis = diagnose_npu(run, lowered)
        repaired: Repaired | None = None
        diagnosed = diagnosis is not None or bool(npu_diagnosis)
        if diagnosed and run.options.repair is not Repair.OFF and failing(checked.results):
            repaired = repair(run, lowered, checked, npu_diagnosis)
            lowered, checked = repaired.lowered, repaired.checked
        written = [f.name for x in lowered for f in backends.artifact_files(x.path)] + write_assets(run)
        repair_json = repaired.record.to_json() if repaired is not None else None
        kept = {r.file: kept_fp32(repair_json, r.file) for r in checked.results}
        recorded = options_record(run, replaced)
        if run.options.bundle:
            bundle_assets(run, checked, recorded, kept)
        written += precompile_all(run, checked)  # from the bundled file: each carries the assets too
        sizes = measure_sizes(run, checked, bool(replaced), kept)
        report = build_report(
            "mobile-export",
            run.loaded,
            checked,
            recorded,
            sizes=sizes,
            budget=run.budget,
            within_budget=not over_budget(sizes) if run.budget else None,
            timings=run.progress.timings,
            diagnosis=diagnosis_json(diagnosis, npu_diagnosis),
            repair=repair_json,
            folds=folds.to_json() if folds is not None else None,
        )
        refuse_failures(run, report, sizes)
        written += write_report_files(run, report, checked, written)
        publish_outputs(run, written)
        return ExportResult(out=out, report=report.to_json(), artifacts=checked.results)
    except OSError as exc:
        disk = disk_error(exc, out)
        if disk is None:
            raise
        raise disk from exc
    finally:
        remove_staging(run.staging)
        remove_empty(run.made)  # a failed export leaves no folder it made (report.failed.json keeps it)


def lower_all(run: ExportRun) -> tuple[list[Lowered], list[str]]:
    """Every format of the export lowered from one module (the model, or a copy with its word table int8): the
    artifacts, and the tables stored int8. A format converted from another one of the export (the .ort from the
    .onnx) is converted from that artifact, not lowered again."""
    wrapper, replaced = export_module(run.loaded, run.options)
    chosen = run.options.backends
    done: dict[Backend, Lowered] = {}
    for backend in sorted(chosen, key=lambda b: backends.get_info(b).converted_from in chosen):
        info = backends.get_info(backend)
        source = done.get(info.converted_from) if info.converted_from is not None else None
        if source is not None and run.plan(backend) == run.plan(source.backend):
            done[backend] = lowering.convert(run, backend, source)
        elif replaced and not info.int8_table:
            done[backend] = lowering.lower(run, backend, plain_module(run.loaded))
        else:
            done[backend] = lowering.lower(run, backend, wrapper)
    return [done[b] for b in chosen], replaced


def diagnose_int8(run: ExportRun, lowered: list[Lowered]) -> Diagnosis | None:
    """Where the CPU files' int8 error comes from (an int8 export only), emulated for each of their runtimes, and
    the error by depth of each in its real runtime. The NPU file's static quantization is not what this emulates
    (``diagnose_npu``)."""
    dynamic = [x for x in lowered if not backends.get_info(x.backend).calibrated]
    if run.options.quant is not Quant.INT8 or not run.sample or not dynamic:
        return None
    granularities = sorted({backends.get_info(x.backend).granularity for x in dynamic})
    sample = run.sample
    with run.progress.step(
        f"int8 diagnosis on {len(sample)} texts (emulated: {', '.join(granularities)}; each artifact by depth)"
    ):
        artifacts = [(x.backend, x.path) for x in dynamic]
        return diagnose(run.loaded, sample, granularities, run.options.quantize_embeddings, artifacts)


def diagnosis_json(diagnosis: Diagnosis | None, npu: list[dict]) -> dict | None:
    """report.json's ``diagnosis``: the CPU files' int8 diagnosis, and the NPU files' per tensor under ``npu``."""
    if diagnosis is None and not npu:
        return None
    return {**(diagnosis.to_json() if diagnosis is not None else {}), **({"npu": npu} if npu else {})}


def diagnose_npu(run: ExportRun, lowered: list[Lowered]) -> list[dict]:
    """Where each file of a format with its own diagnosis (``Capability.DIAGNOSIS``: the statically quantized NPU
    file) loses accuracy, per tensor and by layer."""
    found = []
    for x in lowered:
        fmt = backends.diagnosing(x.backend)
        if fmt is None or not run.sample:
            continue
        with run.progress.step(f"{x.path.name}: diagnosis per tensor on {len(run.sample)} texts"):
            done = fmt.diagnose(x.path, run.sample, run.loaded.family.signature.inputs)
        if done is not None:
            found.append(done)
    return found
