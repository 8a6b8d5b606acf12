"""Plain int8 against ``--repair`` on a checkpoint given outlier channels (numbers in BENCHMARKS.md, "int8
outlier channels").

    python benchmarks/outlier_repair.py CHECKPOINT --factor 50 --data FILE --work DIR [--plant residual]

``--plant exact`` (default): the channels of ``tests/outlier_models.PLANTED`` are scaled up by ``--factor`` in the
embeddings LayerNorm and the value projection, and down in the weights that read them (the fp32 function is
unchanged). ``--plant residual``: scaled up in the shared layer's last LayerNorm (the residual stream; no exact
fold exists, and the fp32 model is another one). The planted checkpoint is then exported twice
with default thresholds: ``--repair off`` (the plain artifacts' numbers are read from report.failed.json when
the gate refuses them) and ``--repair auto``. Prints, per artifact: SQNR, lowest example, decisive agreement,
accuracy (fp32's in brackets), bytes, model RAM after load + one run, and the export's wall time.
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
from mobile_export.core.config import Repair  # noqa: E402
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
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("--factor", type=float, default=50.0)
    ap.add_argument("--data")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--modes", default="off,auto", help="--repair values to export with, in order")
    ap.add_argument("--plant", choices=("exact", "residual"), default="exact")
    args = ap.parse_args()
    ckpt = args.work / f"planted-{args.plant}-{args.factor:g}x"
    if not ckpt.exists():
        plant = plant_residual if args.plant == "residual" else plant_exact
        planted_checkpoint(args.checkpoint, ckpt, args.factor, plant)
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


if __name__ == "__main__":
    main()
