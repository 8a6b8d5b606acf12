"""Plain int8 against ``--repair`` on a checkpoint given outlier channels (numbers in BENCHMARKS.md, "int8
outlier channels").

    python benchmarks/outlier_repair.py CHECKPOINT --factor 50 --data FILE --work DIR [--plant residual] [--bench]
    python benchmarks/outlier_repair.py albert-base --work DIR [--bench]   # random weights, albert-base-v2's shape

``--plant exact`` (default): the channels of ``tests/outlier_models.PLANTED`` are scaled up by ``--factor`` in the
embeddings LayerNorm and the value projection, and down in the weights that read them (the fp32 function is
unchanged). ``--plant residual``: scaled up in the shared layer's last LayerNorm (the residual stream; no exact
fold exists, and the fp32 model is another one). The planted checkpoint is then exported twice
with default thresholds: ``--repair off`` (the plain artifacts' numbers are read from report.failed.json when
the gate refuses them) and ``--repair auto``. Prints, per artifact: SQNR, lowest example, decisive agreement,
accuracy (fp32's in brackets), bytes, model RAM after load + one run, and the export's wall time.

``--bench``: then each plain and each repaired artifact through ``mobile-export bench`` at 128 tokens (2 threads,
30 runs, a fresh process each: median / p90 ms, load ms, model RAM). A plain artifact the gate refused is not
written, so the plain one timed is exported again with no gate (same weights and graph; its numbers are above).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from outlier_models import plant_exact, plant_residual, planted_checkpoint  # noqa: E402

from mobile_export import ExportOptions, export  # noqa: E402
from mobile_export.core.choices import Repair  # noqa: E402
from mobile_export.core.errors import ParityError  # noqa: E402
from mobile_export.core.progress import Progress  # noqa: E402


def _row(mode: str, a: dict, seconds: float) -> str:
    p = a["parity"]
    mem = ((a.get("size") or {}).get("memory") or {}).get("model_rss_bytes")
    acc = "n/a" if p.get("accuracy") is None else f"{p['accuracy']:.2%} ({p['reference_accuracy']:.2%})"
    return (
        f"{mode:<6}{a['file']:<12}{p['sqnr_db']:>8.1f}{p['min_example_sqnr_db']:>9.1f}"
        f"{p['decisive_agreement']:>9.2%}{acc:>20}{a['bytes']:>12,}"
        f"{'n/a' if mem is None else f'{mem / 2**20:.1f}':>9}{seconds:>9.0f}  {'pass' if p['passed'] else 'FAIL'}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="a checkpoint folder, or albert-base: random weights in albert-base-v2's shape")
    ap.add_argument("--factor", type=float, default=50.0)
    ap.add_argument("--data")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--modes", default="off,auto", help="--repair values to export with, in order")
    ap.add_argument("--plant", choices=("exact", "residual"), default="exact")
    ap.add_argument("--bench", action="store_true", help="then time plain and repaired artifacts at 128 tokens")
    args = ap.parse_args()
    source = Path(args.checkpoint)
    if args.checkpoint == "albert-base":
        source = args.work / "albert-base-random"
        if not source.exists():
            from test_real_size import ALBERT_BASE

            from mobile_export.demo.tiny import build_tiny_checkpoint

            build_tiny_checkpoint(source, tokenizer="sentencepiece", vocab_size=30000, **ALBERT_BASE)
    ckpt = args.work / f"planted-{args.plant}-{args.factor:g}x"
    if not ckpt.exists():
        plant = plant_residual if args.plant == "residual" else plant_exact
        planted_checkpoint(source, ckpt, args.factor, plant)
    print(f"{'mode':<6}{'file':<12}{'SQNR':>8}{'lowest':>9}{'agree':>9}{'accuracy (fp32)':>20}{'bytes':>12}"
          f"{'RAM MiB':>9}{'export s':>9}  verdict")
    for mode in [Repair(m) for m in args.modes.split(",")]:
        out = args.work / f"out-{args.plant}-{mode.value}"
        t0 = time.monotonic()
        try:
            report = export(ckpt, out, ExportOptions(data=args.data, repair=mode, overwrite=True), Progress()).report
        except ParityError:
            report = json.loads((out / "report.failed.json").read_text())
        seconds = time.monotonic() - t0
        for a in report["artifacts"]:
            print(_row(mode.value, a, seconds))
        if report.get("repair"):
            print(json.dumps(report["repair"]))
    if args.bench:
        _bench(ckpt, args)


def _bench(ckpt: Path, args) -> None:
    """Plain (exported again with no gate where it was refused) and repaired artifacts at 128 tokens."""
    from mobile_export.core.thresholds import Thresholds
    from mobile_export.measure.bench import bench

    plain = args.work / f"out-{args.plant}-off"
    if not (plain / "manifest.json").exists():
        plain = args.work / f"out-{args.plant}-plain-ungated"
        export(ckpt, plain, ExportOptions(data=args.data, repair=Repair.OFF, thresholds=Thresholds(),
                                          measure_memory=False, overwrite=True))
    repaired = args.work / f"out-{args.plant}-auto"
    files = [str(d / f) for d in (plain, repaired) for f in ("model.pte", "model.onnx")]
    result = bench(files, None, [128], [2], runs=30)
    print(f"{'artifact':<40}{'precision':>10}{'median ms':>11}{'p90 ms':>9}{'load ms':>9}{'model RAM MiB':>15}")
    for r in result["results"]:
        lat = r["latency_ms"]["128"]
        ram = (r.get("model_rss_bytes") or 0) / 2**20
        print(f"{r['path'].split(str(args.work) + '/')[-1]:<40}{r.get('precision', '-'):>10}{lat['median']:>11.2f}"
              f"{lat['p90']:>9.2f}{r['load_seconds'] * 1000:>9.0f}{ram:>15.1f}")
    print(json.dumps(result["machine"]))


if __name__ == "__main__":
    main()
