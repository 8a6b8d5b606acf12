"""An XLM-R sentence encoder in paraphrase-multilingual-MiniLM-L12-v2's shape, as a phone holds and runs it.

    python benchmarks/xlmr_minilm.py [--out out/xlmr-minilm] [--optimum out/xlmr-minilm/optimum] [--threads 2]

Builds a seeded random ``XLMRobertaModel`` (no hub here) in that checkpoint's shape: hidden 384, 12 layers, 12
heads, intermediate 1536, 514 positions, and a 250,002-token vocabulary whose SentencePiece model is real in kind
(a unigram model trained here on the built-in texts, then grown with synthetic pieces of several scripts to
250,000 pieces, so that the tokenizer assets an app carries have a real vocabulary's size). Exports it as a
sentence encoder (``--task feature-extraction --pooling mean --normalize``) to int8, int8 with
``--keep-fp32-embeddings`` and int4 (.pte and .onnx, max length 128, gates off: random weights), and prints each
file's bytes by part, deflated bytes and RAM. With ``--optimum DIR`` (``benchmarks/optimum_baseline.sh CKPT DIR
feature-extraction`` made it), runs ``mobile-export bench`` over ours and optimum's int8 at 128 tokens in one
harness run. Numbers: BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SHAPE = dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=12, intermediate_size=1536,
             max_position_embeddings=512, initializer_range=0.02)
PIECES = 250_000  # SentencePiece pieces; XLM-R's tokenizer adds <pad> by fairseq's shift and <mask>: 250,002
GATES_OFF = ["--min-agreement", "0", "--min-sqnr", "-1000", "--min-example-sqnr", "-1000", "--repair", "off"]
VARIANTS = {"int8": ["--quant", "int8"], "int8-fp32-table": ["--quant", "int8", "--keep-fp32-embeddings"],
            "int4": ["--quant", "int4"]}
# code point ranges the synthetic pieces are drawn from: Latin, Cyrillic, Greek, Arabic, Devanagari, CJK, Hangul
_SCRIPTS = [(0x61, 26), (0x430, 32), (0x3B1, 25), (0x628, 20), (0x915, 37), (0x4E00, 2000), (0xAC00, 2000)]


def grow_sentencepiece(model: Path, pieces: int) -> None:
    """Add synthetic normal pieces (1-3 characters of one script, after ``▁`` or not, scores below every trained
    piece) to the SentencePiece model at ``model`` until it has ``pieces``."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString(model.read_bytes())
    seen = {p.piece for p in proto.pieces}
    lowest = min(p.score for p in proto.pieces if p.type == 1)
    i = 0
    while len(proto.pieces) < pieces:
        first, count = _SCRIPTS[i % len(_SCRIPTS)]
        n, chars = i // len(_SCRIPTS), []
        for _ in range(1 + (i // 7) % 3):
            chars.append(chr(first + n % count))
            n //= count
        text = ("▁" if i % 2 else "") + "".join(chars)
        i += 1
        if text in seen:
            continue
        seen.add(text)
        piece = proto.pieces.add()
        piece.piece, piece.score, piece.type = text, lowest - 1 - i * 1e-4, 1
    model.write_bytes(proto.SerializeToString())


def build(ckpt: Path) -> None:
    """The checkpoint: tiny builder's XLM-R with the shape above, its SentencePiece grown to ``PIECES``."""
    from mobile_export.demo.tiny import build_tiny_checkpoint

    build_tiny_checkpoint(ckpt, "feature-extraction", "xlmr", 0, family="xlm-roberta", **SHAPE)
    grow_sentencepiece(ckpt / "sentencepiece.bpe.model", PIECES)
    for stale in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (ckpt / stale).unlink(missing_ok=True)
    from transformers import AutoConfig, AutoModel, XLMRobertaTokenizer

    tok = XLMRobertaTokenizer.from_pretrained(str(ckpt))
    tok.save_pretrained(str(ckpt))
    (ckpt / "tokenizer.json").unlink(missing_ok=True)
    config = AutoConfig.from_pretrained(str(ckpt))
    config.vocab_size = len(tok)
    import torch

    torch.manual_seed(0)
    AutoModel.from_config(config).eval().save_pretrained(str(ckpt))
    print(f"{ckpt}: vocabulary {len(tok):,}", flush=True)


def parts(out: Path) -> list[dict]:
    """Each artifact's file bytes, parts, deflated bytes and RAM from report.json."""
    report = json.loads((out / "report.json").read_text())
    rows = []
    for a in report["artifacts"]:
        size = a["size"]
        memory = size.get("memory") or {}
        rows.append({"file": a["file"], "bytes": size["bytes"], "deflate": size.get("deflate_bytes"),
                     "bundle_assets": size.get("bundle_bytes"), "parts": size.get("groups"),
                     "model_rss_mib": round(memory.get("model_rss_bytes", 0) / 2**20, 1),
                     "ram_x_file": round(memory.get("model_rss_bytes", 0) / size["bytes"], 2)})
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="out/xlmr-minilm")
    p.add_argument("--optimum", help="optimum_baseline.sh's output folder: benchmarked beside ours")
    p.add_argument("--threads", default="2")
    p.add_argument("--runs", default="15")
    a = p.parse_args()
    out = Path(a.out)
    ckpt = out / "checkpoint"
    if not (ckpt / "config.json").is_file():
        build(ckpt)
    for name, flags in VARIANTS.items():
        dest = out / name
        if not (dest / "report.json").is_file():
            cmd = [sys.executable, "-m", "mobile_export", "export", str(ckpt), "--out", str(dest), "--pooling",
                   "mean", "--normalize", "--max-seq-len", "128", "--overwrite", *flags, *GATES_OFF]
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
        print(json.dumps({name: parts(dest)}, indent=1), flush=True)
    if a.optimum:
        cmd = [sys.executable, "-m", "mobile_export", "bench", str(out / "int8" / "model.pte"),
               str(out / "int8" / "model.onnx"), str(out / "int4" / "model.pte"), str(out / "int4" / "model.onnx"),
               str(Path(a.optimum) / "int8" / "model_quantized.onnx"), "--checkpoint", str(ckpt), "--seq-lens",
               "128", "--threads", a.threads, "--runs", a.runs, "--json", str(out / "bench.json")]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
