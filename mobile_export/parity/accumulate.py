"""Streaming parity: ``ParityAccumulator`` reduces each example's outputs to a few numbers as it
arrives, so memory grows with the number of examples by a few scalars each, never with their outputs;
accumulators of consecutive batches merge. ``compare`` is the same for outputs held in memory."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.tasks import OutputKind, TaskSpec
from ..core.thresholds import MIN_BUCKET_EXAMPLES, Thresholds
from .metrics import (
    BUCKETS,
    TIE_ERROR_CAP,
    LengthBucket,
    ParityResult,
    PooledMetrics,
    Worst,
    bucket_name,
    bucket_of,
    cosine,
    rows_of,
    sqnr_from_sums,
    top_margins,
)
from .plots import PlotSampler
from .retrieval import RetrievalTracker


def _keep_max(current: float | None, value: float | None) -> float | None:
    """``max`` over a sequence, one value at a time (the first value stands until one is larger)."""
    if value is None:
        return current
    return value if current is None or value > current else current


def _keep_min(current: float | None, value: float | None) -> float | None:
    """``min`` over a sequence, one value at a time."""
    if value is None:
        return current
    return value if current is None or value < current else current


@dataclass
class _BucketSums:
    """Running sums over a set of examples, added in example order: the same float operations as
    summing the per-example values of a list, so the result is the same to the last digit."""

    examples: int = 0
    max_abs_diff: float | None = None
    abs_sum: float = 0
    count: int = 0
    signal: float = 0
    noise: float = 0
    min_cosine: float | None = None
    decisions: int = 0
    agree: int = 0

    def add(
        self, m: float, abs_sum: float, count: int, signal: float, noise: float, cos: float, decisions: int, agree: int
    ) -> None:
        self.examples += 1
        self.max_abs_diff = _keep_max(self.max_abs_diff, m)
        self.abs_sum += abs_sum
        self.count += count
        self.signal += signal
        self.noise += noise
        self.min_cosine = _keep_min(self.min_cosine, cos)
        self.decisions += decisions
        self.agree += agree

    def merge(self, other: "_BucketSums") -> None:
        """Fold in the sums of the examples that follow (another batch)."""
        if other.examples == 0:
            return
        self.examples += other.examples
        self.max_abs_diff = _keep_max(self.max_abs_diff, other.max_abs_diff)
        self.abs_sum += other.abs_sum
        self.count += other.count
        self.signal += other.signal
        self.noise += other.noise
        self.min_cosine = _keep_min(self.min_cosine, other.min_cosine)
        self.decisions += other.decisions
        self.agree += other.agree

    def pooled(self, decisive: int, decisive_agree: int, min_example_sqnr_db: float) -> "PooledMetrics":
        return PooledMetrics(
            n_examples=self.examples,
            max_abs_diff=self.max_abs_diff or 0.0,
            mean_abs_diff=self.abs_sum / max(1, self.count),
            sqnr_db=sqnr_from_sums(self.signal, self.noise),
            min_cosine=1.0 if self.min_cosine is None else self.min_cosine,
            min_example_sqnr_db=min_example_sqnr_db,
            decisions=self.decisions,
            agreement=self.agree / self.decisions if self.decisions else None,
            decisive=decisive,
            decisive_agreement=decisive_agree / decisive if decisive else None,
        )


class ParityAccumulator:
    """One artifact's parity against the reference, fed one example at a time; ``result`` gives what
    ``compare`` gives for the same examples, to the last digit.

    Two numbers need every example before they are known: the median of the examples' max |diff| (it
    caps the error an example may use to excuse its near-ties) and the median example's output power
    (the floor of an example's signal in its own SQNR). So each example keeps a few scalars (its max
    |diff|, mean signal and noise, length bucket, clear decisions at its own error) and the margins of
    the decisions that only a lower cap could make clear; its outputs are dropped. Accumulators of
    consecutive batches merge (``merge``) into the accumulator of the whole set.
    """

    def __init__(self, task: TaskSpec) -> None:
        self.task = task
        self.total = _BucketSums()
        self.bucket_sums: dict[int, _BucketSums] = {}
        self.lengths: set[int] = set()
        self.labelled = self.reference_right = self.artifact_right = 0
        self._max_abs_diff, self._power, self._noise_power = array("d"), array("d"), array("d")
        self._bucket, self._length = array("b"), array("q")
        self._decisive, self._decisive_agree = array("q"), array("q")
        # decisions that are near-ties at the example's own error: (example, reference margin, agreed)
        self._tie_example, self._tie_margin, self._tie_agree = array("q"), array("d"), array("b")
        self.overlap_hits = self.overlap_slots = 0  # top-k heads: fp32's top K ids the artifact returned
        # sentence embeddings: every text's vectors, for the neighbours each text finds among the others
        self.retrieval = RetrievalTracker() if task.kind is OutputKind.SENTENCE_EMBEDDING else None

    @property
    def n_examples(self) -> int:
        return self.total.examples

    def add(
        self,
        reference: Sequence[np.ndarray],
        actual: Sequence[np.ndarray],
        length: int = 0,
        label: int | None = None,
        plot: PlotSampler | None = None,
    ) -> float:
        """Fold in one example (its reference and artifact outputs, batch 1); returns its max |diff|.

        A top-k head's reference carries every slot's probabilities after its outputs: the artifact's
        scores are then compared with fp32's probabilities of the same ids (``topk_parity``). ``plot``
        is offered the values as compared."""
        i = self.total.examples
        rows = None
        if self.task.kind is OutputKind.TOP_K:
            reference, actual, rows = self._topk(reference, actual)
        if len(reference) != len(actual):
            raise ValueError(f"example {i}: {len(actual)} outputs, expected {len(reference)}")
        if self.retrieval is not None:
            self.retrieval.add(reference[0], actual[0])
        maxes, signals, counts, abs_sums, noises, cosines = [], [], [], [], [], []
        for r, a in zip(reference, actual):  # one output at a time, at most two full-size float64 arrays alive
            r = np.asarray(r, dtype=np.float64)
            if r.shape != np.shape(a):
                raise ValueError(f"example {i}: output shape {np.shape(a)}, expected {r.shape}")
            with np.errstate(invalid="ignore", over="ignore"):
                signals.append(np.sum(r * r))
                cosines.append(cosine(r, a))
                bad = None if np.all(np.isfinite(a)) else ~np.isfinite(a)
                diff = np.subtract(r, a, dtype=np.float64)  # a converted exactly, as np.asarray(a, float64) would
                del r
                noises.append(np.sum(diff * diff))
                np.abs(diff, out=diff)
                if bad is not None:
                    diff[bad] = np.inf
                maxes.append(float(diff.max()) if diff.size else 0.0)
                abs_sums.append(diff.sum())
                counts.append(diff.size)
                del diff
        m = max(maxes)
        signal = float(sum(signals))
        count = int(sum(counts))
        decisions = agree = decisive = decisive_agree = 0
        if self.task.has_argmax:
            kind = self.task.kind
            ref_rows, act_rows = rows or (rows_of(kind, reference, None), rows_of(kind, actual, None))
            dr, da = ref_rows.argmax(-1), act_rows.argmax(-1)
            margins, same = top_margins(ref_rows), dr == da
            clear = margins > 2.0 * m
            decisions, agree = int(dr.size), int(np.sum(same))
            decisive, decisive_agree = int(np.sum(clear)), int(np.sum(same & clear))
            ties = ~clear
            n_ties = int(np.sum(ties))
            if n_ties:
                self._tie_example.extend([i] * n_ties)
                self._tie_margin.extend(margins[ties].tolist())
                self._tie_agree.extend(same[ties].astype(np.int8).tolist())
            if label is not None and self.task.kind is OutputKind.SEQUENCE_LOGITS:
                self.reference_right += int(dr[0] == label)
                self.artifact_right += int(da[0] == label)
        if label is not None:
            self.labelled += 1
        abs_sum = float(sum(abs_sums))
        noise = float(sum(noises))
        cos = min(cosines)
        n = max(1, count)
        bucket = bucket_of(length)
        self.total.add(m, abs_sum, count, signal, noise, cos, decisions, agree)
        if bucket >= 0:
            self.bucket_sums.setdefault(bucket, _BucketSums()).add(
                m, abs_sum, count, signal, noise, cos, decisions, agree
            )
        self.lengths.add(int(length))
        self._max_abs_diff.append(m)
        self._power.append(signal / n)
        self._noise_power.append(noise / n)
        self._bucket.append(bucket)
        self._length.append(int(length))
        self._decisive.append(decisive)
        self._decisive_agree.append(decisive_agree)
        if plot is not None:
            plot.add(reference, actual, length, m)
        return m

    def _topk(
        self, reference: Sequence[np.ndarray], actual: Sequence[np.ndarray]
    ) -> tuple[Sequence[np.ndarray], Sequence[np.ndarray], tuple[np.ndarray, np.ndarray] | None]:
        """A top-k example as values and decision rows; against another artifact (no probabilities) the
        scores are compared as they are, without decisions."""
        if len(reference) <= len(actual):
            return [reference[2]], [actual[2]], (np.zeros((0, 1)), np.zeros((0, 1)))
        from .topk import topk_view

        view = topk_view(reference, actual)
        self.overlap_hits += view.overlap[0]
        self.overlap_slots += view.overlap[1]
        return view.reference, view.actual, (view.reference_rows, view.actual_rows)

    def _clear_decisions(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per example, its clear decisions and those the artifact agreed on, once the median error is known: an
        example whose error is above the cap (``TIE_ERROR_CAP`` x the median) is judged at the cap, which may make
        some of its near-ties clear."""
        cap = TIE_ERROR_CAP * float(np.median(m))
        decisive = np.array(self._decisive, dtype=np.int64)
        decisive_agree = np.array(self._decisive_agree, dtype=np.int64)
        if len(self._tie_example):
            ex = np.frombuffer(self._tie_example, dtype=np.int64)
            now_clear = (m[ex] > cap) & (np.frombuffer(self._tie_margin, dtype=np.float64) > 2.0 * cap)
            np.add.at(decisive, ex[now_clear], 1)
            np.add.at(decisive_agree, ex[now_clear & (np.frombuffer(self._tie_agree, dtype=np.int8) == 1)], 1)
        return decisive, decisive_agree

    def _by_length(
        self, t: Thresholds, sqnrs: list[float], decisive: np.ndarray, decisive_agree: np.ndarray
    ) -> tuple[list[LengthBucket], list[str]]:
        """Each length bucket's metrics, and the limits of ``t`` (agreement, SQNR) that the buckets with enough
        examples to be gated on their own break."""
        buckets = np.frombuffer(self._bucket, dtype=np.int8)
        per_bucket = Thresholds(min_agreement=t.min_agreement, min_sqnr_db=t.min_sqnr_db)
        by_length, failures = [], []
        for k, sums in sorted(self.bucket_sums.items()):
            idx = np.flatnonzero(buckets == k)
            p = sums.pooled(
                int(decisive[idx].sum()), int(decisive_agree[idx].sum()), min(sqnrs[i] for i in idx.tolist())
            )
            gated = sums.examples >= MIN_BUCKET_EXAMPLES
            name = bucket_name(*BUCKETS[k])
            by_length.append(
                LengthBucket(
                    bucket=name,
                    examples=sums.examples,
                    max_abs_diff=p.max_abs_diff,
                    mean_abs_diff=p.mean_abs_diff,
                    sqnr_db=p.sqnr_db,
                    min_cosine=p.min_cosine,
                    agreement=p.agreement,
                    decisive_agreement=p.decisive_agreement,
                    near_ties=p.decisions - p.decisive,
                    min_example_sqnr_db=p.min_example_sqnr_db,
                    gated=gated,
                )
            )
            if gated:
                failures += p.failures(per_bucket, f"length bucket {name} tokens ({sums.examples} examples): ")
        return by_length, failures

    def merge(self, other: "ParityAccumulator") -> None:
        """Fold in the accumulator of the examples that follow these (the next batch)."""
        offset = self.total.examples
        self.overlap_hits += other.overlap_hits
        self.overlap_slots += other.overlap_slots
        if self.retrieval is not None and other.retrieval is not None:
            self.retrieval.merge(other.retrieval)
        self.total.merge(other.total)
        for k, sums in sorted(other.bucket_sums.items()):
            self.bucket_sums.setdefault(k, _BucketSums()).merge(sums)
        self.lengths |= other.lengths
        self.labelled += other.labelled
        self.reference_right += other.reference_right
        self.artifact_right += other.artifact_right
        for name in (
            "_max_abs_diff",
            "_power",
            "_noise_power",
            "_bucket",
            "_length",
            "_decisive",
            "_decisive_agree",
            "_tie_margin",
            "_tie_agree",
        ):
            getattr(self, name).extend(getattr(other, name))
        self._tie_example.extend(i + offset for i in other._tie_example)

    def result(
        self, thresholds: Thresholds, text_of: Callable[[list[int]], dict[int, str]] | None = None, n_worst: int = 3
    ) -> ParityResult:
        """The metrics and failed limits of every example added so far (see ``compare`` for the gates).

        ``text_of`` maps example indices to their texts; only the few examples a report names are asked for.
        """
        if not self.total.examples:
            raise ValueError("reference and actual must be non-empty and of the same length")
        t = thresholds
        m = np.frombuffer(self._max_abs_diff, dtype=np.float64)
        decisive, decisive_agree = self._clear_decisions(m)
        typical = float(np.median(np.frombuffer(self._power, dtype=np.float64)))
        sqnrs = [sqnr_from_sums(max(p, typical), q) for p, q in zip(self._power.tolist(), self._noise_power.tolist())]
        pooled = self.total.pooled(int(decisive.sum()), int(decisive_agree.sum()), min(sqnrs))
        failures = pooled.failures(t)
        named: dict[str, int] = {}
        if t.min_example_sqnr_db is not None:
            low = [i for i, s in enumerate(sqnrs) if not s >= t.min_example_sqnr_db]
            if low:
                named["lowest"] = min(low, key=lambda j: sqnrs[j])
                named["low"] = len(low)
        order = np.argsort(-m, kind="stable")[:n_worst].tolist()
        texts = text_of(sorted(set(order) | {named.get("lowest", order[0])})) if text_of else {}
        if "lowest" in named:
            i = named["lowest"]
            failures.append(
                f"{named['low']} example(s) below the per-example SQNR floor {t.min_example_sqnr_db:.1f} dB "
                f"(worst {sqnrs[i]:.1f} dB, {self._length[i]} tokens: {texts.get(i, '')[:40]!r})"
            )
        by_length, bucket_failures = self._by_length(t, sqnrs, decisive, decisive_agree)
        failures += bucket_failures
        found = self.retrieval.result() if self.retrieval is not None else None
        if found is not None and found.gated and t.min_retrieval is not None and found.agreement is not None:
            if found.agreement < t.min_retrieval:
                failures.append(
                    f"retrieval agreement {found.agreement:.2%} < {t.min_retrieval:.2%} ({found.queries - found.kept}"
                    f" of {found.queries} decisive queries found another nearest neighbour than fp32's)"
                )
        accuracy = reference_accuracy = None
        if self.labelled and self.task.kind is OutputKind.SEQUENCE_LOGITS:
            reference_accuracy, accuracy = self.reference_right / self.labelled, self.artifact_right / self.labelled
        worst = tuple(
            Worst(text=texts.get(i, "")[:200], length=self._length[i], max_abs_diff=float(m[i])) for i in order
        )
        return ParityResult(
            n_examples=self.total.examples,
            n_decisions=pooled.decisions,
            max_abs_diff=pooled.max_abs_diff,
            mean_abs_diff=pooled.mean_abs_diff,
            sqnr_db=pooled.sqnr_db,
            min_cosine=pooled.min_cosine,
            agreement=pooled.agreement,
            thresholds=thresholds,
            failures=tuple(failures),
            worst=worst,
            lengths=tuple(sorted(self.lengths)),
            accuracy=accuracy,
            reference_accuracy=reference_accuracy,
            n_labelled=self.labelled if accuracy is not None else 0,
            decisive_agreement=pooled.decisive_agreement,
            n_decisive=pooled.decisive,
            near_ties=pooled.decisions - pooled.decisive,
            min_example_sqnr_db=pooled.min_example_sqnr_db,
            by_length=tuple(by_length),
            topk_overlap=self.overlap_hits / self.overlap_slots if self.overlap_slots else None,
            retrieval_agreement=found.agreement if found is not None else None,
            retrieval_queries=found.queries if found is not None else 0,
        )


def compare(
    task: TaskSpec,
    reference: list[list[np.ndarray]],
    actual: list[list[np.ndarray]],
    thresholds: Thresholds,
    texts: list[str] | None = None,
    lengths: list[int] | None = None,
    labels: list[int | None] | None = None,
    n_worst: int = 3,
) -> ParityResult:
    """Compare per-example outputs of an artifact with the reference (all in memory; see ``ParityAccumulator``).

    Gates (each a limit of ``thresholds``; None is not checked): over all examples, max |diff|,
    decisive agreement and SQNR; per example, SQNR >= ``min_example_sqnr_db``; per length bucket
    with at least ``MIN_BUCKET_EXAMPLES`` examples, decisive agreement and SQNR on its own. Every
    bucket's metrics are recorded in ``by_length``, gated or not. A decision is *decisive* when the
    reference's top-1 margin exceeds 2 x e, where e is the example's max |diff| capped at
    ``TIE_ERROR_CAP`` x the median of all examples' max |diff|: if every score moves by at most e, a
    margin above 2e cannot flip, so a flip there is the artifact's fault; a smaller margin is a
    near-tie that noise may flip.

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
    if len(reference) != len(actual) or not reference:
        raise ValueError("reference and actual must be non-empty and of the same length")
    acc = ParityAccumulator(task)
    for i, (ref_outs, act_outs) in enumerate(zip(reference, actual)):
        acc.add(ref_outs, act_outs, lengths[i] if lengths else 0, labels[i] if labels else None)
    names = texts or [""] * len(reference)
    return acc.result(thresholds, lambda idx: {i: names[i] for i in idx}, n_worst)
