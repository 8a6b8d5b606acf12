"""Parity metrics between an artifact's outputs and the fp32 reference. Works on arrays only."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .config import Thresholds
from .tasks import OutputKind, TaskSpec


@dataclass(frozen=True)
class Worst:
    text: str
    length: int
    max_abs_diff: float


@dataclass(frozen=True)
class ParityResult:
    """How far an artifact's outputs are from the fp32 reference, and whether that passes.

    ``agreement`` is the share of argmax decisions (per example, per token, or per span end,
    depending on the task) that match the reference; None where the task has no argmax.
    """

    n_examples: int
    n_decisions: int
    max_abs_diff: float
    mean_abs_diff: float
    sqnr_db: float
    min_cosine: float
    agreement: float | None
    thresholds: Thresholds
    failures: tuple[str, ...]
    worst: tuple[Worst, ...] = field(default=())
    lengths: tuple[int, ...] = field(default=())
    accuracy: float | None = None  # of the artifact, on labelled examples
    reference_accuracy: float | None = None  # of the fp32 reference, same examples
    n_labelled: int = 0

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict:
        d = asdict(self)
        d["passed"] = self.passed
        d["failures"] = list(self.failures)
        d["lengths"] = sorted(set(self.lengths))
        return d


def sqnr_db(reference: np.ndarray, actual: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio in dB: 10 log10(sum ref^2 / sum (ref - actual)^2)."""
    ref = np.asarray(reference, dtype=np.float64).ravel()
    err = ref - np.asarray(actual, dtype=np.float64).ravel()
    return _sqnr_from_sums(float(np.sum(ref * ref)), float(np.sum(err * err)))


def _sqnr_from_sums(signal: float, noise: float) -> float:
    if noise == 0.0:
        return math.inf
    if signal == 0.0 or not math.isfinite(noise):
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def _decisions(kind: OutputKind, outputs: list[np.ndarray]) -> np.ndarray:
    """The argmax decisions the task makes from one example's outputs (batch 1)."""
    if kind in (OutputKind.SEQUENCE_LOGITS, OutputKind.TOKEN_LOGITS):
        return outputs[0].reshape(-1, outputs[0].shape[-1]).argmax(-1)
    if kind is OutputKind.SPAN_LOGITS:
        return np.array([o.reshape(-1).argmax() for o in outputs])
    return np.zeros(0, dtype=np.int64)


def compare(task: TaskSpec, reference: list[list[np.ndarray]], actual: list[list[np.ndarray]],
            thresholds: Thresholds, texts: list[str] | None = None, lengths: list[int] | None = None,
            labels: list[int | None] | None = None, n_worst: int = 3) -> ParityResult:
    """Compare per-example outputs of an artifact with the reference.

    Args:
        task: decides which argmax decisions count for agreement.
        reference: per example, the reference output arrays (in ``task.outputs`` order).
        actual: per example, the artifact's output arrays, same shapes.
        thresholds: limits; a None limit is not checked.
        texts, lengths: the example texts and token lengths, for the worst-examples list.
        labels: per example, the true class or None; gives task accuracy for sequence classification.

    Returns:
        The metrics and the list of failed limits (empty when the artifact passes).
    """
    if len(reference) != len(actual) or not reference:
        raise ValueError("reference and actual must be non-empty and of the same length")
    max_abs, abs_sum, count = 0.0, 0.0, 0
    sig, noise = 0.0, 0.0
    min_cos = 1.0
    agree, decisions = 0, 0
    per_example: list[tuple[float, int]] = []
    texts = texts or [""] * len(reference)
    lengths = lengths or [0] * len(reference)
    for i, (ref_outs, act_outs) in enumerate(zip(reference, actual)):
        if len(ref_outs) != len(act_outs):
            raise ValueError(f"example {i}: {len(act_outs)} outputs, expected {len(ref_outs)}")
        ex_max = 0.0
        for r, a in zip(ref_outs, act_outs):
            r = np.asarray(r, dtype=np.float64)
            a = np.asarray(a, dtype=np.float64)
            if r.shape != a.shape:
                raise ValueError(f"example {i}: output shape {a.shape}, expected {r.shape}")
            diff = np.abs(r - a)
            if not np.all(np.isfinite(a)):
                diff = np.where(np.isfinite(a), diff, np.inf)
            ex_max = max(ex_max, float(diff.max()) if diff.size else 0.0)
            abs_sum += float(diff.sum())
            count += diff.size
            sig += float(np.sum(r * r))
            noise += float(np.sum((r - a) ** 2))
            min_cos = min(min_cos, cosine(r, a))
        max_abs = max(max_abs, ex_max)
        per_example.append((ex_max, i))
        if task.has_argmax:
            dr, da = _decisions(task.kind, ref_outs), _decisions(task.kind, act_outs)
            agree += int(np.sum(dr == da))
            decisions += int(dr.size)
    accuracy = reference_accuracy = None
    labelled = [(i, y) for i, y in enumerate(labels or []) if y is not None]
    if labelled and task.kind is OutputKind.SEQUENCE_LOGITS:
        ref_right = sum(int(_decisions(task.kind, reference[i])[0] == y) for i, y in labelled)
        act_right = sum(int(_decisions(task.kind, actual[i])[0] == y) for i, y in labelled)
        reference_accuracy, accuracy = ref_right / len(labelled), act_right / len(labelled)
    snr = _sqnr_from_sums(sig, noise)
    agreement = (agree / decisions) if decisions else None
    failures = []
    t = thresholds
    if t.max_abs_diff is not None and not max_abs <= t.max_abs_diff:
        failures.append(f"max |diff| {max_abs:.3g} > {t.max_abs_diff:.3g}")
    if t.min_agreement is not None and agreement is not None and agreement < t.min_agreement:
        failures.append(f"top-1 agreement {agreement:.2%} < {t.min_agreement:.2%} "
                        f"({decisions - agree} of {decisions} decisions differ)")
    if t.min_sqnr_db is not None and not snr >= t.min_sqnr_db:
        failures.append(f"SQNR {snr:.1f} dB < {t.min_sqnr_db:.1f} dB")
    worst = tuple(
        Worst(text=texts[i][:200], length=lengths[i], max_abs_diff=m)
        for m, i in sorted(per_example, reverse=True)[:n_worst]
    )
    return ParityResult(
        n_examples=len(reference), n_decisions=decisions, max_abs_diff=max_abs,
        mean_abs_diff=abs_sum / max(count, 1), sqnr_db=snr, min_cosine=min_cos, agreement=agreement,
        thresholds=thresholds, failures=tuple(failures), worst=worst, lengths=tuple(lengths),
        accuracy=accuracy, reference_accuracy=reference_accuracy,
        n_labelled=len(labelled) if accuracy is not None else 0,
    )
