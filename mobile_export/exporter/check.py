"""The runtime check of artifacts: each runs in its real runtime next to the fp32 reference and is judged; the
artifacts an export just lowered (``check_lowered``) and a user's (``parity_check``, the ``parity`` command)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from .. import backends
from ..assets.labels import labels
from ..assets.bundle import carried
from ..assets.manifest import check_beside, recorded_head
from ..backends.base import ArtifactStats
from ..core.choices import Quant
from ..core.errors import ArtifactLoadError, BadInputError, ExportFailedError, MobileExportError, ParityError
from ..core.figures import latency_summary
from ..core.files import REPORT_JSON, REPORT_MD
from ..core.fsutil import sha256_file, write_json
from ..core.progress import Progress, Silent
from ..core.signature import resolve_max_len
from ..core.thresholds import Thresholds
from ..core.heads import HeadSpec, parse_head
from ..model.families import longest_input
from ..model.heads import with_head
from ..model.loading import LoadedModel, load_checkpoint
from ..parity.arm64.cpus import ARM64_CPUS
from ..parity.artifact import ArtifactResult, IsaRun, VsHost
from ..parity.checker import ArtifactCheck, Checked, Checker, Sample, Tally, run_local
from ..parity.source import ParitySource
from ..parity.data import read_parity_file
from ..reports import write_reports
from ..reports.assembly import build_report
from .context import ExportRun
from .lowering import Lowered
from .options import ParityOptions


def check_lowered(run: ExportRun, lowered: list[Lowered]) -> Checked:
    """Each artifact an export just lowered, in its real runtime against the fp32 reference, with its lowering's
    facts attached."""
    checks = [ArtifactCheck(x.path.name, x.backend, x.path, run.options.quant, run.thresholds) for x in lowered]
    try:
        checked = check_artifacts(run.loaded, run.parity_source(), checks, run.max_len, run.progress)
    except ArtifactLoadError as exc:  # we just wrote them: our failure, not the user's
        raise ExportFailedError(f"{exc}; rerun with --debug and report it") from exc
    for r, x in zip(checked.results, lowered):
        r.stats = ArtifactStats(**x.stats, **r.stats)
        r.export_seconds = round(x.seconds, 2)
    return checked


def check_artifacts(
    loaded: LoadedModel,
    source: ParitySource,
    checks: list[ArtifactCheck],
    max_len: int,
    progress: Progress,
    ray: str | None = None,
    checkpoint: str | os.PathLike | None = None,
    ray_workers: int | None = None,
    arm64=None,
    npu_sample: int | None = None,
) -> Checked:
    """Run every artifact in its real runtime on every parity text (a simulated one on ``npu_sample`` texts of
    each length bucket, ``Sample``), next to the fp32 reference, and judge each by its limits (in a Ray cluster
    at ``ray``, if given)."""
    sample = Sample(per_bucket=0) if ray else Sample.for_host(npu_sample)  # as distributed's workers run them
    names = ", ".join(f"{c.name} ({backends.get_info(c.backend).runtime})" for c in checks if c.cpu is None)
    cpus = sorted({c.cpu for c in checks if c.cpu}, key=[c.cpu for c in checks].index)
    on_arm = f"; on ARM64 under emulation: {', '.join(cpus)}" if cpus else ""
    with progress.step(f"parity on {len(source):,} texts: fp32 reference and {names}{on_arm}", heartbeat=False):
        if ray:
            from ..parity.distributed import run_on_ray

            tally = run_on_ray(ray, str(checkpoint), loaded, checks, max_len, source, progress, ray_workers)
        else:
            checker = Checker(loaded, checks, max_len, arm64=arm64, sample=sample)
            tally = run_local(checker, source, progress)
    results = []
    by_name: dict[str, ArtifactResult] = {}
    for j, check in enumerate(checks):
        if check.cpu:
            add_isa(by_name[str(check.host)], check, tally, j, source, progress)
            continue
        module = backends.load(check.backend)
        parity = tally.parity[j].result(check.thresholds, source.texts_at)
        cov = module.coverage(check.path, check.quant)  # quantization/delegation coverage is part of parity
        parity = dataclasses.replace(parity, coverage=cov, failures=parity.failures + cov.problems)
        verdict = "passed" if parity.passed else "FAILED: " + "; ".join(parity.failures)
        progress.say(f"{check.name}: {parity.headline()} -> {verdict}")
        info = backends.get_info(check.backend)
        ms = [1000 * x for x in tally.seconds[j]]
        seconds = sum(tally.seconds[j])
        stats = ArtifactStats(
            runtime=info.runtime,
            runtime_version=module.runtime_version(),
            parity_latency_ms={
                **latency_summary(ms),
                "note": "per example, batch 1, mixed lengths, during the parity run",
            },
            parity_texts_per_second=round(len(ms) / seconds, 2) if seconds else None,
            dynamic_batch=info.dynamic_batch,
            shape_notes=info.notes,
        )
        if info.simulated:
            stats["simulated"] = _simulated(
                info, sample, tally.parity[j].n_examples, len(source), tally.fixed_lengths.get(j)
            )
        results.append(
            ArtifactResult(
                backend=check.backend,
                quant=check.quant,
                file=check.name,
                bytes=sum(f.stat().st_size for f in backends.artifact_files(check.path)),
                sha256=sha256_file(check.path),
                export_seconds=0.0,
                parity=parity,
                stats=stats,
                plot=tally.plots[j].plot(),
            )
        )
        by_name[check.name] = results[-1]
    parity_data = {
        **source.describe(),
        "labelled": tally.labelled,
        "lengths": sorted(tally.lengths),
        "reference_texts_per_second": round(tally.n_examples / tally.reference_seconds, 2)
        if tally.reference_seconds
        else None,
    }
    return Checked(results, tally, parity_data)


def _simulated(info: backends.BackendInfo, sample: Sample, ran: int, texts: int, fixed: int | None) -> dict:
    """What a simulated runtime's check was: the simulator, and which of the parity texts it ran."""
    quota = sample.quota(info)
    chosen = f"the first {quota} of each length bucket" if quota else "every text"
    return {
        "simulator": info.simulator,
        "texts": ran,
        "of": texts,
        "chosen": chosen + (f", none longer than the file's {fixed} tokens" if fixed else ""),
        "note": "its time here is the simulator's on this host, not the device's",
    }


def _head_of(options: ParityOptions, task: str, paths: list[Path]) -> HeadSpec:
    """The head the artifacts were exported with: ``--head`` / ``--pooling`` when given, else what a
    manifest.json beside the first artifact records, else what the card it carries records (when it fits the
    checkpoint's task; a block that does not read, passed with --ignore-manifest, records nothing)."""
    if options.head or options.pooling or options.normalize:
        return parse_head(task, options.head, options.pooling, options.normalize)
    recorded = recorded_head(paths[0].parent)
    if recorded is None:
        try:
            found = carried(paths[0], str(paths[0]), check=False)
        except ArtifactLoadError:
            found = None
        head = found[1].get("head") if found is not None else None
        recorded = head if isinstance(head, dict) else None
    spec = HeadSpec.from_manifest(recorded)
    fits = {"topk": "fill-mask", "pool": "feature-extraction"}.get(spec.kind, task) == task
    return spec if fits else HeadSpec()


def parity_check(
    source: str | os.PathLike,
    artifacts: list[str | os.PathLike],
    out: str | os.PathLike | None = None,
    options: ParityOptions | None = None,
    progress: Progress | None = None,
) -> dict:
    """Check existing artifacts against the fp32 reference of ``source``; returns the report (JSON).

    Each artifact runs in its real runtime (ExecuTorch with full program verification, ONNX Runtime).
    With ``out``, report.json, report.md and report.html are written there (atomically). Raises
    ParityError (exit 3) when any artifact fails its thresholds, after writing the reports.
    """
    options = options or ParityOptions()
    progress = progress or Silent()
    if options.ray:  # before any slow work
        from ..parity.distributed import require_ray

        require_ray()
        if options.ray_workers is not None and options.ray_workers < 1:
            raise BadInputError(f"--ray-workers {options.ray_workers}: pass 1 or more")
        if options.npu_sample:
            raise BadInputError(
                f"--npu-sample {options.npu_sample} with --ray: a Ray check runs every text on the NPU simulator "
                "(one per worker); drop --npu-sample, or --ray to check a sample here"
            )
    arm64 = arm64_env(options)
    given = [Path(a) for a in artifacts]
    paths, quants = _readable(given, options)
    folder = Path(out) if out is not None else None
    if folder is not None and folder.exists() and not folder.is_dir():
        raise BadInputError(f"--out {folder} is a file; pass a folder")
    with progress.step("loading checkpoint"):
        loaded = load_checkpoint(source, options.task)
        loaded = with_head(loaded, _head_of(options, loaded.task.name, paths))
    data = read_parity_file(options.data, labels(loaded.config)) if options.data else None
    max_len = resolve_max_len(longest_input(loaded.config), options.max_seq_len)
    checks = _checks(given, paths, quants, options, loaded.task.kind.value, arm64 is not None)
    parity_source = ParitySource.build(loaded.tokenizer, data, max_len)
    checked = check_artifacts(
        loaded,
        parity_source,
        checks,
        max_len,
        progress,
        options.ray,
        source,
        options.ray_workers,
        arm64,
        options.npu_sample,
    )
    quant = options.quant.value if options.quant else "auto"
    report = build_report(
        "mobile-export parity",
        loaded,
        checked,
        {"quant": quant, "task": loaded.task.name, "max_seq_len": max_len},
        paths=[str(p) for p in given],
    ).to_json()
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / REPORT_JSON, report)
        write_reports(report, folder)
    if not report["passed"]:
        refused = [r for r in checked.results if not r.parity.passed]
        failed = "; ".join(f"{r.file}: {', '.join(r.parity.failures)}" for r in refused)
        where = f"; details in {folder / REPORT_MD}" if folder is not None else ""
        raise ParityError(f"parity check failed ({failed}){where}")
    return report


def _readable(given: list[Path], options: ParityOptions) -> tuple[list[Path], list[Quant]]:
    """Each artifact checked before any runtime sees it (and against the manifest.json beside it, unless told
    not to), and its precision read, before the (slow) reference run: (resolved paths, precisions)."""
    paths = [backends.open_artifact(p)[1] for p in given]
    if not options.ignore_manifest:
        for g, p in zip(given, paths):
            check_beside(backends.artifact_files(p), str(g))
            try:
                carried(p, str(g))  # its own identity and assets, when it carries them
            except ArtifactLoadError as exc:
                raise ArtifactLoadError(f"{exc}; or pass --ignore-manifest to check it anyway") from None
    quants = []
    for p in paths:
        try:
            quants.append(options.quant or backends.detect_quant(p))
        except MobileExportError:
            raise
        except Exception as exc:
            raise BadInputError(
                f"{p.name} is not a readable {p.suffix} file ({type(exc).__name__}); "
                "pass an artifact written by mobile-export export"
            ) from exc
    return paths, quants


def _checks(
    given: list[Path], paths: list[Path], quants: list[Quant], options: ParityOptions, kind: str, arm64: bool
) -> list[ArtifactCheck]:
    """One check per artifact (named by its file, or its path where two share a name), each judged by the
    limits given or those of its precision and the task's output ``kind``; with ``arm64``, one more per CPU model."""
    names = [p.name for p in given]
    checks = [
        ArtifactCheck(
            str(g) if names.count(g.name) > 1 else g.name,
            backends.for_path(p),
            p.resolve(),
            q,
            options.thresholds or Thresholds.default_for_task(q, kind),
        )
        for g, p, q in zip(given, paths, quants)
    ]
    if arm64:
        checks += [
            ArtifactCheck(f"{c.name} [arm64 {cpu}]", c.backend, c.path, c.quant, c.thresholds, cpu=cpu, host=c.name)
            for cpu in options.cpus
            for c in list(checks)
        ]
    return checks


def add_isa(
    host: ArtifactResult, check: ArtifactCheck, tally: Tally, j: int, source: ParitySource, progress: Progress
) -> None:
    """One CPU model's run of ``host``'s artifact: judged by the same limits against fp32, and by decisive
    agreement with the run on this machine; a failure fails the artifact, naming the CPU model."""
    own = tally.parity[j].result(check.thresholds, source.texts_at)
    agreement = check.thresholds.min_agreement if check.thresholds.min_agreement is not None else 0.99
    vs_host = tally.vs_host[j].result(Thresholds(min_agreement=agreement), source.texts_at)
    failures = list(own.failures) + [f"agreement with this machine's run: {f}" for f in vs_host.failures]
    run = IsaRun(
        str(check.cpu),
        own.n_examples,
        own.max_abs_diff,
        own.sqnr_db,
        own.min_example_sqnr_db,
        own.agreement,
        own.decisive_agreement,
        own.near_ties,
        own.accuracy,
        VsHost(vs_host.decisive_agreement, vs_host.agreement, vs_host.max_abs_diff, vs_host.sqnr_db, agreement),
        tuple(failures),
        features=tally.cpu_features.get(str(check.cpu), ()),
    )
    host.isa.append(run)
    if failures:
        host.parity = dataclasses.replace(
            host.parity, failures=host.parity.failures + tuple(f"arm64 {check.cpu}: {f}" for f in failures)
        )
    verdict = "passed" if not failures else "FAILED: " + "; ".join(failures)
    agreed = "n/a" if vs_host.agreement is None else f"{vs_host.agreement:.2%}"
    progress.say(
        f"{host.file} on arm64 {check.cpu}: {own.headline()}; vs this machine max|diff| "
        f"{vs_host.max_abs_diff:.3g}, agreement {agreed} -> {verdict}"
    )


def arm64_env(options: ParityOptions):
    """The prepared ARM64 environment when ``options`` ask for it (checked before any slow work)."""
    if options.isa in (None, "host"):
        return None
    if options.isa != "arm64":
        raise BadInputError(f"--isa {options.isa}: supported are host and arm64")
    if options.ray:
        raise BadInputError("--isa arm64 runs on this machine; drop --ray")
    unknown = [c for c in options.cpus if c not in ARM64_CPUS]
    if unknown or not options.cpus:
        raise BadInputError(
            f"--cpus {','.join(unknown) or '(none)'}: pass qemu CPU models, e.g. {','.join(ARM64_CPUS[:6])}"
        )
    from ..parity.arm64.env import locate

    return locate(options.arm64_env)
