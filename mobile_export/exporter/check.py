"""The runtime check of artifacts: each runs in its real runtime next to the fp32 reference and is
judged (``parity``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from .. import backends
from ..assets.labels import labels
from ..backends.base import ArtifactStats
from ..core.config import ARM64_CPUS, ParityOptions, Thresholds, resolve_max_len
from ..core.errors import BadInputError, MobileExportError, ParityError
from ..core.figures import latency_summary
from ..core.files import REPORT_JSON, REPORT_MD
from ..core.fsutil import sha256_file, write_json
from ..core.progress import Progress, Silent
from ..model.heads import HeadSpec, parse_head, with_head
from ..model.loading import LoadedModel, load_checkpoint
from ..parity.artifact import ArtifactResult
from ..parity.checker import ArtifactCheck, Checker, ParitySource, Tally, run_local
from ..parity.data import read_parity_file
from ..reports import write_reports
from ..reports.assembly import build_report
from ..run.folder import recorded_head


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
) -> tuple[list[ArtifactResult], Tally, dict]:
    """Run every artifact in its real runtime on every parity text, next to the fp32 reference, and
    judge each by its limits (in a Ray cluster at ``ray``, if given)."""
    names = ", ".join(f"{c.name} ({backends.get_info(c.backend).runtime})" for c in checks if c.cpu is None)
    cpus = sorted({c.cpu for c in checks if c.cpu}, key=[c.cpu for c in checks].index)
    on_arm = f"; on ARM64 under emulation: {', '.join(cpus)}" if cpus else ""
    with progress.step(f"parity on {len(source):,} texts: fp32 reference and {names}{on_arm}", heartbeat=False):
        if ray:
            from ..parity.distributed import run_on_ray

            tally = run_on_ray(ray, str(checkpoint), loaded, checks, max_len, source, progress, ray_workers)
        else:
            tally = run_local(Checker(loaded, checks, max_len, arm64=arm64), source, progress)
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
    return results, tally, parity_data


def _head_of(options: ParityOptions, task: str, paths: list[Path]) -> HeadSpec:
    """The head the artifacts were exported with: ``--head`` / ``--pooling`` when given, else what a
    manifest.json beside the first artifact records (when it fits the checkpoint's task)."""
    if options.head or options.pooling or options.normalize:
        return parse_head(task, options.head, options.pooling, options.normalize)
    spec = HeadSpec.from_manifest(recorded_head(paths[0].parent))
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
    arm64 = arm64_env(options)
    given = [Path(a) for a in artifacts]
    paths = [backends.open_artifact(p)[1] for p in given]  # every artifact checked before any runtime sees it
    quants = []
    for p in paths:  # every artifact readable before the (slow) reference run
        try:
            quants.append(options.quant or backends.detect_quant(p))
        except MobileExportError:
            raise
        except Exception as exc:
            raise BadInputError(
                f"{p.name} is not a readable {p.suffix} file ({type(exc).__name__}); "
                "pass an artifact written by mobile-export export"
            ) from exc
    if out is not None:
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise BadInputError(f"--out {out} is a file; pass a folder")
    with progress.step("loading checkpoint"):
        loaded = load_checkpoint(source, options.task)
        loaded = with_head(loaded, _head_of(options, loaded.task.name, paths))
    data = read_parity_file(options.data, labels(loaded.config)) if options.data else None
    max_len = resolve_max_len(int(loaded.config.max_position_embeddings), options.max_seq_len)
    names = [p.name for p in given]
    checks = [
        ArtifactCheck(
            str(g) if names.count(g.name) > 1 else g.name,
            backends.for_path(p),
            p.resolve(),
            q,
            options.thresholds or Thresholds.default_for_task(q, loaded.task.kind.value),
        )
        for g, p, q in zip(given, paths, quants)
    ]
    if arm64 is not None:
        checks += [
            ArtifactCheck(f"{c.name} [arm64 {cpu}]", c.backend, c.path, c.quant, c.thresholds, cpu=cpu, host=c.name)
            for cpu in options.cpus
            for c in list(checks)
        ]
    results, run, parity_data = check_artifacts(
        loaded,
        ParitySource.build(loaded.tokenizer, data, max_len),
        checks,
        max_len,
        progress,
        options.ray,
        source,
        options.ray_workers,
        arm64,
    )
    report = build_report(
        "mobile-export parity",
        loaded,
        run,
        parity_data,
        results,
        {"quant": options.quant.value if options.quant else "auto", "task": loaded.task.name, "max_seq_len": max_len},
        [{"path": str(p)} for p in given],
    ).to_json()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / REPORT_JSON, report)
        write_reports(report, out)
    if not report["passed"]:
        failed = "; ".join(f"{r.file}: {', '.join(r.parity.failures)}" for r in results if not r.parity.passed)
        where = f"; details in {out / REPORT_MD}" if out is not None else ""
        raise ParityError(f"parity check failed ({failed}){where}")
    return report


def add_isa(
    host: ArtifactResult, check: ArtifactCheck, tally: Tally, j: int, source: ParitySource, progress: Progress
) -> None:
    """One CPU model's run of ``host``'s artifact: judged by the same limits against fp32, and by decisive
    agreement with the run on this machine; a failure fails the artifact, naming the CPU model."""
    own = tally.parity[j].result(check.thresholds, source.texts_at)
    agreement = check.thresholds.min_agreement if check.thresholds.min_agreement is not None else 0.99
    vs_host = tally.vs_host[j].result(Thresholds(min_agreement=agreement), source.texts_at)
    failures = list(own.failures) + [f"agreement with this machine's run: {f}" for f in vs_host.failures]
    entry = {
        "isa": "arm64",
        "cpu": check.cpu,
        "n_examples": own.n_examples,
        "max_abs_diff": own.max_abs_diff,
        "sqnr_db": own.sqnr_db,
        "min_example_sqnr_db": own.min_example_sqnr_db,
        "agreement": own.agreement,
        "decisive_agreement": own.decisive_agreement,
        "near_ties": own.near_ties,
        "accuracy": own.accuracy,
        "vs_host": {
            "decisive_agreement": vs_host.decisive_agreement,
            "agreement": vs_host.agreement,
            "max_abs_diff": vs_host.max_abs_diff,
            "sqnr_db": vs_host.sqnr_db,
            "min_agreement": agreement,
        },
        "passed": not failures,
        "failures": failures,
    }
    host.isa.append(entry)
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
