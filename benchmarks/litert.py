"""The .tflite in MediaPipe Tasks Text, against fp32 PyTorch: what an app that only has MediaPipe gets.

    python benchmarks/litert.py classify EXPORT_DIR CHECKPOINT DATA.tsv [--limit N]
    python benchmarks/litert.py embed EXPORT_DIR CHECKPOINT TEXTS.txt [--limit N] [--pooling mean|cls]
    python benchmarks/litert.py recipes CHECKPOINT DATA.tsv [--limit N] [--length 128]

``classify``: each text of the TSV (label, text) given as it is to MediaPipe's ``TextClassifier`` loaded from the
export's ``model.tflite`` (MediaPipe tokenizes and truncates with the tokenizer in the file's metadata); fp32 is the
checkpoint in PyTorch on transformers' tokens truncated to the file's length; our runtime is LiteRT's interpreter on
those tokens (``mobile_export.load``). Prints the share of decisive texts (fp32's top logit ahead of its second by
``--margin``) on which MediaPipe's label is fp32's, the same for our runtime, MediaPipe's scores against our
runtime's (the same file: they differ only where the tokenizers do), and accuracy against the labels.
``embed``: ``TextEmbedder`` on each line of the file against fp32's vectors: every text's cosine (min, mean).
``recipes``: the checkpoint converted by litert-torch as it comes (its default output), then each of
litert-quantizer's int8 recipes on it, and what our lowering adds (query/key/value unfolded, equal buffers once,
short tensor names): bytes, SQNR against fp32 on the texts (truncated to the length), and the interpreter's median
latency per text at that length on one thread (XNNPACK).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def _reference(checkpoint: str, length: int):
    from mobile_export.model.loading import load_checkpoint
    from mobile_export.model.reference import EagerRunner, tokenize

    loaded = load_checkpoint(checkpoint)
    runner = EagerRunner(loaded)
    return loaded, runner, lambda texts: tokenize(loaded.tokenizer, texts, length)


def _texts(path: str, limit: int | None, tsv: bool) -> tuple[list[str], list[str]]:
    labels, texts = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        label, _, text = line.partition("\t") if tsv else ("", "", line)
        labels.append(label)
        texts.append(text)
    return texts[:limit], labels[:limit]


def classify(args: argparse.Namespace) -> None:
    from mediapipe.tasks.python import text as mp_text
    from mediapipe.tasks.python.core.base_options import BaseOptions

    from mobile_export import backends
    from mobile_export.backends import Backend

    path = Path(args.export) / "model.tflite"
    ours = backends.load(Backend.LITERT).Runner(path)
    loaded, fp32, tokenize = _reference(args.checkpoint, ours.length)
    texts, gold = _texts(args.data, args.limit, tsv=True)
    names = list(loaded.config.id2label.values())
    options = mp_text.TextClassifierOptions(base_options=BaseOptions(model_asset_path=str(path)), max_results=-1)
    classifier = mp_text.TextClassifier.create_from_options(options)
    rows = []
    try:
        for text, example in zip(texts, tokenize(texts)):
            ref = fp32.run(example.feeds)[0][0]
            mine = ours.run(example.feeds)[0][0]
            cats = sorted(classifier.classify(text).classifications[0].categories, key=lambda c: c.index)
            mp = np.array([c.score for c in cats])
            rows.append((ref, mine, mp))
    finally:
        classifier.close()
    ref, mine, mp = (np.stack(x) for x in zip(*rows))
    top2 = np.sort(ref, axis=1)[:, -2:]
    decisive = (top2[:, 1] - top2[:, 0]) >= args.margin
    agree = lambda a: float((a.argmax(1) == ref.argmax(1))[decisive].mean())  # noqa: E731
    same = np.abs(mp - mine).max(1)
    print(f"{path}: {len(texts)} texts, {int(decisive.sum())} decisive (fp32 margin >= {args.margin})")
    print(f"  MediaPipe TextClassifier label = fp32's on {agree(mp):.2%} of decisive texts")
    print(f"  LiteRT interpreter (our tokens) = fp32's on {agree(mine):.2%} of decisive texts")
    print(f"  MediaPipe vs our runtime, same file: max |score diff| {same.max():.2e}; "
          f"{int((same > 1e-3).sum())} texts differ by > 1e-3 (their tokens differ)")
    if all(gold):
        index = {n: k for k, n in enumerate(names)}
        truth = np.array([index.get(g, -1) for g in gold])
        for name, a in (("fp32", ref), ("MediaPipe", mp), ("LiteRT", mine)):
            print(f"  accuracy {name}: {float((a.argmax(1) == truth).mean()):.2%}")


def embed(args: argparse.Namespace) -> None:
    from mediapipe.tasks.python import text as mp_text
    from mediapipe.tasks.python.core.base_options import BaseOptions

    path = Path(args.export) / "model.tflite"
    texts, _ = _texts(args.data, args.limit, tsv=False)
    if args.pooling:  # a sentence encoder's checkpoint (a BertModel): transformers' vectors, pooled as its card says
        from trained_encoders import reference

        refs = list(reference(Path(args.checkpoint), texts, args.pooling))
    else:
        _, fp32, tokenize = _reference(args.checkpoint, args.length)
        refs = [fp32.run(example.feeds)[0][0] for example in tokenize(texts)]
    options = mp_text.TextEmbedderOptions(base_options=BaseOptions(model_asset_path=str(path)))
    embedder = mp_text.TextEmbedder.create_from_options(options)
    cosines = []
    try:
        for text, ref in zip(texts, refs):
            got = np.asarray(embedder.embed(text).embeddings[0].embedding, np.float64)
            cosines.append(float(ref @ got / (np.linalg.norm(ref) * np.linalg.norm(got))))
    finally:
        embedder.close()
    c = np.array(cosines)
    print(f"{path}: MediaPipe TextEmbedder vs fp32 on {len(c)} texts: cosine min {c.min():.4f}, mean {c.mean():.4f}")
    plain = np.array([t.isascii() for t in texts])
    if plain.any() and not plain.all():  # MediaPipe's WordPiece keeps accents that BERT's uncased normalizer strips
        print(f"  on the {int(plain.sum())} texts of ASCII characters only: cosine min {c[plain].min():.4f}")
    for k in np.argsort(c)[:5]:  # the worst texts: where MediaPipe's tokens differ, if anywhere
        print(f"  {c[k]:.4f}  {texts[k][:100]!r}")


def recipes(args: argparse.Namespace) -> None:
    import tempfile
    import time

    import torch

    from mobile_export.backends.litert import flatbuffer
    from mobile_export.backends.litert.inputs import Int32Inputs
    from mobile_export.backends.litert.lowering import _linear_weights, _quantized, _quiet
    from mobile_export.backends.litert.unfold import unfold
    from mobile_export.model.reference import ExportWrapper

    loaded, fp32, tokenize = _reference(args.checkpoint, args.length)
    texts, _ = _texts(args.data, args.limit, tsv=True)
    examples = tokenize(texts)
    refs = [fp32.run(e.feeds)[0][0] for e in examples]
    module = Int32Inputs(ExportWrapper(loaded.model, loaded.task).eval(), loaded.family.signature.inputs).eval()
    example = {n: torch.ones(1, args.length, dtype=torch.int32) for n in ("ids", "mask", "segment_ids")}
    tmp = Path(tempfile.mkdtemp())
    with _quiet(), torch.no_grad():
        import litert_torch

        litert_torch.convert(module, sample_kwargs=example).export(str(tmp / "default.tflite"))
    model = flatbuffer.read((tmp / "default.tflite").read_bytes(), "default")
    unfold(model, _linear_weights(module))
    flatbuffer.dedupe(model)
    flatbuffer.short_names(model)
    (tmp / "ours.tflite").write_bytes(flatbuffer.write(model))
    files = {"litert-torch default (fp32)": (tmp / "default.tflite").read_bytes()}
    for recipe in ("dynamic_wi8_afp32", "weight_only_wi8_afp32"):
        files[f"litert-torch + {recipe}"] = _quantized(tmp / "default.tflite", recipe)
        quantized = flatbuffer.read(_quantized(tmp / "ours.tflite", recipe), recipe)
        flatbuffer.short_names(quantized)
        files[f"ours: {recipe}"] = flatbuffer.write(quantized)
    from ai_edge_litert import interpreter

    print(f"{args.checkpoint}: {len(texts)} texts at {args.length} tokens")
    for name, data in files.items():
        path = tmp / "x.tflite"
        path.write_bytes(data)
        runner = interpreter.Interpreter(model_path=str(path), num_threads=1).get_signature_runner()
        outs, times = [], []
        for e in examples:
            feeds = {}
            for ours, theirs in (("ids", "input_ids"), ("mask", "attention_mask"), ("segment_ids", "token_type_ids")):
                row = np.zeros((1, args.length), np.int32)
                row[0, : e.length] = e.feeds[theirs][0]
                feeds[ours] = row
            t0 = time.perf_counter()
            outs.append(np.asarray(runner(**feeds)["output_0"])[0])
            times.append(time.perf_counter() - t0)
        err = np.stack(outs) - np.stack(refs)
        sqnr = 10 * np.log10(np.sum(np.stack(refs) ** 2) / max(float(np.sum(err**2)), 1e-30))
        print(f"  {name:40s} {len(data):>12,} B  SQNR {sqnr:5.1f} dB  {1000 * float(np.median(times)):7.2f} ms/text")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("classify", "embed", "recipes"):
        p = sub.add_parser(name)
        if name != "recipes":
            p.add_argument("export")
        p.add_argument("checkpoint")
        p.add_argument("data")
        p.add_argument("--limit", type=int)
        p.add_argument("--margin", type=float, default=0.5, help="fp32's top-1 logit lead that makes a text decisive")
        p.add_argument("--length", type=int, default=128, help="embed: the file's length (fp32 truncated to it)")
        p.add_argument("--pooling", choices=("mean", "cls"), help="embed: a sentence encoder's pooling (its card's)")
    args = parser.parse_args(argv)
    {"classify": classify, "embed": embed, "recipes": recipes}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
