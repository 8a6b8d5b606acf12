"""Masked-LM pre-training of the demo encoder, and saving / loading an encoder."""

from __future__ import annotations

import time

from .steps import batches, schedule, update
from .tiny import SPECIALS_WORDPIECE as SPECIALS


def save_encoder(module, path: str) -> None:
    """Save an encoder's weights (safetensors), the file ``load_encoder`` reads."""
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in module.state_dict().items()}, path)


def load_encoder(module, path: str) -> list[str]:
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


def mask_for_mlm(ids, mask, tok, vocab_size: int):
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


def pretrain(a, config, model, tok, vocab_size: int, train_rows, extra, t_start: float) -> list[dict]:
    """Masked-LM pre-training of the encoder on the training reviews (and ``extra`` text), or loading a
    saved encoder; copies the encoder into ``model``. Returns the loss history."""
    import torch
    from transformers import AlbertForMaskedLM

    history: list[dict] = []
    if a.mlm_load:
        missing = load_encoder(model.albert, a.mlm_load)
        assert set(missing) <= {"pooler.weight", "pooler.bias"}, missing
        print(f"encoder loaded from {a.mlm_load}", flush=True)
        return history
    if a.mlm_steps <= 0:
        return history
    mlm = AlbertForMaskedLM(config)
    if a.mlm_init:
        load_encoder(mlm.albert, a.mlm_init)
        print(f"pre-training continues from {a.mlm_init}", flush=True)
    mlm.train()
    opt = torch.optim.AdamW(mlm.parameters(), lr=a.mlm_lr, weight_decay=0.01)
    sched = schedule(opt, a.mlm_steps, a.mlm_warmup)

    def mlm_batches():
        if not extra:
            yield from batches(train_rows, a.batch_size, True)
            return
        for pair in zip(batches(train_rows, a.batch_size, True), batches(extra, a.batch_size, True)):
            yield from pair

    step = 0
    while step < a.mlm_steps:
        for ids, mask, _ in mlm_batches():
            inputs, labels = mask_for_mlm(ids, mask, tok, vocab_size)
            loss = mlm(input_ids=inputs, attention_mask=mask, labels=labels).loss
            update(mlm, loss, opt, sched)
            step += 1
            if step % 100 == 0:
                history.append({"step": step, "loss": round(loss.item(), 4)})
                print(f"mlm step {step}/{a.mlm_steps} loss {loss.item():.4f} {time.time() - t_start:.0f}s", flush=True)
            if step >= a.mlm_steps:
                break
    missing = model.albert.load_state_dict(mlm.albert.state_dict(), strict=False)
    assert set(missing.missing_keys) <= {"pooler.weight", "pooler.bias"}, missing
    if a.mlm_save:
        save_encoder(mlm.albert, a.mlm_save)
    return history
