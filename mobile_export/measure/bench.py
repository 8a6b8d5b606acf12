"""``mobile-export bench``: latency, throughput, load time and memory of artifacts, side by side with
the PyTorch fp32 eager model, each measured in a fresh process with a fixed thread count.

Benchmarks print numbers; no test asserts a time. Method: for every (artifact, threads) one child
process loads the artifact (load time), then per sequence length runs ``warmup`` untimed and ``runs``
timed batch-1 calls on fixed token ids (median, p90), then 8 texts of the middle length (batch 8
where the artifact has a dynamic batch, else 8 batch-1 calls) for throughput; peak RSS is the
process's VmHWM after the runtime import was reset.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..core.signature import INPUT_NAMES


def _child(
    kind: str, path: str, threads: int, seqs: list[int], runs: int, warmup: int, vocab: int, precision: str = ""
) -> dict:
    """One (artifact, threads) measurement; runs in a fresh process (``python -m mobile_export.measure.bench``).
    ``precision``: the int8 mode of a format whose runtime's depends on the host (``base.HostPrecision``)."""
    import time

    import torch

    from .child import import_runtime
    from .memory import delta, model_kib, reset_peak, resident_kib, status_kib

    # torch is the runtime only for the eager reference; for artifacts it merely wraps arrays between
    # ExecuTorch method calls, and its idle OpenMP workers spinning after a copy would steal the cores
    # the runtime's own threadpool runs on (the app has no torch at all)
    torch.set_num_threads(threads if kind == "torch" else 1)
    module = import_runtime(kind) if kind != "torch" else None
    reset_peak()
    base_kib, base = status_kib("VmRSS"), resident_kib(Path(path))
    t0 = time.perf_counter()
    runner, dynamic_batch = _runner(kind, module, path, threads, precision)
    rng = np.random.default_rng(0)  # the same token ids for every artifact
    load_seconds = round(time.perf_counter() - t0, 4)
    latency_ms = _latencies(runner, seqs, runs, warmup, vocab, rng)
    # the model's RAM and peak as a batch-1 app holds them: read before the throughput's batch of 8 (an .onnx's
    # arena keeps what that batch needed: bert-base at 512 tokens, ~1 GiB against ~0.15)
    now, batch1_peak_kib = resident_kib(Path(path)), status_kib("VmHWM")
    simulator = _simulator(kind)
    out: dict[str, object] = {"load_seconds": load_seconds, "dynamic_batch": dynamic_batch}
    if simulator:  # the simulator's time says nothing of the device's: kept apart, and no throughput
        out.update(simulator=simulator, simulator_latency_ms=latency_ms, throughput_texts_per_s=None)
    else:
        out.update(
            latency_ms=latency_ms,
            throughput_texts_per_s=_throughput(runner, seqs[len(seqs) // 2], vocab, dynamic_batch, rng),
        )
    out["peak_rss_bytes"] = status_kib("VmHWM") * 1024  # the whole process, the throughput's batch included
    out["peak_over_baseline_bytes"] = (batch1_peak_kib - base_kib) * 1024
    out["model_rss_bytes"] = model_kib(delta(now, base)) * 1024
    return out


def _simulator(kind: str) -> str | None:
    """The simulator a format of ``kind`` runs on here (None: its real runtime, or the eager model)."""
    from .. import backends
    from ..backends import Backend

    return backends.get_info(Backend(kind)).simulator if kind != "torch" else None


def _runner(kind: str, module: Any, path: str, threads: int, precision: str) -> tuple[Any, bool]:
    """(what runs the model: the artifact in its runtime through the same ``Runner`` parity uses, with the
    runtime's minimal verification, or the checkpoint's fp32 eager model; whether it takes any batch)."""
    from .. import backends
    from ..backends import Backend

    if module is None:
        from ..model.loading import load_checkpoint
        from ..model.reference import EagerRunner

        return EagerRunner(load_checkpoint(path)), True
    info = backends.get_info(Backend(kind))
    options: dict = dict(info.app_runner_options)  # loaded as the app loads it (ExecuTorch: minimal verification)
    if precision:  # a format with host-dependent int8 modes (``base.HostPrecision``)
        options["precision"] = precision
    return module.Runner(Path(path), threads=threads, **options), info.dynamic_batch


def _feeds(ids: np.ndarray) -> dict[str, np.ndarray]:
    return {INPUT_NAMES[0]: ids, INPUT_NAMES[1]: np.ones_like(ids), INPUT_NAMES[2]: np.zeros_like(ids)}


def _latencies(
    runner: Any, seqs: list[int], runs: int, warmup: int, vocab: int, rng: np.random.Generator
) -> dict[str, dict[str, float]]:
    """Per length: ``warmup`` untimed, then ``runs`` timed batch-1 calls on fixed token ids (ms)."""
    import time

    from ..core.figures import latency_summary

    latency_ms: dict[str, dict[str, float]] = {}
    for seq in seqs:
        ids = rng.integers(5, vocab, size=(1, seq)).astype(np.int64)
        ids[0, 0], ids[0, -1] = 2, 3
        feeds = _feeds(ids)
        for _ in range(warmup):
            runner.run(feeds)
        ts = []
        for _ in range(runs):
            t = time.perf_counter()
            runner.run(feeds)
            ts.append(1000 * (time.perf_counter() - t))
        latency_ms[str(seq)] = latency_summary(ts)
    return latency_ms


def _throughput(runner: Any, seq: int, vocab: int, dynamic_batch: bool, rng: np.random.Generator) -> dict[str, Any]:
    """Texts per second over 8 texts of ``seq`` tokens: one batch of 8 where the runner takes any batch, else 8
    batch-1 calls; repeated for at least a second."""
    import time

    ids = rng.integers(5, vocab, size=(8, seq)).astype(np.int64)

    def batch():
        if dynamic_batch:
            runner.run(_feeds(ids))
        else:
            for i in range(8):
                runner.run(_feeds(ids[i : i + 1]))

    batch()
    t, n = time.perf_counter(), 0
    while n < 3 or time.perf_counter() - t < 1.0:
        batch()
        n += 1
    return {"seq": seq, "batch": 8 if dynamic_batch else 1, "value": round(8 * n / (time.perf_counter() - t), 2)}


def machine() -> dict:
    """The benchmarking machine: CPU, its int8 features, ONNX Runtime's precision mode there."""
    from .. import backends
    from ..core.host import this_host

    host = this_host()
    precisions = {  # each runtime's host-dependent int8 mode here (ONNX Runtime's), by its library
        f"{info.library}_precision": fmt.describe_precision(None, host)
        for b, info in backends.BACKENDS.items()
        if (fmt := backends.host_precision(b)) is not None
    }
    return {
        **host.describe(),
        **precisions,
        "logical_cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def measure(
    kind: str,
    path: str,
    threads: int,
    seq_lens: list[int],
    vocab: int,
    runs: int = 30,
    warmup: int = 5,
    precision: str = "",
) -> dict:
    """Load time, latency per length, throughput and memory of one (artifact, threads) in a fresh process (a
    simulated format: its simulator's time per length, ``simulator_latency_ms``, over at most 3 runs)."""
    from .child import run_child

    if _simulator(kind):  # about a second a run at 128 tokens
        runs, warmup = min(runs, 3), min(warmup, 1)
    return run_child(
        "mobile_export.measure.bench",
        [kind, path, str(threads), ",".join(map(str, seq_lens)), str(runs), str(warmup), str(vocab), precision],
        dict(os.environ, OMP_NUM_THREADS=str(threads if kind == "torch" else 1)),
        3600,
        f"benchmark of {path} failed",
    )


def bench(
    artifacts: list[str],
    checkpoint: str | None,
    seq_lens: list[int],
    threads: list[int],
    runs: int = 30,
    vocab: int | None = None,
    say=print,
) -> dict:
    """Measure every artifact (and the fp32 eager model of ``checkpoint``) at each thread count; an
    ONNX Runtime artifact in this host's precision mode and, where the host also has the saturating
    u8s8 kernel, in that one too (row ``precision``)."""
    from .. import backends
    from ..assets.bundle import carried
    from ..backends import Backend

    targets = []
    for a in artifacts:
        backend, real = backends.open_artifact(a)  # checked before any runtime sees it
        carried(real, Path(a).name)  # and its identity: a file changed after export is not timed as the export
        targets.append((backend.value, str(real), Path(a).name))
    names = [t[2] for t in targets]
    targets = [
        (k, path, f"{Path(path).parent.name}/{name}" if names.count(name) > 1 else name) for k, path, name in targets
    ]  # same file name from different exports: say which
    if checkpoint:
        targets.insert(0, ("torch", checkpoint, "PyTorch fp32 eager"))
    if vocab is None:
        vocab = 100
        if checkpoint:
            from ..model.loading import read_config_dict, resolve_folder

            vocab = int(read_config_dict(resolve_folder(checkpoint)).get("vocab_size", 100))
    rows = []
    for kind, path, name in targets:
        fmt = backends.host_precision(Backend(kind)) if kind != "torch" else None
        modes = fmt.precision_modes() if fmt is not None else ("",)  # the eager model and a .pte have none
        for m in modes:
            shown = f"{name} [{m}]" if m and len(modes) > 1 else name
            for t in threads:
                say(f"bench {shown} threads={t} ...")
                r = measure(kind, path, t, seq_lens, vocab, runs, precision=m)
                mode_of = {"precision": m} if m else {}
                rows.append({"name": shown, "kind": kind, "path": path, "threads": t, **mode_of, **r})
    for row in rows:  # speed-up over eager at the same thread count and length
        ref = next((r for r in rows if r["kind"] == "torch" and r["threads"] == row["threads"]), None)
        if ref and "latency_ms" in row:
            row["speedup_vs_eager"] = {
                s: round(ref["latency_ms"][s]["median"] / v["median"], 2) for s, v in row["latency_ms"].items()
            }
    return {"machine": machine(), "seq_lens": seq_lens, "threads": threads, "runs": runs, "results": rows}


def table(result: dict) -> str:
    """The benchmark as a plain-text table; a simulated artifact's times in parentheses, with a line saying why."""
    seqs = [str(s) for s in result["seq_lens"]]
    head = (
        f"{'artifact':<22}{'thr':>4}{'load s':>8}"
        + "".join(f"{'ms@' + s:>10}" for s in seqs)
        + f"{'x eager@' + seqs[-1]:>12}{'texts/s':>9}{'peak MiB':>10}"
    )
    m = result.get("machine") or {}
    lines = [
        f"machine: {m.get('cpu')} ({' '.join(m.get('int8_features') or []) or 'no int8 features'}); "
        f"onnxruntime {m.get('onnxruntime_precision')}",
        head,
    ]
    simulated = set()
    for r in result["results"]:
        sp = (r.get("speedup_vs_eager") or {}).get(seqs[-1])
        times = r.get("latency_ms") or {}
        cells = [f"{times[s]['median']:>10.2f}" if s in times else f"{'-':>10}" for s in seqs]
        if r.get("simulator"):
            simulated.add(r["simulator"])
            sim = r["simulator_latency_ms"]
            cells = [f"{'(' + format(sim[s]['median'], '.0f') + ')':>10}" if s in sim else f"{'-':>10}" for s in seqs]
        texts = r.get("throughput_texts_per_s")
        rate = f"{texts['value']:.1f}" if texts else "-"
        lines.append(
            f"{r['name'][:22]:<22}{r['threads']:>4}{r['load_seconds']:>8.2f}"
            + "".join(cells)
            + f"{(f'{sp:.2f}x' if sp else '-'):>12}{rate:>9}"
            + f"{r['peak_rss_bytes'] / 2**20:>10.0f}"
        )  # a table column: the number alone
    lines += [
        f"(ms): on {name} on this host, not the device's time (BENCHMARKS.md has the device figures)"
        for name in sorted(simulated)
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    from .child import print_result

    _argv = sys.argv[1:]
    print_result(
        _child(
            _argv[0],
            _argv[1],
            int(_argv[2]),
            [int(x) for x in _argv[3].split(",")],
            int(_argv[4]),
            int(_argv[5]),
            int(_argv[6]),
            _argv[7] if len(_argv) > 7 else "",
        )
    )
