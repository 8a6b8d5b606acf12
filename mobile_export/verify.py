"""Parity metrics between an artifact's outputs and the fp32 reference. Works on arrays only."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .config import MIN_BUCKET_EXAMPLES, Thresholds
from .tasks import OutputKind, TaskSpec


@dataclass(frozen=True)
class Worst:
    text: str
    length: int
    max_abs_diff: float


@dataclass(frozen=True)
class LengthBucket:
    """Parity metrics of the examples whose token count falls in one bucket."""

    bucket: str
    examples: int
    max_abs_diff: float
    mean_abs_diff: float
    sqnr_db: float
    min_cosine: float
    agreement: float | None
    decisive_agreement: float | None = None
    near_ties: int = 0
    min_example_sqnr_db: float | None = None
    gated: bool = False  # enough examples to be gated on its own

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ParityResult:
    """How far an artifact's outputs are from the fp32 reference, and whether that passes.

    ``agreement`` is the share of argmax decisions (per example, per token, or per span end,
    depending on the task) that match the reference; None where the task has no argmax.
    ``decisive_agreement`` counts only decisions the reference makes clearly (``example_stats``);
    the agreement gate reads it.
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
    decisive_agreement: float | None = None  # agreement on the decisions that are not near-ties
    n_decisive: int = 0
    near_ties: int = 0  # decisions whose reference margin is within what the artifact's error can move
    min_example_sqnr_db: float = math.inf
    coverage: dict | None = None  # quantization / delegation coverage read from the artifact
    by_length: tuple[LengthBucket, ...] = ()  # metrics per sequence-length bucket that has examples

    @property
    def passed(self) -> bool:
        return not self.failures

    def headline(self) -> str:
        """One line: the numbers the gates read."""
        line = (f"max|diff| {self.max_abs_diff:.3g}, SQNR {self.sqnr_db:.1f} dB "
                f"(lowest example {self.min_example_sqnr_db:.1f} dB)")
        if self.agreement is not None:
            decisive = "n/a" if self.decisive_agreement is None else f"{self.decisive_agreement:.2%}"
            line += (f", decisive agreement {decisive} of {self.n_decisive} (raw {self.agreement:.2%}, "
                     f"{self.near_ties} near-ties)")
        return line

    def to_dict(self) -> dict:
        d = asdict(self)
        d["gates"] = self.thresholds.explain()
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
    return _rows(kind, outputs).argmax(-1) if kind is not OutputKind.HIDDEN_STATES else np.zeros(0, np.int64)


def _rows(kind: OutputKind, outputs: list[np.ndarray]) -> np.ndarray:
    """One row of scores per decision: per example (sequence classification), per token (token
    classification, fill-mask: every position's vocabulary argmax is a slot), per span end (QA)."""
    if kind in (OutputKind.SEQUENCE_LOGITS, OutputKind.TOKEN_LOGITS):
        return np.asarray(outputs[0], np.float64).reshape(-1, outputs[0].shape[-1])
    if kind is OutputKind.SPAN_LOGITS:
        return np.stack([np.asarray(o, np.float64).reshape(-1) for o in outputs])
    return np.zeros((0, 1))


def _margins(rows: np.ndarray) -> np.ndarray:
    """Top-1 minus top-2 score of each row (inf when a row has one score)."""
    if rows.shape[-1] < 2:
        return np.full(rows.shape[0], np.inf)
    top = np.partition(rows, -2, axis=-1)
    return top[:, -1] - top[:, -2]


# An example's own error excuses its near-ties only up to this multiple of the artifact's typical
# (median) per-example error: an example the artifact gets unusually wrong cannot excuse its own flips.
TIE_ERROR_CAP = 4.0
BUCKETS = ((1, 16), (17, 32), (33, 64), (65, 128), (129, 256), (257, 512), (513, 1 << 30))


def bucket_name(lo: int, hi: int) -> str:
    return f"{lo}+" if hi >= 1 << 30 else f"{lo}-{hi}"


def buckets(lengths: list[int]) -> list[tuple[str, list[int]]]:
    """(bucket name, indices of the examples in it) for every length bucket that has examples."""
    out = []
    for lo, hi in BUCKETS:
        idx = [i for i, n in enumerate(lengths) if lo <= n <= hi]
        if idx:
            out.append((bucket_name(lo, hi), idx))
    return out


@dataclass(frozen=True)
class ExampleStats:
    """One example's error against the reference, and its decisions."""

    max_abs_diff: float
    abs_sum: float
    count: int
    signal: float  # sum of squared reference outputs
    noise: float  # sum of squared differences
    min_cosine: float
    decisions: int
    agree: int
    decisive: int  # decisions whose reference margin exceeds 2 x the tie bound
    decisive_agree: int
    typical_power: float = 0.0  # median example's mean squared reference output

    @property
    def sqnr_db(self) -> float:
        """The example's SQNR, its signal floored at the typical example's: a text whose outputs are
        near zero (a neutral review's two logits) is judged against what outputs normally look like,
        so a small error on tiny logits does not read as a bad example."""
        n = max(1, self.count)
        return _sqnr_from_sums(max(self.signal / n, self.typical_power), self.noise / n)


def example_stats(task: TaskSpec, reference: list[list[np.ndarray]], actual: list[list[np.ndarray]]) -> list[ExampleStats]:
    """Per-example errors and decisions. A decision is *decisive* when the reference's top-1 margin
    exceeds 2 x e, where e is the example's max |diff| capped at ``TIE_ERROR_CAP`` x the median of
    all examples' max |diff|: if every score moves by at most e, a margin above 2e cannot flip, so
    a flip there is the artifact's fault; a smaller margin is a near-tie that noise may flip."""
    if len(reference) != len(actual) or not reference:
        raise ValueError("reference and actual must be non-empty and of the same length")
    errors = []
    for i, (ref_outs, act_outs) in enumerate(zip(reference, actual)):
        if len(ref_outs) != len(act_outs):
            raise ValueError(f"example {i}: {len(act_outs)} outputs, expected {len(ref_outs)}")
        parts = []
        for r, a in zip(ref_outs, act_outs):
            r = np.asarray(r, dtype=np.float64)
            a = np.asarray(a, dtype=np.float64)
            if r.shape != a.shape:
                raise ValueError(f"example {i}: output shape {a.shape}, expected {r.shape}")
            diff = np.abs(r - a)
            if not np.all(np.isfinite(a)):
                diff = np.where(np.isfinite(a), diff, np.inf)
            parts.append((r, a, diff))
        errors.append(parts)
    ex_max = [max((float(d.max()) if d.size else 0.0) for _, _, d in parts) for parts in errors]
    signals = [float(sum(np.sum(r * r) for r, _, _ in parts)) for parts in errors]
    counts = [int(sum(d.size for _, _, d in parts)) for parts in errors]
    cap = TIE_ERROR_CAP * float(np.median(ex_max))
    typical = float(np.median([sig / max(1, n) for sig, n in zip(signals, counts)]))
    out = []
    for parts, m, sig, n, ref_outs, act_outs in zip(errors, ex_max, signals, counts, reference, actual):
        decisions = agree = decisive = decisive_agree = 0
        if task.has_argmax:
            rows = _rows(task.kind, ref_outs)
            dr, da = rows.argmax(-1), _rows(task.kind, act_outs).argmax(-1)
            clear = _margins(rows) > 2.0 * min(m, cap)
            decisions, agree = int(dr.size), int(np.sum(dr == da))
            decisive, decisive_agree = int(np.sum(clear)), int(np.sum((dr == da) & clear))
        with np.errstate(invalid="ignore", over="ignore"):
            out.append(ExampleStats(
                max_abs_diff=m, abs_sum=float(sum(d.sum() for _, _, d in parts)), count=n, signal=sig,
                noise=float(sum(np.sum((r - a) ** 2) for r, a, _ in parts)),
                min_cosine=min(cosine(r, a) for r, a, _ in parts), decisions=decisions, agree=agree,
                decisive=decisive, decisive_agree=decisive_agree, typical_power=typical))
    return out


@dataclass(frozen=True)
class Pooled:
    """Metrics pooled over a set of examples."""

    n_examples: int
    max_abs_diff: float
    mean_abs_diff: float
    sqnr_db: float
    min_cosine: float
    min_example_sqnr_db: float
    decisions: int
    agreement: float | None
    decisive: int
    decisive_agreement: float | None

    @staticmethod
    def of(stats: list[ExampleStats]) -> "Pooled":
        decisions = sum(s.decisions for s in stats)
        decisive = sum(s.decisive for s in stats)
        return Pooled(
            n_examples=len(stats), max_abs_diff=max(s.max_abs_diff for s in stats),
            mean_abs_diff=sum(s.abs_sum for s in stats) / max(1, sum(s.count for s in stats)),
            sqnr_db=_sqnr_from_sums(sum(s.signal for s in stats), sum(s.noise for s in stats)),
            min_cosine=min(s.min_cosine for s in stats), min_example_sqnr_db=min(s.sqnr_db for s in stats),
            decisions=decisions, agreement=sum(s.agree for s in stats) / decisions if decisions else None,
            decisive=decisive,
            decisive_agreement=sum(s.decisive_agree for s in stats) / decisive if decisive else None)

    def failures(self, t: Thresholds, where: str = "") -> list[str]:
        """The limits of ``t`` these metrics break, each as one line (prefixed by ``where``)."""
        out = []
        if t.max_abs_diff is not None and not self.max_abs_diff <= t.max_abs_diff:
            out.append(f"max |diff| {self.max_abs_diff:.3g} > {t.max_abs_diff:.3g}")
        if t.min_agreement is not None and self.decisive_agreement is not None and \
                self.decisive_agreement < t.min_agreement:
            flips = round(self.decisive * (1 - self.decisive_agreement))
            out.append(f"decisive agreement {self.decisive_agreement:.2%} < {t.min_agreement:.2%} "
                       f"({flips} of {self.decisive} clear decisions flipped)")
        if t.min_sqnr_db is not None and not self.sqnr_db >= t.min_sqnr_db:
            out.append(f"SQNR {self.sqnr_db:.1f} dB < {t.min_sqnr_db:.1f} dB")
        return [where + f for f in out]


def compare(task: TaskSpec, reference: list[list[np.ndarray]], actual: list[list[np.ndarray]],
            thresholds: Thresholds, texts: list[str] | None = None, lengths: list[int] | None = None,
            labels: list[int | None] | None = None, n_worst: int = 3) -> ParityResult:
    """Compare per-example outputs of an artifact with the reference.

    Gates (each a limit of ``thresholds``; None is not checked): over all examples, max |diff|,
    decisive agreement and SQNR; per example, SQNR >= ``min_example_sqnr_db``; per length bucket
    with at least ``MIN_BUCKET_EXAMPLES`` examples, decisive agreement and SQNR on its own. Every
    bucket's metrics are recorded in ``by_length``, gated or not.

    Args:
        task: decides which argmax decisions count for agreement.
        reference: per example, the reference output arrays (in ``task.outputs`` order).
        actual: per example, the artifact's output arrays, same shapes.
        thresholds: limits; a None limit is not checked.
        texts, lengths: the example texts and token lengths (lengths also place examples in buckets).
        labels: per example, the true class or None; gives task accuracy for sequence classification.

    Returns:
        The metrics and the list of failed limits (empty when the artifact passes).
    """
    stats = example_stats(task, reference, actual)
    texts = texts or [""] * len(reference)
    lengths = lengths or [0] * len(reference)
    pooled = Pooled.of(stats)
    t = thresholds
    failures = pooled.failures(t)
    if t.min_example_sqnr_db is not None:
        low = [i for i, s in enumerate(stats) if not s.sqnr_db >= t.min_example_sqnr_db]
        if low:
            i = min(low, key=lambda j: stats[j].sqnr_db)
            failures.append(f"{len(low)} example(s) below the per-example SQNR floor {t.min_example_sqnr_db:.1f} dB "
                            f"(worst {stats[i].sqnr_db:.1f} dB, {lengths[i]} tokens: {texts[i][:40]!r})")
    per_bucket = Thresholds(min_agreement=t.min_agreement, min_sqnr_db=t.min_sqnr_db)
    by_length = []
    for name, idx in buckets(lengths):
        p = Pooled.of([stats[i] for i in idx])
        gated = len(idx) >= MIN_BUCKET_EXAMPLES
        by_length.append(LengthBucket(
            bucket=name, examples=len(idx), max_abs_diff=p.max_abs_diff, mean_abs_diff=p.mean_abs_diff,
            sqnr_db=p.sqnr_db, min_cosine=p.min_cosine, agreement=p.agreement,
            decisive_agreement=p.decisive_agreement, near_ties=p.decisions - p.decisive,
            min_example_sqnr_db=p.min_example_sqnr_db, gated=gated))
        if gated:
            failures += p.failures(per_bucket, f"length bucket {name} tokens ({len(idx)} examples): ")
    accuracy = reference_accuracy = None
    labelled = [(i, y) for i, y in enumerate(labels or []) if y is not None]
    if labelled and task.kind is OutputKind.SEQUENCE_LOGITS:
        ref_right = sum(int(_decisions(task.kind, reference[i])[0] == y) for i, y in labelled)
        act_right = sum(int(_decisions(task.kind, actual[i])[0] == y) for i, y in labelled)
        reference_accuracy, accuracy = ref_right / len(labelled), act_right / len(labelled)
    worst = tuple(
        Worst(text=texts[i][:200], length=lengths[i], max_abs_diff=s.max_abs_diff)
        for s, i in sorted(((s, i) for i, s in enumerate(stats)), key=lambda p: -p[0].max_abs_diff)[:n_worst]
    )
    return ParityResult(
        n_examples=len(reference), n_decisions=pooled.decisions, max_abs_diff=pooled.max_abs_diff,
        mean_abs_diff=pooled.mean_abs_diff, sqnr_db=pooled.sqnr_db, min_cosine=pooled.min_cosine,
        agreement=pooled.agreement, thresholds=thresholds, failures=tuple(failures), worst=worst,
        lengths=tuple(lengths), accuracy=accuracy, reference_accuracy=reference_accuracy,
        n_labelled=len(labelled) if accuracy is not None else 0,
        decisive_agreement=pooled.decisive_agreement, n_decisive=pooled.decisive,
        near_ties=pooled.decisions - pooled.decisive, min_example_sqnr_db=pooled.min_example_sqnr_db,
        by_length=tuple(by_length),
    )
