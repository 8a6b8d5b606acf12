"""The export pipeline: load -> reference -> export+quantize per backend -> verify -> write.

Each stage is a plain function; this module composes them and owns the output folder.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from quantize.schemes import scheme_name

from . import backends, interrupts
from .assets import labels, write_tokenizer_assets
from .checking import ArtifactCheck, Checker, ParitySource, Tally, run_local
from .parity import PlotData
from .memory import measure as measure_memory
from .budgets import Budget, budget_verdict, resolve_budget
from .size import breakdown
from .config import (
    DEFAULT_INT4_GROUP_SIZE,
    Backend,
    ExportOptions,
    ParityOptions,
    Quant,
    Thresholds,
    int4_group_size_for,
)
from .data import read_parity_file
from .errors import (ArtifactLoadError, BadInputError, BudgetError, ExportFailedError, MobileExportError, ParityError,
                     first_line)
from .fsutil import disk_error, make_staging, prepare_destination, publish, remove_staging, sha256_file, write_json
from .loading import LoadedModel, load_checkpoint
from .progress import Progress, Silent
from .reports import ExportReport, write_reports
from .reference import ExportWrapper, example_inputs
from .tasks import get_task
from .verify import ParityResult

MANIFEST_SCHEMA = 2
_OUTPUT_NAMES = ("model.pte", "model.onnx", "model.onnx.data", "model.ort", "tokenizer", "labels.json", "report.json", "report.md",
                 "report.html", "manifest.json")


@dataclass
class ArtifactResult:
    """One exported file and how it did."""

    backend: Backend
    quant: Quant
    file: str
    bytes: int
    sha256: str
    export_seconds: float
    parity: ParityResult
    stats: dict = field(default_factory=dict)  # backend-specific export and runtime facts, as JSON
    plot: PlotData | None = None
    isa: list[dict] = field(default_factory=list)  # the same artifact on other instruction sets (emulated)


@dataclass
class ExportResult:
    """What ``export`` wrote (or, when ``passed`` is False, what it refused to write)."""

    out: Path
    report: dict  # ExportReport.to_json(): what report.json holds
    artifacts: list[ArtifactResult]

    @property
    def passed(self) -> bool:
        return all(a.parity.passed for a in self.artifacts)


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("mobile-export", "torch", "executorch", "transformers", "optimum", "onnx", "onnxruntime",
                 "onnxscript", "torchao", "numpy", "sentencepiece", "tokenizers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _max_len(limit: int, requested: int | None) -> int:
    """The longest input artifacts accept: ``requested`` checked against the model's position table."""
    if requested is None:
        return limit
    if requested < 2:
        raise BadInputError(f"--max-seq-len {requested} is too small; it must be >= 2 ([CLS] and [SEP])")
    if requested > limit:
        raise BadInputError(f"--max-seq-len {requested} exceeds the model's max_position_embeddings ({limit}); "
                            f"pass at most {limit}")
    return requested


def _dynamic_shapes(backend: Backend, max_len: int) -> tuple[tuple[int, int], dict]:
    from torch.export import Dim

    seq = Dim("seq", min=2, max=max_len)
    if backends.get_info(backend).dynamic_batch:
        batch = Dim("batch", min=1, max=1024)
        dims = {0: batch, 1: seq}
        shape = (2, min(8, max_len))
    else:
        dims = {1: seq}
        shape = (1, min(8, max_len))
    return shape, {"input_ids": dims, "attention_mask": dims, "token_type_ids": dims}


# The config fields a report records (enough to rebuild the model's shapes, e.g. for `size`).
SUMMARY_CONFIG_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_hidden_groups",
                       "inner_group_num", "num_attention_heads", "intermediate_size", "max_position_embeddings",
                       "type_vocab_size", "hidden_act", "tie_word_embeddings")


def _config_summary(config: dict) -> dict:
    """The config fields a report records, from a config.json dict."""
    summary = {k: config.get(k) for k in SUMMARY_CONFIG_KEYS}
    summary["num_labels"] = config.get("num_labels") or len(config.get("id2label") or {}) or 2
    return summary


def _model_summary(loaded: LoadedModel) -> dict:
    c = loaded.config
    params = sum(p.numel() for p in loaded.model.parameters())  # parameters() yields shared ones once
    return {
        "source": loaded.source,
        "weights_file": loaded.weights_file,
        "model_type": c.model_type,
        "architecture": type(loaded.model).__name__,
        "task": loaded.task.name,
        "outputs": list(loaded.task.outputs),
        "config": _config_summary(c.to_dict()),
        "unique_parameters": int(params),
        "tokenizer": loaded.tokenizer_kind,
        "notes": list(loaded.notes),
    }


def export(source: str | os.PathLike, out: str | os.PathLike, options: ExportOptions | None = None,
           progress: Progress | None = None) -> ExportResult:
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
    for b in options.backends:  # capabilities first: before loading a 50 MB checkpoint
        backends.check_supported(b, options.quant)
    if options.task:
        get_task(options.task)
    budget = resolve_budget(options.budget) if options.budget else None
    prepare_destination(out, options.overwrite)

    with progress.step("loading checkpoint"):
        loaded = load_checkpoint(source, options.task)
    data = read_parity_file(options.data, labels(loaded.config)) if options.data else None
    for note in loaded.notes:
        progress.say(f"note: {note}")
    max_len = _max_len(int(loaded.config.max_position_embeddings), options.max_seq_len)
    staging = make_staging(out)
    try:
        wrapper, replaced = _export_module(loaded, options)
        exported = [_export_one(backend, wrapper, options, loaded, max_len, staging, progress)
                    for backend in options.backends]
        del wrapper
        checks = [ArtifactCheck(path.name, backend, path, options.quant, options.effective_thresholds)
                  for backend, path, _, _ in exported]
        try:
            results, run, parity_data = _check_artifacts(loaded, ParitySource.build(loaded.tokenizer, data, max_len),
                                                         checks, max_len, progress)
        except ArtifactLoadError as exc:  # we just wrote them: our failure, not the user's
            raise ExportFailedError(f"{exc}; rerun with --debug and report it") from exc
        for r, (_, _, stats, seconds) in zip(results, exported):
            r.stats = dict(stats, **r.stats)
            r.export_seconds = round(seconds, 2)
        written = [f.name for r in results for f in backends.artifact_files(staging / r.file)]
        with progress.step("tokenizer assets"):
            written += ["tokenizer"]
            write_tokenizer_assets(loaded.tokenizer, loaded.tokenizer_kind, loaded.folder, staging / "tokenizer",
                                   max_len)
        if loaded.task.has_labels:
            write_json(staging / "labels.json", {"labels": labels(loaded.config)})
            written.append("labels.json")
        summary = _model_summary(loaded)
        with progress.step("size breakdown" + (" and memory" if options.measure_memory else "")):
            try:
                sizes = [_size_entry(staging / r.file, summary, options.quant, bool(replaced), max_len, budget,
                                     options.measure_memory) for r in results]
            except ArtifactLoadError as exc:  # we just wrote and checked them: our failure, not the user's
                raise ExportFailedError(str(exc)) from exc
        typed = _build_report("mobile-export", loaded, run, parity_data, results,
                              {"backends": [b.value for b in options.backends], "quant": options.quant.value,
                               "task": loaded.task.name, "max_seq_len": max_len, "int8_embeddings": replaced,
                               **({"int4_group_size": _int4_group_size(options, loaded),
                                   "int4_kernel": options.int4_kernel} if options.quant is Quant.INT4 else {})},
                              [{"size": e} for e in sizes])
        over = [e for e in sizes if e.get("budgets") and not e["budgets"][0]["within"]]
        if budget:
            typed.budget, typed.within_budget = budget.as_dict(), not over
        typed.timings_seconds = {k: round(v, 2) for k, v in progress.timings.items()}
        report = typed.to_json()
        result = ExportResult(out=out, report=report, artifacts=results)
        if result.passed and over:
            write_json(out / "report.failed.json", report)
            what = "compressed size" if budget.compressed else "size"
            detail = "; ".join(f"{e['file']} {what} is {e['budgets'][0]['measured_bytes']:,} B, "
                               f"{e['budgets'][0]['over_bytes']:,} B over" for e in over)
            raise BudgetError(f"over the size budget of {budget.bytes:,} B ({budget.name}; {detail}); "
                              "nothing was written")
        if not result.passed:
            write_json(out / "report.failed.json", report)
            failed = "; ".join(f"{r.backend.value}: {', '.join(r.parity.failures)}"
                               for r in results if not r.parity.passed)
            raise ParityError(f"parity check failed ({failed}); no artifact was written, "
                              f"details in {out / 'report.failed.json'}")
        write_json(staging / "report.json", report)
        written.append("report.json")
        with progress.step("human reports (report.md, report.html)"):
            written += write_reports(report, staging)
        manifest = _manifest(staging, written, loaded, run, results)
        write_json(staging / "manifest.json", manifest)
        written.append("manifest.json")
        if options.overwrite:
            for stale in _OUTPUT_NAMES:
                if stale not in written and (out / stale).is_file():
                    (out / stale).unlink()
        failed_report = out / "report.failed.json"
        if failed_report.exists():
            failed_report.unlink()
        publish(staging, out, written)
        progress.say(f"wrote {', '.join(written)} to {out}")
        return result
    except OSError as exc:
        disk = disk_error(exc, out)
        if disk is None:
            raise
        raise disk from exc
    finally:
        remove_staging(staging)


def _size_entry(path: Path, summary: dict | None, quant: Quant, int8_embeddings: bool, max_len: int,
                budget: Budget | None, measure: bool) -> dict:
    """The artifact's size section: breakdown, sharing verdicts, memory, budget verdict."""
    entry = breakdown(path, summary, quant.value, int8_embeddings)
    if measure:
        entry["memory"] = measure_memory(path, min(128, max_len))
    if budget:
        entry["budgets"] = [budget_verdict(entry, budget)]
    return entry


def _export_module(loaded: LoadedModel, options: ExportOptions) -> tuple[torch.nn.Module, list[str]]:
    """The module to export: the model itself, or (int8 with embeddings) a copy with an int8 word table."""
    if options.quant is not Quant.INT8 or not options.quantize_embeddings:
        return ExportWrapper(loaded.model, loaded.task).eval(), []
    import copy

    from quantize.embedding import quantize_embeddings

    model = copy.deepcopy(loaded.model)
    replaced = quantize_embeddings(model)
    return ExportWrapper(model, loaded.task).eval(), replaced


def _int4_group_size(options: ExportOptions, loaded: LoadedModel) -> int:
    return options.int4_group_size or int4_group_size_for(int(loaded.config.hidden_size))


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt that a library wrapped in another exception."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt) or "KeyboardInterrupt" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _export_one(backend: Backend, wrapper: torch.nn.Module, options: ExportOptions, loaded: LoadedModel, max_len: int,
                staging: Path, progress: Progress) -> tuple[Backend, Path, dict, float]:
    """Export one artifact into ``staging``: (backend, path, export stats, seconds)."""
    quant = options.quant
    info = backends.get_info(backend)
    module = backends.load(backend)
    shape, dyn = _dynamic_shapes(backend, max_len)
    example = example_inputs(shape[0], shape[1], int(loaded.config.vocab_size))
    dest = staging / info.file_name
    t0 = time.monotonic()
    try:
        with torch.no_grad():
            extra = ({"group_size": _int4_group_size(options, loaded), "int4_kernel": options.int4_kernel}
                     if quant is Quant.INT4 else {})
            stats = module.export(wrapper, example, dyn, quant, dest, progress, **extra)
    except MobileExportError:
        raise
    except Exception as exc:
        if _interrupted(exc) or interrupts.requested():  # Ctrl-C inside a C++ call can surface as e.g. TypeError("... KeyboardInterrupt")
            raise KeyboardInterrupt from exc
        disk = disk_error(exc, staging.parent)
        if disk is not None:
            raise disk from exc
        msg = first_line(exc)
        raise ExportFailedError(f"{backend.value} export failed: {type(exc).__name__}: {msg}; "
                                "rerun with --debug for the traceback") from exc
    return backend, dest, stats, time.monotonic() - t0


def _check_artifacts(loaded: LoadedModel, source: ParitySource, checks: list[ArtifactCheck], max_len: int,
                     progress: Progress, ray: str | None = None, checkpoint: str | os.PathLike | None = None,
                     ray_workers: int | None = None, arm64=None) -> tuple[list[ArtifactResult], Tally, dict]:
    """Run every artifact in its real runtime on every parity text, next to the fp32 reference, and
    judge each by its limits (in a Ray cluster at ``ray``, if given)."""
    names = ", ".join(f"{c.name} ({backends.get_info(c.backend).runtime})" for c in checks if c.cpu is None)
    cpus = sorted({c.cpu for c in checks if c.cpu}, key=[c.cpu for c in checks].index)
    on_arm = f"; on ARM64 under emulation: {', '.join(cpus)}" if cpus else ""
    with progress.step(f"parity on {len(source):,} texts: fp32 reference and {names}{on_arm}", heartbeat=False):
        if ray:
            from .distributed import run_on_ray

            tally = run_on_ray(ray, str(checkpoint), loaded, checks, max_len, source, progress, ray_workers)
        else:
            tally = run_local(Checker(loaded, checks, max_len, arm64=arm64), source, progress)
    results = []
    by_name = {}
    for j, check in enumerate(checks):
        if check.cpu:
            _add_isa(by_name[check.host], check, tally, j, source, progress)
            continue
        module = backends.load(check.backend)
        parity = tally.parity[j].result(check.thresholds, source.texts_at)
        cov = module.coverage(check.path, check.quant)  # quantization/delegation coverage is part of parity
        parity = dataclasses.replace(parity, coverage=cov, failures=parity.failures + tuple(cov["problems"]))
        verdict = "passed" if parity.passed else "FAILED: " + "; ".join(parity.failures)
        progress.say(f"{check.name}: {parity.headline()} -> {verdict}")
        info = backends.get_info(check.backend)
        ms = sorted(1000 * x for x in tally.seconds[j])
        seconds = sum(tally.seconds[j])
        stats = dict(runtime=info.runtime, runtime_version=module.RUNTIME_VERSION(),
                     parity_latency_ms={"median": round(ms[len(ms) // 2], 3), "p90": round(ms[int(0.9 * (len(ms) - 1))], 3),
                                        "note": "per example, batch 1, mixed lengths, during the parity run"},
                     parity_texts_per_second=round(len(ms) / seconds, 2) if seconds else None,
                     dynamic_batch=info.dynamic_batch, shape_notes=info.notes)
        results.append(ArtifactResult(backend=check.backend, quant=check.quant, file=check.name,
                                      bytes=sum(f.stat().st_size for f in backends.artifact_files(check.path)),
                                      sha256=sha256_file(check.path), export_seconds=0.0, parity=parity, stats=stats,
                                      plot=tally.plots[j].plot()))
        by_name[check.name] = results[-1]
    parity_data = {**source.describe(), "labelled": tally.labelled, "lengths": sorted(tally.lengths),
                   "reference_texts_per_second":
                   round(tally.n_examples / tally.reference_seconds, 2) if tally.reference_seconds else None}
    return results, tally, parity_data


def _artifact_dict(r: ArtifactResult) -> dict:
    return {"backend": r.backend.value, "file": r.file, "quant": r.quant.value,
            "scheme": scheme_name(r.quant.value, (r.stats.get("int4") or {}).get("group_size") or DEFAULT_INT4_GROUP_SIZE),
            "bytes": r.bytes, "sha256": r.sha256, "export_seconds": r.export_seconds, "stats": r.stats,
            "parity": {**r.parity.to_dict(), **({"isa": r.isa} if r.isa else {})},
            "plot": r.plot.to_dict() if r.plot else {}}


def _manifest(staging: Path, names: list[str], loaded: LoadedModel, run: Tally, results: list[ArtifactResult]) -> dict:
    """What an app needs: files with checksums, how to load and call each artifact, golden examples."""
    artifacts = []
    for r in results:
        usage = dict(backends.load(r.backend).usage(r.stats))
        tolerance = max(4 * r.parity.max_abs_diff, 1e-4)  # what this export measured, with room for other CPUs
        artifacts.append({"file": r.file, "backend": r.backend.value, "quant": r.quant.value, **usage,
                          "self_test_max_abs_diff": float(f"{tolerance:.3g}")})
    files = []
    for name in names:
        path = staging / name
        paths = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for p in paths:
            files.append({"path": p.relative_to(staging).as_posix(), "bytes": p.stat().st_size,
                          "sha256": sha256_file(p)})
    return {"schema_version": MANIFEST_SCHEMA, "task": loaded.task.name, "outputs": list(loaded.task.outputs),
            "artifacts": artifacts, "files": files,
            "golden": run.golden}


def detect_quant(path: Path) -> Quant:
    """The precision the artifact's weights are stored in (decides the default parity thresholds)."""
    return backends.load(backends.for_path(path)).stored_quant(path)


def parity_check(source: str | os.PathLike, artifacts: list[str | os.PathLike], out: str | os.PathLike | None = None,
                 options: ParityOptions | None = None, progress: Progress | None = None) -> dict:
    """Check existing artifacts against the fp32 reference of ``source``; returns the report (JSON).

    Each artifact runs in its real runtime (ExecuTorch with full program verification, ONNX Runtime).
    With ``out``, report.json, report.md and report.html are written there (atomically). Raises
    ParityError (exit 3) when any artifact fails its thresholds, after writing the reports.
    """
    options = options or ParityOptions()
    progress = progress or Silent()
    if options.ray:  # before any slow work
        from .distributed import require_ray

        require_ray()
        if options.ray_workers is not None and options.ray_workers < 1:
            raise BadInputError(f"--ray-workers {options.ray_workers}: pass 1 or more")
    arm64 = _arm64_env(options)
    given = [Path(a) for a in artifacts]
    paths = [backends.open_artifact(p)[1] for p in given]  # every artifact checked before any runtime sees it
    quants = []
    for p in paths:  # every artifact readable before the (slow) reference run
        try:
            quants.append(options.quant or detect_quant(p))
        except MobileExportError:
            raise
        except Exception as exc:
            raise BadInputError(f"{p.name} is not a readable {p.suffix} file ({type(exc).__name__}); "
                                "pass an artifact written by mobile-export export") from exc
    if out is not None:
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise BadInputError(f"--out {out} is a file; pass a folder")
    with progress.step("loading checkpoint"):
        loaded = load_checkpoint(source, options.task)
    data = read_parity_file(options.data, labels(loaded.config)) if options.data else None
    max_len = _max_len(int(loaded.config.max_position_embeddings), options.max_seq_len)
    names = [p.name for p in given]
    checks = [ArtifactCheck(str(g) if names.count(g.name) > 1 else g.name, backends.for_path(p), p.resolve(), q,
                            options.thresholds or Thresholds.default_for(q)) for g, p, q in zip(given, paths, quants)]
    if arm64 is not None:
        checks += [ArtifactCheck(f"{c.name} [arm64 {cpu}]", c.backend, c.path, c.quant, c.thresholds, cpu=cpu, host=c.name)
                   for cpu in options.cpus for c in list(checks)]
    results, run, parity_data = _check_artifacts(loaded, ParitySource.build(loaded.tokenizer, data, max_len), checks,
                                                 max_len, progress, options.ray, source, options.ray_workers, arm64)
    report = _build_report("mobile-export parity", loaded, run, parity_data, results,
                           {"quant": options.quant.value if options.quant else "auto", "task": loaded.task.name,
                            "max_seq_len": max_len},
                           [{"path": str(p)} for p in given]).to_json()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "report.json", report)
        write_reports(report, out)
    if not report["passed"]:
        failed = "; ".join(f"{r.file}: {', '.join(r.parity.failures)}" for r in results if not r.parity.passed)
        where = f"; details in {out / 'report.md'}" if out is not None else ""
        raise ParityError(f"parity check failed ({failed}){where}")
    return report


def _add_isa(host: ArtifactResult, check: ArtifactCheck, tally: Tally, j: int, source: ParitySource,
             progress: Progress) -> None:
    """One CPU model's run of ``host``'s artifact: judged by the same limits against fp32, and by decisive
    agreement with the run on this machine; a failure fails the artifact, naming the CPU model."""
    own = tally.parity[j].result(check.thresholds, source.texts_at)
    agreement = check.thresholds.min_agreement if check.thresholds.min_agreement is not None else 0.99
    vs_host = tally.vs_host[j].result(Thresholds(min_agreement=agreement), source.texts_at)
    failures = list(own.failures) + [f"agreement with this machine's run: {f}" for f in vs_host.failures]
    entry = {"isa": "arm64", "cpu": check.cpu, "n_examples": own.n_examples, "max_abs_diff": own.max_abs_diff,
             "sqnr_db": own.sqnr_db, "min_example_sqnr_db": own.min_example_sqnr_db, "agreement": own.agreement,
             "decisive_agreement": own.decisive_agreement, "near_ties": own.near_ties, "accuracy": own.accuracy,
             "vs_host": {"decisive_agreement": vs_host.decisive_agreement, "agreement": vs_host.agreement,
                         "max_abs_diff": vs_host.max_abs_diff, "sqnr_db": vs_host.sqnr_db,
                         "min_agreement": agreement},
             "passed": not failures, "failures": failures}
    host.isa.append(entry)
    if failures:
        host.parity = dataclasses.replace(host.parity, failures=host.parity.failures + tuple(
            f"arm64 {check.cpu}: {f}" for f in failures))
    verdict = "passed" if not failures else "FAILED: " + "; ".join(failures)
    progress.say(f"{host.file} on arm64 {check.cpu}: {own.headline()}; vs this machine max|diff| "
                 f"{vs_host.max_abs_diff:.3g}, agreement {vs_host.agreement if vs_host.agreement is None else f'{vs_host.agreement:.2%}'}"
                 f" -> {verdict}")


def _arm64_env(options: ParityOptions):
    """The prepared ARM64 environment when ``options`` ask for it (checked before any slow work)."""
    if options.isa in (None, "host"):
        return None
    if options.isa != "arm64":
        raise BadInputError(f"--isa {options.isa}: supported are host and arm64")
    if options.ray:
        raise BadInputError("--isa arm64 runs on this machine; drop --ray")
    known = ("cortex-a53", "cortex-a55", "cortex-a57", "cortex-a72", "cortex-a76", "cortex-a710", "neoverse-n1",
             "neoverse-n2", "neoverse-v1", "a64fx", "max")
    unknown = [c for c in options.cpus if c not in known]
    if unknown or not options.cpus:
        raise BadInputError(f"--cpus {','.join(unknown) or '(none)'}: pass qemu CPU models, e.g. {','.join(known[:6])}")
    from .arm64.env import locate

    return locate(options.arm64_env)


def _build_report(tool: str, loaded: LoadedModel, run: Tally, parity_data: dict, results: list[ArtifactResult],
                  options: dict, per_artifact: list[dict]) -> ExportReport:
    """The one report both commands write: model, options, parity data, artifacts, cross-runtime."""
    return ExportReport(
        tool=tool, versions=_versions(), model=_model_summary(loaded), options=options, parity_data=parity_data,
        artifacts=[{**_artifact_dict(r), **extra} for r, extra in zip(results, per_artifact)],
        cross_runtime=run.cross.rows(),
    )


def write_tokenizer(source: str | os.PathLike, out: str | os.PathLike, max_seq_len: int | None = None) -> list[str]:
    """Write just the tokenizer assets an app needs (no weights are loaded).

    Args:
        source: checkpoint folder or hub id.
        out: destination folder (created; files in it are replaced atomically).
        max_seq_len: truncation length recorded in the settings; default max_position_embeddings.

    Returns:
        The names written into ``out``.
    """
    from .fsutil import make_staging, prepare_destination, publish, remove_staging
    from .loading import load_tokenizer, read_config_dict, resolve_folder

    folder = resolve_folder(source)
    config = read_config_dict(folder)
    max_len = _max_len(int(config.get("max_position_embeddings", 512)), max_seq_len)
    tokenizer, kind = load_tokenizer(folder)
    out = Path(out)
    prepare_destination(out, overwrite=True)
    staging = make_staging(out)
    try:
        names = write_tokenizer_assets(tokenizer, kind, folder, staging, max_len)
        publish(staging, out, names)
    finally:
        remove_staging(staging)
    return names


def _size_inputs(path: Path, checkpoint: str | None) -> tuple[dict | None, str | None, bool]:
    """(model summary, quant, int8 embeddings) from ``checkpoint`` or the export's report.json beside it."""
    import json

    if checkpoint:
        from .loading import read_config_dict, resolve_folder

        config = read_config_dict(resolve_folder(checkpoint))
        architecture = (config.get("architectures") or ["AlbertModel"])[0]
        return {"config": _config_summary(config), "architecture": architecture}, None, True
    report = path.parent / "report.json"
    if report.is_file():
        try:
            r = json.loads(report.read_text(encoding="utf-8"))
            opts = r.get("options", {})
            entry = next((a for a in r["artifacts"] if a.get("file") == path.name), None)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise BadInputError(f"{report} is not a mobile-export report; pass --checkpoint instead") from None
        if entry is None or entry.get("sha256") != sha256_file(path):
            raise ArtifactLoadError(f"{report} does not describe this {path.name} (no entry, or its sha256 differs "
                                    "from the file's): pass --checkpoint, or keep the export folder as written")
        return r.get("model"), opts.get("quant"), bool(opts.get("int8_embeddings"))
    return None, None, True


def size_report(artifacts: list[str | os.PathLike], checkpoint: str | None = None, quant: Quant | None = None,
                budgets: list[str] = (), measure: bool = True) -> list[dict]:
    """What each artifact's bytes are, whether sharing survived on disk and in RAM, and budget verdicts.

    Args:
        artifacts: .pte / .onnx / .ort files.
        checkpoint: the source checkpoint, when no export report.json sits beside an artifact.
        quant: how the artifacts were quantized (default: from report.json, else what the file stores).
        budgets: sizes (``15MB``) or store presets; each gives a verdict per artifact.
        measure: also load and run each artifact once in a fresh process to measure its RAM.

    Returns:
        One dict per artifact (see ``size.breakdown``), with ``memory`` and ``budgets``.
    """
    resolved = [resolve_budget(b) for b in budgets]
    entries = []
    for name in artifacts:
        _, path = backends.open_artifact(name)  # checked before any runtime sees it
        info, stored_quant, int8_embeddings = _size_inputs(path, checkpoint)
        chosen = quant or (Quant(stored_quant) if stored_quant else detect_quant(path))
        positions = int((info or {}).get("config", {}).get("max_position_embeddings") or 128)
        entry = _size_entry(path, info, chosen, int8_embeddings, positions, None, measure)
        entry["budgets"] = [budget_verdict(entry, b) for b in resolved]
        entries.append(entry)
    return entries
