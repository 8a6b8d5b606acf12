"""RAM study: resident memory of int8 artifacts against their file size and the layer count.

    .venv/bin/python benchmarks/ram_study.py --out out/ram [--shapes base] [--layers 12,24] [--repeats 3] \
        [--compare DIR ...]

For each ALBERT shape (random seeded weights, vocab 30000, embedding 128, 512 positions) and layer
count it exports int8 .pte and .onnx with ``mobile_export.export`` (parity limits off: a random deep
model is too chaotic for agreement to mean anything), then measures each artifact ``--repeats`` times
with ``mobile_export.measure.memory.measure`` (a fresh process: runtime imported, artifact loaded through its
backend's Runner and run once at 128 tokens) and prints the median as a Markdown table. ``--compare``
adds artifacts exported elsewhere (e.g. by an earlier version) under the folder's name.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from scale_study import COMMON, SHAPES  # noqa: E402


def _bytes(path: Path) -> int:
    from mobile_export.backends import artifact_files

    return sum(f.stat().st_size for f in artifact_files(path))


def measure_all(path: Path, repeats: int) -> dict:
    from mobile_export.measure.memory import measure

    runs = [measure(path, 128).to_dict() for _ in range(repeats)]
    return {k: int(statistics.median(r[k] for r in runs)) for k in runs[0] if k != "seq_len"}


def main(argv: list[str] | None = None) -> int:
    from mobile_export import Backend, ExportOptions, Quant, Thresholds, export
    from mobile_export.core.quiet import quiet_libraries
    from mobile_export.demo.tiny import build_tiny_checkpoint

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--shapes", default="base")
    p.add_argument("--layers", default="", help="layer counts (default: the shape's own)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compare", action="append", default=[], help="a folder with model.pte / model.onnx to add")
    a = p.parse_args(argv)
    quiet_libraries()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for shape in a.shapes.split(","):
        counts = [int(x) for x in a.layers.split(",")] if a.layers else [SHAPES[shape]["num_hidden_layers"]]
        for layers in counts:
            ck = out / f"albert-{shape}-L{layers}"
            if not (ck / "config.json").exists():
                build_tiny_checkpoint(ck, task="text-classification", **COMMON,
                                      **dict(SHAPES[shape], num_hidden_layers=layers))
            dest = out / f"albert-{shape}-L{layers}-int8"
            if not (dest / "report.json").exists():
                t0 = time.time()
                export(str(ck), dest, ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX), quant=Quant.INT8,
                                                    measure_memory=False, overwrite=True,
                                                    thresholds=Thresholds(min_agreement=0.0, min_sqnr_db=-1e9)))
                print(f"{dest.name}: exported in {time.time() - t0:.0f} s", flush=True)
            report = json.loads((dest / "report.json").read_text())
            seconds = {x["file"]: x["export_seconds"] for x in report["artifacts"]}
            for name in ("model.pte", "model.onnx"):
                rows.append({"shape": shape, "layers": layers, "artifact": f"{dest.name}/{name}",
                             "bytes": _bytes(dest / name), "export_seconds": seconds.get(name),
                             **measure_all(dest / name, a.repeats)})
                print(json.dumps(rows[-1]), flush=True)
    for folder in a.compare:
        for name in ("model.pte", "model.onnx"):
            path = Path(folder) / name
            if path.exists():
                rows.append({"shape": "-", "layers": "-", "artifact": f"{Path(folder).name}/{name}",
                             "bytes": _bytes(path), "export_seconds": None, **measure_all(path, a.repeats)})
                print(json.dumps(rows[-1]), flush=True)
    (out / "ram.json").write_text(json.dumps(rows, indent=1) + "\n")
    mib = 2**20
    print("| artifact | file MiB | model RAM MiB | RAM / file | private MiB | artifact pages MiB | "
          "library code MiB | peak over baseline MiB | export s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['artifact']} | {r['bytes'] / mib:.2f} | {r['model_rss_bytes'] / mib:.1f} | "
              f"{r['model_rss_bytes'] / r['bytes']:.2f}x | {r['private_bytes'] / mib:.1f} | {r['artifact_bytes'] / mib:.1f} | "
              f"{r['library_bytes'] / mib:.1f} | {r['peak_over_baseline_bytes'] / mib:.1f} | {r['export_seconds'] or '-'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
