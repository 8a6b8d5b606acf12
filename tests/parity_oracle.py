"""The in-memory parity computation the streaming accumulator replaced, kept as a test oracle.

It holds every example's outputs at once (what made a large validation set exhaust RAM) and computes
each number the direct way. The streaming result must equal it to the last digit on the same inputs.
"""

from __future__ import annotations

import numpy as np

from mobile_export.core.thresholds import MIN_BUCKET_EXAMPLES, Thresholds
from mobile_export.core.tasks import OutputKind, TaskSpec
from mobile_export.parity.metrics import (
    BUCKETS,
    TIE_ERROR_CAP,
    bucket_name,
    cosine,
    rows_of,
    sqnr_from_sums,
    top_margins,
)


def _example_stats(task: TaskSpec, reference, actual) -> list[dict]:
    parts_all = []
    for ref_outs, act_outs in zip(reference, actual):
        parts = []
        for r, a in zip(ref_outs, act_outs):
            r, a = np.asarray(r, np.float64), np.asarray(a, np.float64)
            diff = np.abs(r - a)
            if not np.all(np.isfinite(a)):
                diff = np.where(np.isfinite(a), diff, np.inf)
            parts.append((r, a, diff))
        parts_all.append(parts)
    ex_max = [max((float(d.max()) if d.size else 0.0) for _, _, d in p) for p in parts_all]
    signals = [float(sum(np.sum(r * r) for r, _, _ in p)) for p in parts_all]
    counts = [int(sum(d.size for _, _, d in p)) for p in parts_all]
    cap = TIE_ERROR_CAP * float(np.median(ex_max))
    typical = float(np.median([s / max(1, n) for s, n in zip(signals, counts)]))
    out = []
    for parts, m, sig, n, ref_outs, act_outs in zip(parts_all, ex_max, signals, counts, reference, actual):
        s = dict(max_abs_diff=m, count=n, signal=sig, decisions=0, agree=0, decisive=0, decisive_agree=0)
        if task.has_argmax:
            rows = rows_of(task.kind, ref_outs)
            dr, da = rows.argmax(-1), rows_of(task.kind, act_outs).argmax(-1)
            clear = top_margins(rows) > 2.0 * min(m, cap)
            s.update(decisions=int(dr.size), agree=int(np.sum(dr == da)), decisive=int(np.sum(clear)),
                     decisive_agree=int(np.sum((dr == da) & clear)))
        with np.errstate(invalid="ignore", over="ignore"):
            s["abs_sum"] = float(sum(d.sum() for _, _, d in parts))
            s["noise"] = float(sum(np.sum((r - a) ** 2) for r, a, _ in parts))
            s["min_cosine"] = min(cosine(r, a) for r, a, _ in parts)
        s["sqnr_db"] = sqnr_from_sums(max(sig / max(1, n), typical), s["noise"] / max(1, n))
        out.append(s)
    return out


def _pooled(stats: list[dict]) -> dict:
    decisions = sum(s["decisions"] for s in stats)
    decisive = sum(s["decisive"] for s in stats)
    return dict(
        examples=len(stats), max_abs_diff=max(s["max_abs_diff"] for s in stats),
        mean_abs_diff=sum(s["abs_sum"] for s in stats) / max(1, sum(s["count"] for s in stats)),
        sqnr_db=sqnr_from_sums(sum(s["signal"] for s in stats), sum(s["noise"] for s in stats)),
        min_cosine=min(s["min_cosine"] for s in stats), min_example_sqnr_db=min(s["sqnr_db"] for s in stats),
        decisions=decisions, agreement=sum(s["agree"] for s in stats) / decisions if decisions else None,
        decisive=decisive,
        decisive_agreement=sum(s["decisive_agree"] for s in stats) / decisive if decisive else None)


def oracle(task: TaskSpec, reference, actual, t: Thresholds, texts, lengths, labels=None, n_worst: int = 3) -> dict:
    """The numbers the pre-streaming ``compare`` gave, as a dict (gates are left to the tested code)."""
    stats = _example_stats(task, reference, actual)
    pooled = _pooled(stats)
    low = []
    if t.min_example_sqnr_db is not None:
        low = [i for i, s in enumerate(stats) if not s["sqnr_db"] >= t.min_example_sqnr_db]
    per_bucket = []
    for lo, hi in BUCKETS:
        idx = [i for i, n in enumerate(lengths) if lo <= n <= hi]
        if idx:
            p = _pooled([stats[i] for i in idx])
            per_bucket.append(dict(p, bucket=bucket_name(lo, hi), near_ties=p["decisions"] - p["decisive"],
                                   gated=len(idx) >= MIN_BUCKET_EXAMPLES))
    accuracy = None
    labelled = [(i, y) for i, y in enumerate(labels or []) if y is not None]
    if labelled and task.kind is OutputKind.SEQUENCE_LOGITS:
        ref_right = sum(int(rows_of(task.kind, reference[i]).argmax(-1)[0] == y) for i, y in labelled)
        act_right = sum(int(rows_of(task.kind, actual[i]).argmax(-1)[0] == y) for i, y in labelled)
        accuracy = (ref_right / len(labelled), act_right / len(labelled))
    order = sorted(range(len(stats)), key=lambda i: -stats[i]["max_abs_diff"])[:n_worst]
    return dict(pooled=pooled, low=len(low),
                lowest=min(low, key=lambda j: stats[j]["sqnr_db"]) if low else None,
                buckets=per_bucket, accuracy=accuracy,
                worst=[(texts[i][:200], lengths[i], stats[i]["max_abs_diff"]) for i in order])
