"""What ``--repair`` did: each attempt, what it changed in the model, and each artifact before and after it."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...parity.artifact import ArtifactResult
from .cost import Cost

NOTHING_TO_FOLD = (
    "nothing to fold: no outlier channel at an input the graph rescales exactly (the embedding projection, "
    "the attention output)"
)
NOTHING_TO_SCALE = (
    "nothing to scale: no Linear input with an outlier channel whose scales gain the model's emulated int8"
)
NO_LARGER_SET = "a larger margin chose no weight beyond the ones already tried"
NOTHING_CLIPPED = "nothing to widen: the diagnosis found no activation of the refused NPU file clipped"
NOTHING_TO_KEEP = (
    "nothing to keep in fp32: the emulated int8 of every weight already clears the gate, so int8 is not what "
    "the gate refuses (check the weights that were exported)"
)
# dB above the gate's SQNR limits the emulated int8 of a mixed-precision choice must reach, one round each
# while the real gate still refuses: the emulation is within ~3 dB of the real runtime on the same texts
# (tests/test_outliers.py), but the sample is 16 texts and the gate also judges each length bucket
MIXED_MARGINS_DB = (6.0, 12.0)


@dataclass(frozen=True)
class Outcome:
    """One artifact before and after one repair."""

    file: str
    before_sqnr_db: float | None
    after_sqnr_db: float | None
    before_min_example_db: float | None
    after_min_example_db: float | None
    passed: bool
    bytes_before: int
    bytes_after: int
    # median ms per text during each parity run (batch 1, the parity texts' mixed lengths; not a benchmark)
    parity_ms_before: float | None = None
    parity_ms_after: float | None = None
    # the repaired artifact's hidden state after each depth, in its real runtime (SQNR dB; the plain one's
    # is the diagnosis'); None where its layers are not a loop the runtime exposes
    after_depth_sqnr_db: tuple[float | None, ...] | None = None
    # what the device feels, each artifact in a fresh process as ``bench`` measures it (``Cost``): median ms of
    # one call at ``cost_tokens`` tokens, and the model's RAM after load + runs; None with --no-memory
    cost_tokens: int | None = None
    latency_ms_before: float | None = None
    latency_ms_after: float | None = None
    model_rss_before: int | None = None
    model_rss_after: int | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Attempt:
    """One repair method tried: what it changed in the model, and what the gate said of each artifact."""

    method: str
    changes: list[dict[str, Any]]
    note: str = ""
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and all(o.passed for o in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "changes": self.changes,
            "note": self.note,
            "passed": self.passed,
            "artifacts": [o.to_json() for o in self.outcomes],
        }


@dataclass
class RepairRecord:
    """What ``--repair`` did: the mode, every attempt in order, and the method whose artifacts were kept."""

    mode: str
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def applied(self) -> str | None:
        return next((a.method for a in self.attempts if a.passed), None)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "applied": self.applied, "attempts": [a.to_json() for a in self.attempts]}

    def headline(self) -> str:
        """One line for progress and the CLI: each attempt and its artifacts' SQNR before -> after."""
        parts = []
        for a in self.attempts:
            done = ", ".join(
                f"{o.file} {_db(o.before_sqnr_db)} -> {_db(o.after_sqnr_db)} dB {'pass' if o.passed else 'FAIL'}"
                for o in a.outcomes
            )
            parts.append(f"{a.method}: {a.note or done}" + (f" ({done})" if a.note and done else ""))
        return "; ".join(parts)


def finite(v: float | None) -> float | None:
    """``v`` rounded to 0.01, None for None or a value that is not finite (JSON-ready)."""
    return round(v, 2) if v is not None and math.isfinite(v) else None


def _db(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def failing(results: Sequence[ArtifactResult]) -> list[ArtifactResult]:
    """The artifacts the gate refused."""
    return [r for r in results if not r.parity.passed]


def outcome(
    before: ArtifactResult,
    after: ArtifactResult,
    after_depth_db: Sequence[float] | None = None,
    costs: tuple[Cost, Cost] | None = None,
) -> Outcome:
    """``after`` (the repaired artifact) against ``before`` (the plain one); ``after_depth_db``: its error by
    depth in its runtime; ``costs``: (before, after) measured on the device's path."""
    cost: dict[str, Any] = {}
    if costs is not None:
        cost = {
            "cost_tokens": costs[1].tokens,
            "latency_ms_before": costs[0].latency_ms,
            "latency_ms_after": costs[1].latency_ms,
            "model_rss_before": costs[0].model_rss,
            "model_rss_after": costs[1].model_rss,
        }
    return Outcome(
        file=after.file,
        before_sqnr_db=finite(before.parity.sqnr_db),
        after_sqnr_db=finite(after.parity.sqnr_db),
        before_min_example_db=finite(before.parity.min_example_sqnr_db),
        after_min_example_db=finite(after.parity.min_example_sqnr_db),
        passed=after.parity.passed,
        bytes_before=before.bytes,
        bytes_after=after.bytes,
        parity_ms_before=_median_ms(before),
        parity_ms_after=_median_ms(after),
        after_depth_sqnr_db=None if after_depth_db is None else tuple(finite(d) for d in after_depth_db),
        **cost,
    )


def _median_ms(result: ArtifactResult) -> float | None:
    latency = (result.stats or {}).get("parity_latency_ms") or {}
    return latency.get("median")
