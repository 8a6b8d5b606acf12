"""Scale study: how file size, export time and latency grow with model size and sequence length.

    .venv/bin/python benchmarks/scale_study.py --out out/scale [--shapes base,large] [--seq-lens 16,128,512]

For each ALBERT shape (random weights, seeded; the layer count is the shape's own) it exports int8 .pte
and .onnx with ``mobile_export.export`` (parity thresholds off: random weights), then runs
``mobile_export.measure.bench`` (fresh process per artifact and thread count, PyTorch fp32 eager in the same
run). Writes ``scale.json`` and ``scale.png`` into ``--out`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SHAPES = {  # the public albert-*-v2 configs (vocab 30000, embedding 128, 512 positions)
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "xlarge": dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192),
}
COMMON = dict(vocab_size=30000, embedding_size=128, max_position_embeddings=512, hidden_act="gelu_new")


def main(argv: list[str] | None = None) -> int:
    from mobile_export import Backend, ExportOptions, Quant, Thresholds, export
    from mobile_export.core.quiet import quiet_libraries
    from mobile_export.demo.tiny import build_tiny_checkpoint
    from mobile_export.measure.bench import bench, table

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--shapes", default="base,large")
    p.add_argument("--seq-lens", default="16,128,512")
    p.add_argument("--threads", default="2")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--backends", default="executorch,onnx")
    a = p.parse_args(argv)
    quiet_libraries()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    seqs = [int(s) for s in a.seq_lens.split(",")]
    threads = [int(t) for t in a.threads.split(",")]
    results = []
    for shape in a.shapes.split(","):
        ck = out / f"albert-{shape}"
        if not (ck / "config.json").exists():
            build_tiny_checkpoint(ck, task="text-classification", **COMMON, **SHAPES[shape])
        exp_dir = out / f"albert-{shape}-int8"
        if not (exp_dir / "report.json").exists():
            t0 = time.time()
            export(str(ck), exp_dir, ExportOptions(
                backends=tuple(Backend(b) for b in a.backends.split(",")), quant=Quant.INT8,
                max_seq_len=max(seqs), measure_memory=False, overwrite=True,
                thresholds=Thresholds(min_agreement=0.0, min_sqnr_db=-1e9)))
            print(f"{shape}: exported in {time.time() - t0:.0f} s", flush=True)
        report = json.loads((exp_dir / "report.json").read_text())  # an earlier export is reused
        arts = [str(exp_dir / x["file"]) for x in report["artifacts"]]
        cached = out / f"albert-{shape}-bench.json"  # delete it to measure again
        b = json.loads(cached.read_text()) if cached.exists() else None
        if b is None or b["seq_lens"] != seqs or b["threads"] != threads:
            b = bench(arts, str(ck), seqs, threads, runs=a.runs, say=lambda m: print(m, flush=True))
            cached.write_text(json.dumps(b) + "\n")
        results.append({"shape": shape, "config": SHAPES[shape], "unique_parameters": report["model"]["unique_parameters"],
                        "artifacts": [{"name": x["file"], "bytes": x["bytes"], "export_seconds": x["export_seconds"],
                                       "sqnr_db": x["parity"]["sqnr_db"]} for x in report["artifacts"]],
                        "bench": b})
        print(table(b), flush=True)
        (out / "scale.json").write_text(json.dumps(results, indent=1) + "\n")
    plot(results, seqs, out / "scale.png")
    print(markdown(results, seqs))
    return 0


def markdown(results: list[dict], seqs: list[int]) -> str:
    lines = ["| shape | artifact | MB | export s | threads | " + " | ".join(f"ms @{s}" for s in seqs)
             + f" | x eager @{seqs[len(seqs) // 2]} |", "|---" * (6 + len(seqs)) + "|"]
    mid = str(seqs[len(seqs) // 2])
    for r in results:
        arts = {x["name"]: x for x in r["artifacts"]}
        for row in r["bench"]["results"]:
            art = arts.get(Path(row["path"]).name, {})
            mb = f"{art['bytes'] / 1e6:.2f}" if art else "-"
            es = f"{art['export_seconds']:.0f}" if art else "-"
            sp = (row.get("speedup_vs_eager") or {}).get(mid)
            lines.append(f"| {r['shape']} | {row['name']} | {mb} | {es} | {row['threads']} | "
                         + " | ".join(f"{row['latency_ms'][str(s)]['median']:.1f}" for s in seqs)
                         + f" | {f'{sp:.2f}x' if sp else '-'} |")
    return "\n".join(lines)


def plot(results: list[dict], seqs: list[int], dest: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for r in results:
        for row in r["bench"]["results"]:
            ys = [row["latency_ms"][str(s)]["median"] for s in seqs]
            ax1.plot(seqs, ys, marker="o", label=f"{r['shape']} {row['name']} ({row['threads']} thr)")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.set_xlabel("sequence length (tokens)")
    ax1.set_ylabel("median latency, batch 1 (ms)")
    ax1.legend(fontsize=6)
    names = sorted({a["name"] for r in results for a in r["artifacts"]})
    for name in names:
        xs = [r["unique_parameters"] / 1e6 for r in results if r["unique_parameters"]]
        ys = [next(a["bytes"] for a in r["artifacts"] if a["name"] == name) / 1e6 for r in results]
        if len(xs) == len(ys):
            ax2.plot(xs, ys, marker="o", label=name)
    ax2.set_xlabel("unique parameters (M)")
    ax2.set_ylabel("file size (MB)")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(dest, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
