"""What an export writes beside its artifacts, and how it lands: the app's assets, each artifact's size section,
the report and the manifest in the staging folder, then either ``report.failed.json`` and a refusal, or every
staged file renamed into ``--out``."""

from __future__ import annotations

from dataclasses import asdict

from .. import backends
from ..assets.labels import labels_file
from ..assets.manifest import Manifest, file_entries
from ..assets.tokenizer import write_tokenizer_assets
from ..core.choices import Quant
from ..core.errors import ArtifactLoadError, BudgetError, ExportFailedError, ParityError
from ..core.files import FAILED_REPORT, LABELS, MANIFEST, REPORT_HTML, REPORT_JSON, REPORT_MD, TOKENIZER_DIR
from ..core.fsutil import publish, write_json
from ..measure.size import SizeEntry, precompiled_sizes, size_entry
from ..model.summary import model_summary
from ..parity.artifact import ArtifactResult
from ..parity.checker import Checked
from ..reports import write_reports
from ..reports.records import ReportRecord
from .context import ExportRun

# Every name an export may write: with --overwrite, the ones this export does not write are removed.
OUTPUT_NAMES = tuple(n for info in backends.BACKENDS.values() for n in info.output_names) + (
    TOKENIZER_DIR,
    LABELS,
    REPORT_JSON,
    REPORT_MD,
    REPORT_HTML,
    MANIFEST,
)


def write_assets(run: ExportRun) -> list[str]:
    """The tokenizer assets and (for a classifier) labels.json an app needs; returns the names written."""
    loaded = run.loaded
    with run.progress.step("tokenizer assets"):
        write_tokenizer_assets(
            loaded.tokenizer, loaded.tokenizer_kind, loaded.folder, run.staging / TOKENIZER_DIR, run.max_len
        )
    written = [TOKENIZER_DIR]
    if loaded.task.has_labels:
        write_json(run.staging / LABELS, labels_file(loaded.config))
        written.append(LABELS)
    return written


def measure_sizes(
    run: ExportRun, checked: Checked, int8_embeddings: bool, kept: dict[str, list[str]]
) -> list[SizeEntry]:
    """Each artifact's size section: bytes by part, sharing, memory (unless turned off), budget verdict
    (``kept``: per file, the Linears a repair kept fp32)."""
    summary = model_summary(run.loaded)
    options = run.options
    with run.progress.step("size breakdown" + (" and memory" if options.measure_memory else "")):
        try:
            entries = [
                size_entry(
                    run.staging / r.file,
                    summary,
                    options.quant,
                    int8_embeddings,
                    run.max_len,
                    run.budget,
                    options.measure_memory,
                    kept[r.file],
                )
                for r in checked.results
            ]
            for entry, r in zip(entries, checked.results):
                if r.stats.get("precompiled"):
                    entry["precompiled"] = precompiled_sizes(entry, r.stats["precompiled"])
            return entries
        except ArtifactLoadError as exc:  # we just wrote and checked them: our failure, not the user's
            raise ExportFailedError(str(exc)) from exc


def options_record(run: ExportRun, replaced: list[str]) -> dict:
    """The options report.json records (``replaced``: the tables stored int8)."""
    options = run.options
    int4 = {"int4_group_size": run.int4_group_size} if options.quant is Quant.INT4 else {}
    # each chosen format's own options as it read them (defaults included): {"onnx": {"int4_kernel": "nbits"}}
    own = {b.value: asdict(options.options_for(b)) for b in options.backends}
    return {
        "backends": [b.value for b in options.backends],
        "quant": options.quant.value,
        "task": run.loaded.task.name,
        "max_seq_len": run.max_len,
        "int8_embeddings": replaced,
        "bundle": options.bundle,
        **int4,
        "format_options": {name: values for name, values in own.items() if values},
    }


def over_budget(sizes: list[SizeEntry]) -> list[SizeEntry]:
    """The size sections whose budget verdict is over."""
    return [e for e in sizes if e.get("budgets") and not e["budgets"][0]["within"]]


def refuse_failures(run: ExportRun, report: ReportRecord, sizes: list[SizeEntry]) -> None:
    """Over budget or failed parity: report.failed.json beside the destination, nothing else written."""
    over = over_budget(sizes)
    if report.passed and over and run.budget is not None:
        write_json(run.out / FAILED_REPORT, report.to_json())
        what = "compressed size" if run.budget.compressed else "size"
        detail = "; ".join(
            f"{e['file']} {what} is {e['budgets'][0]['measured_bytes']:,} B, {e['budgets'][0]['over_bytes']:,} B over"
            for e in over
        )
        budget = run.budget
        raise BudgetError(f"over the size budget of {budget.bytes:,} B ({budget.name}; {detail}); nothing was written")
    if not report.passed:
        write_json(run.out / FAILED_REPORT, report.to_json())
        failed = "; ".join(
            f"{a.result.backend.value}: {', '.join(a.parity.failures)}" for a in report.artifacts if not a.parity.passed
        )
        where = run.out / FAILED_REPORT
        raise ParityError(f"parity check failed ({failed}); no artifact was written, details in {where}")


def write_report_files(run: ExportRun, report: ReportRecord, checked: Checked, written: list[str]) -> list[str]:
    """report.json, report.md, report.html and (last, listing every file) manifest.json; returns their names."""
    data = report.to_json()
    write_json(run.staging / REPORT_JSON, data)
    names = [REPORT_JSON]
    with run.progress.step(f"human reports ({REPORT_MD}, {REPORT_HTML})"):
        names += write_reports(data, run.staging)
    manifest_of(run, checked, [*written, *names]).write(run.staging)
    return [*names, MANIFEST]


def manifest_of(run: ExportRun, checked: Checked, names: list[str]) -> Manifest:
    """What an app needs: the files ``names`` with checksums, how to load and call each artifact, golden examples."""
    artifacts = [artifact_entry(r) for r in checked.results]
    task = run.loaded.task
    files = file_entries(run.staging, names)
    return Manifest(task.name, tuple(task.outputs), task.head, tuple(artifacts), files, tuple(checked.tally.golden))


def artifact_entry(r: ArtifactResult) -> dict:
    """How an app loads and calls the artifact of ``r``, and its self-test tolerance (the manifest's entry)."""
    usage = dict(backends.load(r.backend).usage(r.stats))
    tolerance = max(4 * r.parity.max_abs_diff, 1e-4)  # what this export measured, with room for other CPUs
    return {
        "file": r.file,
        "backend": r.backend.value,
        "quant": r.quant.value,
        **usage,
        "self_test_max_abs_diff": float(f"{tolerance:.3g}"),
    }


def publish_outputs(run: ExportRun, written: list[str]) -> None:
    """Move the staged files into ``out`` (an earlier export's files this one does not write removed)."""
    if run.options.overwrite:
        for stale in OUTPUT_NAMES:
            if stale not in written and (run.out / stale).is_file():
                (run.out / stale).unlink()
    failed_report = run.out / FAILED_REPORT
    if failed_report.exists():
        failed_report.unlink()
    publish(run.staging, run.out, written)
    run.progress.say(f"wrote {', '.join(written)} to {run.out}")
