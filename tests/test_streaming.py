"""Streaming parity: the accumulator gives the in-memory computation's numbers to the last digit, batches
merge into the whole, and the bounded samples for plots stay bounded."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from parity_oracle import oracle

from mobile_export.core.choices import Quant
from mobile_export.core.thresholds import Thresholds
from mobile_export.core.tasks import get_task
from mobile_export.parity.accumulate import ParityAccumulator, compare
from mobile_export.parity.plots import MAX_POINTS, BottomK, CrossRuntimeTally, PlotSampler

TASKS = ["text-classification", "token-classification", "question-answering", "fill-mask", "feature-extraction"]
INT8 = Thresholds.default_for(Quant.INT8)


def _random_set(task_name: str, n: int, seed: int):
    """n examples of the task's output shapes; a few are far off (beyond the tie cap), one has a NaN-free
    inf, several tie exactly, lengths spread over every bucket."""
    rng = np.random.default_rng(seed)
    task = get_task(task_name)
    ref, act, lengths, labels = [], [], [], []
    for i in range(n):
        length = int(rng.choice([1, 5, 20, 40, 100, 200, 400, 600]))
        shapes = {"text-classification": [(1, 3)], "token-classification": [(1, length, 4)],
                  "question-answering": [(1, length), (1, length)], "fill-mask": [(1, length, 50)],
                  "feature-extraction": [(1, length, 8)]}[task_name]
        r = [rng.normal(size=s).astype(np.float32) for s in shapes]
        scale = 0.05 if i % 17 else 3.0  # every 17th example is an outlier
        a = [(x + scale * rng.normal(size=x.shape)).astype(np.float32) for x in r]
        if i % 23 == 5:
            r[0].flat[0] = r[0].flat[1 % r[0].size]  # an exact tie in the reference
        if i == n - 2 and seed % 2:
            a[0].flat[0] = np.inf
        ref.append(r)
        act.append(a)
        lengths.append(length)
        labels.append(int(rng.integers(3)) if task_name == "text-classification" else None)
    return task, ref, act, lengths, labels


def _equal(a, b) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


@pytest.mark.parametrize("task_name", TASKS)
@pytest.mark.parametrize("seed", [0, 1])
def test_streaming_equals_in_memory_computation_to_the_last_digit(task_name, seed):
    task, ref, act, lengths, labels = _random_set(task_name, 90, seed)
    texts = [f"text {i}" for i in range(len(ref))]
    r = compare(task, ref, act, INT8, texts=texts, lengths=lengths, labels=labels)
    o = oracle(task, ref, act, INT8, texts, lengths, labels)
    p = o["pooled"]
    got = dict(examples=r.n_examples, max_abs_diff=r.max_abs_diff, mean_abs_diff=r.mean_abs_diff, sqnr_db=r.sqnr_db,
               min_cosine=r.min_cosine, min_example_sqnr_db=r.min_example_sqnr_db, decisions=r.n_decisions,
               agreement=r.agreement, decisive=r.n_decisive, decisive_agreement=r.decisive_agreement)
    assert _equal(got, p)
    assert r.near_ties == p["decisions"] - p["decisive"]
    buckets = [dict(examples=b.examples, max_abs_diff=b.max_abs_diff, mean_abs_diff=b.mean_abs_diff,
                    sqnr_db=b.sqnr_db, min_cosine=b.min_cosine, min_example_sqnr_db=b.min_example_sqnr_db,
                    agreement=b.agreement, decisive_agreement=b.decisive_agreement, bucket=b.bucket,
                    near_ties=b.near_ties, gated=b.gated) for b in r.by_length]
    want = [{k: v for k, v in b.items() if k not in ("decisions", "decisive")} for b in o["buckets"]]
    assert _equal(buckets, want)
    assert [(w.text, w.length, w.max_abs_diff) for w in r.worst] == o["worst"]
    if o["accuracy"] is not None:
        assert (r.reference_accuracy, r.accuracy) == o["accuracy"]
    floor = [f for f in r.failures if "per-example SQNR floor" in f]
    if o["low"]:
        assert floor and floor[0].startswith(f"{o['low']} example(s)") and repr(texts[o["lowest"]]) in floor[0]
    else:
        assert not floor
    assert p["decisive"] > 0 and len(r.by_length) >= 5 or task_name == "feature-extraction"


def test_outliers_are_judged_at_the_cap():
    """An example whose error is far above the others' cannot excuse its own flips: the cap decides."""
    task, ref, act, lengths, _ = _random_set("token-classification", 60, 3)
    capped = compare(task, ref, act, Thresholds(), lengths=lengths)
    acc = ParityAccumulator(task)
    for r, a, n in zip(ref, act, lengths):
        acc.add(r, a, n)
    assert len(acc._tie_example) > 0  # near-ties kept for the cap
    uncapped = sum(acc._decisive)
    assert capped.n_decisive > uncapped  # the outliers' margins between 2 x cap and 2 x their error count


@pytest.mark.parametrize("task_name", TASKS)
def test_batches_merge_into_the_whole(task_name):
    task, ref, act, lengths, labels = _random_set(task_name, 70, 4)
    texts = [f"t{i}" for i in range(len(ref))]
    whole = compare(task, ref, act, INT8, texts=texts, lengths=lengths, labels=labels)
    merged = ParityAccumulator(task)
    for lo in range(0, len(ref), 16):
        part = ParityAccumulator(task)
        for i in range(lo, min(lo + 16, len(ref))):
            part.add(ref[i], act[i], lengths[i], labels[i])
        merged.merge(part)
    got = merged.result(INT8, lambda idx: {i: texts[i] for i in idx})
    a, b = whole.to_dict(), got.to_dict()
    for key in ("n_examples", "n_decisions", "n_decisive", "near_ties", "n_labelled", "failures", "worst", "lengths",
                "max_abs_diff", "min_cosine", "min_example_sqnr_db", "agreement", "decisive_agreement", "accuracy"):
        assert _equal(a[key], b[key]), key
    for key in ("mean_abs_diff", "sqnr_db"):
        assert b[key] == pytest.approx(a[key], rel=1e-12, abs=1e-300), key
    for x, y in zip(a["by_length"], b["by_length"]):
        assert x["examples"] == y["examples"] and x["near_ties"] == y["near_ties"]
        assert y["sqnr_db"] == pytest.approx(x["sqnr_db"], rel=1e-12)


def test_bottom_k_is_bounded_uniform_and_merges():
    whole = BottomK(500, 1, seed=0)
    for lo in range(0, 100_000, 10_000):
        whole.add([np.arange(lo, lo + 10_000, dtype=np.float64)])
    s = whole.sample()[:, 0]
    assert len(s) == 500 and np.all(np.diff(s) > 0)  # stream order, no repeats
    assert 35_000 < s.mean() < 65_000  # uniform over the stream, not its start
    a, b = BottomK(500, 1, seed=1), BottomK(500, 1, seed=2)
    a.add([np.arange(0, 50_000, dtype=np.float64)])
    b.add([np.arange(50_000, 100_000, dtype=np.float64)])
    a.merge(b)
    merged = a.sample()[:, 0]
    assert len(merged) == 500 and np.all(np.diff(merged) > 0) and (merged >= 50_000).sum() > 150
    few = BottomK(500, 1)
    few.add([np.arange(3.0)])
    assert few.sample()[:, 0].tolist() == [0.0, 1.0, 2.0]


def test_plot_sample_stays_bounded_on_wide_outputs():
    sampler = PlotSampler()
    rng = np.random.default_rng(0)
    for i in range(5000):
        x = rng.normal(size=(1, 20, 300))
        sampler.add([x], [x + 0.01], 20, 0.01)
    plot = sampler.plot()
    assert len(plot.reference) == MAX_POINTS == len(plot.per_example)
    assert all(math.isclose(b - a, 0.01, abs_tol=2e-5) for a, b in zip(plot.reference, plot.artifact))


def test_cross_runtime_merges():
    task, ref, act, _, _ = _random_set("token-classification", 30, 5)
    whole, parts = CrossRuntimeTally(task, ["a", "b"]), CrossRuntimeTally(task, ["a", "b"])
    second = CrossRuntimeTally(task, ["a", "b"])
    for i, (r, a) in enumerate(zip(ref, act)):
        whole.add({"a": r, "b": a})
        (parts if i < 12 else second).add({"a": r, "b": a})
    parts.merge(second)
    assert parts.rows() == whole.rows() and whole.rows()[0].decisions > 0
