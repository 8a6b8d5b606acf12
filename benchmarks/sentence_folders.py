"""A trained encoder as a sentence-transformers folder, exported with no flags, against the library's own encode.

    python benchmarks/sentence_folders.py [--out out/trained] [--model all-minilm-l6-v2 ...] [--backend onnx ...]

``trained_encoders.py fetch`` writes the trained encoder as a transformers folder; this saves it as
sentence-transformers saves a model (its Transformer at ``--length`` tokens, the Pooling its model card names,
Normalize: the library 6's layout, the tokenizer as ``tokenizer.json`` alone), then runs ``mobile-export export
FOLDER --out ... --backend ...`` with no other flag (default: the .pte, the .onnx and the .tflite). Each artifact
embeds the ~300 texts in its own runtime (``mobile_export.load``); against ``SentenceTransformer.encode``'s vectors it
prints each file's bytes, every text's cosine (min, mean) and retrieval agreement (as ``trained_encoders.py``), and
what the export said it read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trained_encoders import MODELS, agreement, fetch, texts_for  # noqa: E402

FORMATS = ("executorch", "onnx", "litert")


def sentence_folder(ckpt: Path, dest: Path, pooling: str, length: int) -> Path:
    """``ckpt`` saved by sentence-transformers as a folder of modules (written once)."""
    if (dest / "modules.json").is_file():
        return dest
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(ckpt), max_seq_length=length)
    pool = Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling)
    SentenceTransformer(modules=[transformer, pool, Normalize()], device="cpu").save(str(dest))
    return dest


def bench(name: str, out: Path, formats: list[str], length: int) -> dict:
    """Export ``name``'s sentence-transformers folder with no flags; each format's vectors against the library's."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from mobile_export import load

    spec = MODELS[name]
    folder = sentence_folder(fetch(name, out), out / f"{name}-st", spec.pooling, length)
    texts = texts_for(chinese="zh" in name)
    want = SentenceTransformer(str(folder), device="cpu").encode(texts, batch_size=16)
    dest = out / f"{name}-st-export"
    cli = str(Path(sys.executable).parent / "mobile-export")
    command = [cli, "export", str(folder), "--out", str(dest), "--overwrite"]
    for f in formats:
        command += ["--backend", f]
    done = subprocess.run(command, capture_output=True, text=True)
    said = [line for line in done.stderr.splitlines() if "read pooling" in line]
    print(f"{name}: exit {done.returncode}; {said[0].split('] ', 1)[-1] if said else 'read nothing'}", flush=True)
    if done.returncode:
        print(done.stdout + done.stderr[-2000:])
        return {}
    head = json.loads((dest / "manifest.json").read_text())["head"]
    results: dict = {"head": head}
    for f in formats:
        predictor = load(dest, backend=f)
        got = np.stack([predictor.encode(t).vector.reshape(-1) for t in texts])
        found = agreement(want, got)
        path = predictor.path
        found["bytes"] = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
        results[f] = found
        print(f"  {f:10s} {path.name:14s} {found['bytes']:>12,} B  cos min {found['cos_min']:.4f} mean "
              f"{found['cos_mean']:.4f}  retrieval {found['retrieval']} ({found['retrieval_share']:.1%})", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    """Fetch, save as sentence-transformers folders, export with no flags, and compare; print one line per file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out/trained"))
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    parser.add_argument("--backend", action="append", choices=FORMATS)
    parser.add_argument("--length", type=int, default=256, help="the folder's max_seq_length (all-MiniLM-L6-v2's)")
    args = parser.parse_args(argv)
    for name in args.model or ["all-minilm-l6-v2"]:
        bench(name, args.out, args.backend or list(FORMATS), args.length)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
