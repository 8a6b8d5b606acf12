"""ALBERT against BERT as a phone holds and runs them: base-size checkpoints of both, exported and compared.

    python benchmarks/families.py [--out out/families] [--quants int8,int4] [--pairs chinese,english]
        [--compare] [--threads 2] [--runs 15]

Builds seeded random checkpoints (no hub here) in the shapes of bert-base-chinese and albert_chinese_base (the
same 21,128-token vocabulary), and of bert-base-uncased (30,522) and albert-base-v2 (30,000), as sequence
classifiers with 2 labels and 512 positions; exports each to int8 and int4 .pte and .onnx (max length 512; the
gates off: random 12-layer weights make top-1 agreement meaningless, see BENCHMARKS.md); then, with
``--compare``, runs ``mobile-export compare`` over every export (128 and 512 tokens). Numbers: BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BASE = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
            max_position_embeddings=512, initializer_range=0.02, num_labels=2,
            id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1})
SHAPES = {
    "chinese": {
        "bert-base-chinese": ("bert", dict(BASE, wordpiece_size=21128)),
        "albert_chinese_base": ("albert", dict(BASE, wordpiece_size=21128, embedding_size=128, hidden_act="gelu_new")),
    },
    "english": {
        "bert-base-uncased": ("bert", dict(BASE, wordpiece_size=30522)),
        "albert-base-v2": ("albert", dict(BASE, wordpiece_size=30000, embedding_size=128, hidden_act="gelu_new")),
    },
}
GATES_OFF = ["--min-agreement", "0", "--min-sqnr", "-1000", "--min-example-sqnr", "-1000", "--repair", "off"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="out/families")
    p.add_argument("--quants", default="int8,int4")
    p.add_argument("--pairs", default="chinese,english")
    p.add_argument("--compare", action="store_true")
    p.add_argument("--threads", default="2")
    p.add_argument("--runs", default="15")
    a = p.parse_args()
    from mobile_export.demo.tiny import build_tiny_checkpoint

    out = Path(a.out)
    exports = []
    for pair in a.pairs.split(","):
        for name, (family, shape) in SHAPES[pair].items():
            ckpt = out / "checkpoints" / name
            if not (ckpt / "config.json").is_file():
                print(f"building {name} ({family}) ...", flush=True)
                build_tiny_checkpoint(ckpt, "text-classification", "wordpiece", 0, family=family, **shape)
            for quant in a.quants.split(","):
                dest = out / f"{name}-{quant}"
                exports.append(dest)
                if (dest / "report.json").is_file():
                    continue
                cmd = [sys.executable, "-m", "mobile_export", "export", str(ckpt), "--out", str(dest), "--quant", quant,
                       "--max-seq-len", "512", "--no-memory", "--overwrite", *GATES_OFF]
                print(" ".join(cmd), flush=True)
                subprocess.run(cmd, check=True)
    if a.compare:
        cmd = [sys.executable, "-m", "mobile_export", "compare", *map(str, exports), "--seq-lens", "128,512",
               "--threads", a.threads, "--runs", a.runs, "--json", str(out / "compare.json"),
               "--md", str(out / "compare.md")]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
