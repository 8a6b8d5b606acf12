"""The NPU file at albert-base-v2's shape against the CPU's int8 .onnx, and what QNN's compiled context holds.

    python benchmarks/npu.py [--out out/npu] [--socs SM8650,SM8750] [--npu-lengths 16,32,64]

Builds a seeded random albert-base-v2-shaped classifier (no hub here: 30,000-token WordPiece vocabulary, hidden 768,
12 layers sharing one, embedding 128, 2 labels), exports it with default options to the CPU's int8 .onnx and to the
NPU's .qnn.onnx precompiled for ``--socs`` (the gates off: random 12-layer weights make top-1 agreement meaningless;
SQNR is still the real runtime against fp32 PyTorch), then prints the bytes of each file, the ratio the NPU issue
bounds (<= 1.25x), and the context of the same QDQ model with each layer's copy of the shared weights made distinct
(every byte shifted per copy), which shows whether QNN's context holds the shared weights once. With
``--npu-lengths``, also the QDQ file holding a graph for each of those lengths: its bytes against its own graph's
alone (the file less the shorter graphs' entry: the one-length file's), and each graph's parity on its own texts.
Numbers: BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path

SHAPE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
             max_position_embeddings=512, initializer_range=0.02, num_labels=2, wordpiece_size=30000,
             embedding_size=128, hidden_act="gelu_new",
             id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1})
GATES_OFF = ["--min-agreement", "0", "--min-sqnr", "-1000", "--min-example-sqnr", "-1000", "--repair", "off"]


def distinct_copies(src: Path, dest: Path) -> int:
    """``src`` with every weight a DequantizeLinear hands to several nodes given one distinct copy per node; the
    bytes the copies add."""
    import numpy as np
    import onnx

    model = onnx.load(str(src))
    inits = {t.name: t for t in model.graph.initializer}
    users = collections.defaultdict(list)
    for n in model.graph.node:
        for i in n.input:
            users[i].append(n)
    added, copies = 0, []
    for n in list(model.graph.node):
        if n.op_type != "DequantizeLinear" or n.input[0] not in inits or len(users[n.output[0]]) < 2:
            continue
        for j, user in enumerate(users[n.output[0]][1:], 1):
            t = onnx.TensorProto()
            t.CopyFrom(inits[n.input[0]])
            t.name = f"{t.name}.copy{j}"
            # every byte changed: equal initializers are folded before QNN sees them, and QNN's context stores
            # weights that differ in one byte in about a quarter of their size (measured: blocks shared)
            data = (np.frombuffer(t.raw_data, np.uint8) + np.uint8(j)).tobytes()
            t.raw_data = data
            model.graph.initializer.append(t)
            added += len(data)
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            dq = onnx.helper.make_node("DequantizeLinear", [t.name, *n.input[1:]], [f"{n.output[0]}.copy{j}"], **attrs)
            copies.append(dq)
            user.input[list(user.input).index(n.output[0])] = dq.output[0]
    nodes = copies + list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.save(model, str(dest))
    return added


def lengths_report(folder: Path, report: dict) -> None:
    """The several-length file's bytes against its own graph's alone, and each graph's parity on its own texts."""
    from mobile_export.backends import length_graphs

    art = report["artifacts"][0]
    graphs = length_graphs(folder / art["file"])
    stored = sum(graphs.values())
    print(f"several lengths {sorted([*graphs, art['stats']['qnn']['sequence_length']])}: {art['bytes']:,} B; "
          f"the shorter graphs {stored:,} B ({', '.join(f'{n}: {b:,}' for n, b in graphs.items())}); "
          f"{art['bytes'] / (art['bytes'] - stored):.3f}x the file of its own graph alone")
    for b in art["parity"]["by_length"]:
        print(f"  graph {b['bucket']}: {b['examples']} texts, {b['sqnr_db']:.1f} dB, decisive agreement "
              f"{b.get('decisive_agreement')}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="out/npu")
    p.add_argument("--socs", default="SM8650,SM8750")
    p.add_argument("--npu-lengths", default=None, help="also export the QDQ file with these shorter lengths")
    a = p.parse_args()
    from mobile_export.backends.qnn import htp
    from mobile_export.backends.qnn.socs import SIMULATED
    from mobile_export.demo.tiny import build_tiny_checkpoint

    out = Path(a.out)
    ckpt = out / "checkpoints" / "albert-base-v2"
    if not (ckpt / "config.json").is_file():
        print("building albert-base-v2 (albert) ...", flush=True)
        build_tiny_checkpoint(ckpt, "text-classification", "wordpiece", 0, family="albert", **SHAPE)
    runs = {"onnx": ["--backend", "onnx"], "qnn": ["--backend", "qnn", "--soc", a.socs]}
    if a.npu_lengths:
        runs["qnn-lengths"] = ["--backend", "qnn", "--npu-lengths", a.npu_lengths]
    for name, args in runs.items():
        dest = out / name
        if not (dest / "report.json").is_file():
            cmd = [sys.executable, "-m", "mobile_export", "export", str(ckpt), "--out", str(dest), *args, "--no-memory",
                   "--overwrite", *GATES_OFF]
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
    reports = {n: json.loads((out / n / "report.json").read_text()) for n in runs}
    cpu, npu = reports["onnx"]["artifacts"][0], reports["qnn"]["artifacts"][0]
    print(f"CPU int8 .onnx (+ .data): {cpu['bytes']:,} B, SQNR {cpu['parity']['sqnr_db']:.1f} dB")
    print(f"NPU .qnn.onnx: {npu['bytes']:,} B ({npu['bytes'] / cpu['bytes']:.3f}x the CPU file), SQNR "
          f"{npu['parity']['sqnr_db']:.1f} dB on {npu['parity']['n_examples']} texts; sharing: "
          f"{npu['size']['sharing_verdict']}; export timings {reports['qnn'].get('timings')}")
    for c in npu["stats"].get("precompiled", []):
        print(f"  {c['file']}: {c['bytes']:,} B for {c['soc']}, compiled in {c['compile_seconds']} s, loads in "
              f"{c['load_seconds']} s")
    if a.npu_lengths:
        lengths_report(out / "qnn-lengths", reports["qnn-lengths"])
    distinct = out / "distinct.qnn.onnx"
    added = distinct_copies(out / "qnn" / "model.qnn.onnx", distinct)
    contexts = []
    for src in (out / "qnn" / "model.qnn.onnx", distinct):
        dest = out / f"{src.stem}.ctx.onnx"
        dest.unlink(missing_ok=True)
        htp.compile_context(src, dest, SIMULATED)
        contexts.append(dest.stat().st_size)
    print(f"context for {SIMULATED.name}: {contexts[0]:,} B; with each layer's copy of the shared weights distinct "
          f"(+{added:,} B of weights in the QDQ model): {contexts[1]:,} B (+{contexts[1] - contexts[0]:,} B)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
