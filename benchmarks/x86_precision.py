"""ONNX Runtime artifacts in both int8 precision modes, on this host and on qemu's Haswell CPU (AVX2, no VNNI,
whose u8 x s8 kernel saturates): SQNR against fp32, lowest example, top-1 agreement, and latency at one
length on this host (numbers in BENCHMARKS.md, "x86 without VNNI").

    python benchmarks/x86_precision.py CHECKPOINT model.onnx [model.ort ...] --data FILE [--texts 100] \
        [--emulate] [--seq 128] [--runs 30]

The fp32 reference is computed here once; each artifact then runs in a fresh process per place: this host,
and with ``--emulate`` under ``qemu-x86_64 -cpu Haswell`` from the emulation environment (``make
arm64-env``). Modes: ``project`` (what every session of mobile-export uses on that CPU), ``u8s8`` (ONNX
Runtime's default session), ``u8u8`` (the non-saturating mode forced). Emulation says nothing about speed:
latency is measured on this host only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

_CHILD = """
import json, sys, time
import numpy as np
from mobile_export.backends.onnx import Runner
from mobile_export.backends.onnx.precision import Precision, precision_for
from mobile_export.core.host import this_host
feeds, dest, seq, runs = np.load(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out, info = {}, {"host": this_host().summary(), "project": precision_for().value, "ms": {}}
for path in sys.argv[5:]:
    for mode in (None, Precision.NATIVE, Precision.EXACT):
        name = mode.value if mode else "project"
        runner = Runner(path, threads=1, precision=mode)
        for i in range(int(feeds["n"])):
            out[f"{path}|{name}|{i}"] = runner.run({k: feeds[f"{i}/{k}"] for k in ("input_ids", "attention_mask",
                                                                                    "token_type_ids")})[0]
        if runs:
            ids = np.random.default_rng(0).integers(5, 100, size=(1, seq)).astype(np.int64)
            x = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            for _ in range(5):
                runner.run(x)
            ts = []
            for _ in range(runs):
                t = time.perf_counter()
                runner.run(x)
                ts.append(1000 * (time.perf_counter() - t))
            info["ms"][f"{path}|{name}"] = float(np.median(ts))
np.savez(dest, **out)
print(json.dumps(info))
"""


def _metrics(ref: list[np.ndarray], got: list[np.ndarray]) -> dict:
    num = sum(float(np.sum(r.astype(np.float64) ** 2)) for r in ref)
    den = sum(float(np.sum((r.astype(np.float64) - g) ** 2)) for r, g in zip(ref, got))
    floor = float(np.median([np.sum(r.astype(np.float64) ** 2) for r in ref]))
    per = [10 * np.log10(max(float(np.sum(r.astype(np.float64) ** 2)), floor) /
                         max(float(np.sum((r.astype(np.float64) - g) ** 2)), 1e-30)) for r, g in zip(ref, got)]
    agree = float(np.mean([int(np.argmax(r) == np.argmax(g)) for r, g in zip(ref, got)]))
    return {"sqnr_db": 10 * np.log10(num / den), "lowest_example_db": min(per), "top1": agree}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("artifacts", nargs="+")
    p.add_argument("--data", required=True, help="label<TAB>text lines (the labels are not used)")
    p.add_argument("--texts", type=int, default=100)
    p.add_argument("--emulate", action="store_true", help="also run under qemu-x86_64 -cpu Haswell")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--runs", type=int, default=30)
    a = p.parse_args()

    from mobile_export.model.loading import load_checkpoint
    from mobile_export.model.reference import reference_outputs, tokenize

    loaded = load_checkpoint(a.checkpoint)
    lines = [x for x in Path(a.data).read_text(encoding="utf-8").splitlines() if x.strip()][: a.texts]
    texts = [x.split("\t", 1)[-1] for x in lines]
    examples = tokenize(loaded.tokenizer, texts, int(loaded.config.max_position_embeddings))
    t = time.perf_counter()
    fp32 = [r[0] for r in reference_outputs(loaded.model, loaded.task, examples)]
    print(f"fp32 reference on {len(examples)} texts: {time.perf_counter() - t:.1f} s", file=sys.stderr)
    work = Path(a.artifacts[0]).resolve().parent / "x86-precision"
    work.mkdir(exist_ok=True)
    feeds = work / "feeds.npz"
    np.savez(feeds, n=np.array(len(examples)), **{f"{i}/{k}": v for i, ex in enumerate(examples)
                                                  for k, v in ex.feeds.items()})
    root = str(Path(__file__).resolve().parents[1])
    places = [("this host", [], a.runs)]
    if a.emulate:
        from mobile_export.parity.arm64.env import default_dir, locate

        places.append(("qemu Haswell", [str(locate(default_dir()).qemu_x86_64), "-cpu", "Haswell"], 0))
    paths = [str(Path(x).resolve()) for x in a.artifacts]
    rows = []
    for place, prefix, runs in places:
        dest = work / f"{place.replace(' ', '-')}.npz"
        t = time.perf_counter()
        proc = subprocess.run([*prefix, sys.executable, "-c", _CHILD, str(feeds), str(dest), str(a.seq), str(runs),
                               *paths], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=root))
        if proc.returncode:
            print(proc.stderr[-3000:], file=sys.stderr)
            return 1
        info = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{place}: {info['host']}, project mode {info['project']} ({time.perf_counter() - t:.0f} s)",
              file=sys.stderr)
        got = np.load(dest)
        for path in paths:
            for mode in ("project", "u8s8", "u8u8"):
                m = _metrics(fp32, [got[f"{path}|{mode}|{i}"] for i in range(len(examples))])
                ms = info["ms"].get(f"{path}|{mode}")
                shown = Path(path).name if len({Path(x).name for x in paths}) == len(paths) else (
                    f"{Path(path).parent.name}/{Path(path).name}")
                rows.append({"place": place, "artifact": shown, "mode": mode,
                             "project_mode": info["project"], **m, "ms": ms})
    print(f"| artifact | CPU | mode | SQNR dB | lowest example dB | top-1 vs fp32 | ms @{a.seq} (1 thread) |")
    print("|---|---|---|---:|---:|---:|---:|")
    for r in rows:
        mode = f"{r['mode']} ({r['project_mode']})" if r["mode"] == "project" else r["mode"]
        ms = f"{r['ms']:.2f}" if r["ms"] is not None else "-"
        print(f"| {r['artifact']} | {r['place']} | {mode} | {r['sqnr_db']:.1f} | {r['lowest_example_db']:.1f} | "
              f"{r['top1']:.2%} | {ms} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
