"""What pre-training and fine-tuning share: encoded rows, length-bucketed batches, the schedule, one step."""

from __future__ import annotations

import random


def encode(tok, rows, max_len: int) -> list:
    """Token ids of each row's text, with its label."""
    enc = tok([t for t, _ in rows], truncation=True, max_length=max_len)
    return [(ids, y) for ids, (_, y) in zip(enc["input_ids"], rows)]


def demo_config(vocab_size: int, max_len: int):
    """The demo model's AlbertConfig (albert_chinese_tiny's shape, 2 labels)."""
    from transformers import AlbertConfig

    from .data import LABELS

    config = AlbertConfig(  # type: ignore[call-arg]  # num_labels and the label maps go to PretrainedConfig
        vocab_size=vocab_size,
        embedding_size=128,
        hidden_size=312,
        num_hidden_layers=4,
        num_attention_heads=12,
        intermediate_size=1248,
        max_position_embeddings=max_len,
        type_vocab_size=2,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        classifier_dropout_prob=0.1,
        initializer_range=0.02,
        pad_token_id=0,
        num_labels=2,
        id2label=dict(enumerate(LABELS)),
        label2id={name: i for i, name in enumerate(LABELS)},
    )
    config.architectures = ["AlbertForSequenceClassification"]
    return config


def batches(rows, batch_size: int, shuffle: bool):
    """Length-bucketed padded batches: (ids, mask, labels), or (ids, mask, (labels, teacher probabilities))
    for rows that carry the teacher's soft labels."""
    import torch

    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    chunks = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
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


def accuracy(model, rows, batch_size: int) -> float:
    """Accuracy of ``model`` on encoded rows."""
    import torch

    model.eval()
    right = 0
    with torch.no_grad():
        for ids, mask, y in batches(rows, batch_size, False):
            right += int((model(input_ids=ids, attention_mask=mask).logits.argmax(-1) == y).sum())
    model.train()
    return right / len(rows)


def schedule(opt, total_steps: int, warmup: int):
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total_steps``."""
    import torch

    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (total_steps - s) / max(1, total_steps - warmup))
    )


def update(net, loss, opt, sched) -> None:
    """One optimizer step with gradient clipping at 1.0."""
    import torch

    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()
    sched.step()
