"""Supervised fine-tuning of the demo classifier, keeping the best validation checkpoint."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from .distillation import distill_loss
from .steps import accuracy, batches, schedule, update


@dataclass
class Best:
    """The best validation accuracy so far, which weights gave it, and the evaluation history."""

    accuracy: float = -1.0
    step: int = 0
    weights: str = "raw"
    history: list = field(default_factory=list)

    def evaluate(self, model, rows, batch_size: int, step: int, kind: str, out: Path) -> None:
        """Validation accuracy of ``model`` now; saves it to ``out`` when it is the best so far."""
        val = accuracy(model, rows, batch_size)
        self.history.append({"step": step, "weights": kind, "validation_accuracy": val})
        print(f"step {step}: validation accuracy {val:.4f} ({kind})", flush=True)
        if val > self.accuracy:
            self.accuracy, self.step, self.weights = val, step, kind
            model.save_pretrained(str(out), safe_serialization=True)


def finetune(a, model, data, out: Path) -> tuple[Best, int]:
    """Fine-tune on the training rows, evaluating raw (and averaged) weights; returns the best and the step count."""
    import torch

    steps_per_epoch = math.ceil(len(data["train"]) / a.batch_size)
    total = int(steps_per_epoch * a.epochs)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    sched = schedule(opt, total, a.warmup)
    model.train()
    step, t0 = 0, time.time()
    best = Best()
    ema = {k: v.detach().clone() for k, v in model.state_dict().items()} if a.ema else None
    while step < total:
        for ids, mask, y in batches(data["train"], a.batch_size, True):
            loss = distill_loss(model(input_ids=ids, attention_mask=mask).logits, y, a.distill)
            update(model, loss, opt, sched)
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
