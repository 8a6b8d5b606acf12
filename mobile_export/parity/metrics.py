"""Parity metrics between an artifact's outputs and the fp32 reference, the result types and the gates.
Works on arrays only; ``accumulate`` streams examples through them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from ..backends.base import Coverage, coverage_from_dict
from ..core.tasks import OutputKind
from ..core.figures import sqnr_from_sums
from ..core.thresholds import Thresholds


@dataclass(frozen=True)
class Worst:
    """One of the examples furthest from fp32: its text (cut to 200 characters), tokens and max |diff|."""

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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LengthBucket:
        """The bucket ``to_dict`` wrote (keys it does not know are left out)."""
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


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
    coverage: Coverage | None = None  # quantization / delegation coverage read from the artifact
    by_length: tuple[LengthBucket, ...] = ()  # metrics per sequence-length bucket that has examples
    topk_overlap: float | None = None  # top-k heads: share of fp32's top K ids the artifact returned
    # sentence embeddings: share of decisive queries whose nearest neighbour is fp32's, and how many there were
    retrieval_agreement: float | None = None
    retrieval_queries: int = 0

    @property
    def passed(self) -> bool:
        return not self.failures

    def headline(self) -> str:
        """One line: the numbers the gates read."""
        line = (
            f"max|diff| {self.max_abs_diff:.3g}, SQNR {self.sqnr_db:.1f} dB "
            f"(lowest example {self.min_example_sqnr_db:.1f} dB)"
        )
        if self.agreement is not None:
            decisive = "n/a" if self.decisive_agreement is None else f"{self.decisive_agreement:.2%}"
            line += (
                f", decisive agreement {decisive} of {self.n_decisive} (raw {self.agreement:.2%}, "
                f"{self.near_ties} near-ties)"
            )
        if self.topk_overlap is not None:
            line += f", top-k overlap {self.topk_overlap:.2%}"
        if self.retrieval_agreement is not None:
            line += f", lowest cosine {self.min_cosine:.4f}, retrieval {self.retrieval_agreement:.2%} of "
            line += f"{self.retrieval_queries} queries"
        return line

    def to_dict(self) -> dict:
        """report.json's ``parity`` object; ``gates`` and ``passed`` are derived, for readers of the file."""
        d = asdict(self)
        d["gates"] = self.thresholds.explain()
        d["passed"] = self.passed
        d["failures"] = list(self.failures)
        d["lengths"] = sorted(set(self.lengths))
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], quant: str | None = None) -> ParityResult:
        """The result ``to_dict`` wrote (``quant``: the artifact's, for a coverage written without it); a key
        an older report.json lacks takes its default."""
        limits = {f.name for f in fields(Thresholds)}
        given = {k: v for k, v in d.items() if k in {f.name for f in fields(cls)}}
        given["thresholds"] = Thresholds(**{k: v for k, v in (d.get("thresholds") or {}).items() if k in limits})
        given["failures"] = tuple(d.get("failures", ()))
        given["worst"] = tuple(Worst(w["text"], int(w["length"]), w["max_abs_diff"]) for w in d.get("worst", ()))
        given["lengths"] = tuple(d.get("lengths", ()))
        given["by_length"] = tuple(LengthBucket.from_dict(b) for b in d.get("by_length", ()))
        given["coverage"] = coverage_from_dict(d["coverage"], quant) if d.get("coverage") else None
        if given.get("min_example_sqnr_db") is None:
            given["min_example_sqnr_db"] = math.inf
        given.setdefault("n_decisions", 0)
        return cls(**given)


def sqnr_db(reference: np.ndarray, actual: np.ndarray) -> float:
    """Signal-to-quantization-noise ratio in dB: 10 log10(sum ref^2 / sum (ref - actual)^2)."""
    ref = np.asarray(reference, dtype=np.float64).ravel()
    err = ref - np.asarray(actual, dtype=np.float64).ravel()
    return sqnr_from_sums(float(np.sum(ref * ref)), float(np.sum(err * err)))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def decisions_of(kind: OutputKind, outputs: Sequence[np.ndarray]) -> np.ndarray:
    """The argmax decisions the task makes from one example's outputs (batch 1); a top-k head's: its
    first id at every occupied slot."""
    if kind is OutputKind.TOP_K:
        return np.asarray(outputs[1])[0, :, 0][np.asarray(outputs[0])[0] >= 0]
    if kind in (OutputKind.HIDDEN_STATES, OutputKind.SENTENCE_EMBEDDING):
        return np.zeros(0, np.int64)
    return rows_of(kind, outputs).argmax(-1)


def rows_of(kind: OutputKind, outputs: Sequence[np.ndarray], dtype: type | None = np.float64) -> np.ndarray:
    """One row of scores per decision: per example (sequence classification), per token (token
    classification, fill-mask: every position's vocabulary argmax is a slot), per span end (QA). In
    ``dtype``, or as the outputs are (None: no copy; argmax and the top two do not change in float64)."""
    if kind in (OutputKind.SEQUENCE_LOGITS, OutputKind.TOKEN_LOGITS):
        return np.asarray(outputs[0], dtype).reshape(-1, np.shape(outputs[0])[-1])
    if kind is OutputKind.SPAN_LOGITS:
        return np.stack([np.asarray(o, dtype).reshape(-1) for o in outputs])
    return np.zeros((0, 1))


def top_margins(rows: np.ndarray) -> np.ndarray:
    """Top-1 minus top-2 score of each row, in float64 (inf when a row has one score)."""
    if rows.shape[-1] < 2:
        return np.full(rows.shape[0], np.inf)
    top = np.partition(rows, -2, axis=-1)[:, -2:].astype(np.float64)
    return top[:, -1] - top[:, -2]


# An example's own error excuses its near-ties only up to this multiple of the artifact's typical
# (median) per-example error: an example the artifact gets unusually wrong cannot excuse its own flips.
TIE_ERROR_CAP = 4.0
BUCKETS = ((1, 16), (17, 32), (33, 64), (65, 128), (129, 256), (257, 512), (513, 1 << 30))


def bucket_name(lo: int, hi: int) -> str:
    return f"{lo}+" if hi >= 1 << 30 else f"{lo}-{hi}"


def bucket_of(length: int) -> int:
    """Index in ``BUCKETS`` of the bucket a token count falls in (-1: none, e.g. an unknown length 0)."""
    for k, (lo, hi) in enumerate(BUCKETS):
        if lo <= length <= hi:
            return k
    return -1


@dataclass(frozen=True)
class PooledMetrics:
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

    def failures(self, t: Thresholds, where: str = "") -> list[str]:
        """The limits of ``t`` these metrics break, each as one line (prefixed by ``where``)."""
        out = []
        if t.max_abs_diff is not None and not self.max_abs_diff <= t.max_abs_diff:
            out.append(f"max |diff| {self.max_abs_diff:.3g} > {t.max_abs_diff:.3g}")
        if (
            t.min_agreement is not None
            and self.decisive_agreement is not None
            and self.decisive_agreement < t.min_agreement
        ):
            flips = round(self.decisive * (1 - self.decisive_agreement))
            out.append(
                f"decisive agreement {self.decisive_agreement:.2%} < {t.min_agreement:.2%} "
                f"({flips} of {self.decisive} clear decisions flipped)"
            )
        if t.min_sqnr_db is not None and not self.sqnr_db >= t.min_sqnr_db:
            out.append(f"SQNR {self.sqnr_db:.1f} dB < {t.min_sqnr_db:.1f} dB")
        if t.min_cosine is not None and self.n_examples and not self.min_cosine >= t.min_cosine:
            out.append(f"lowest example cosine {self.min_cosine:.4f} < {t.min_cosine:.4f}")
        return [where + f for f in out]
