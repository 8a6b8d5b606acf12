"""Parity gates: the limits an artifact's outputs must meet against the fp32 reference, by precision and task."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .choices import Quant
from .errors import BadInputError

# A length bucket of the parity text is gated on its own when it has at least this many examples.
MIN_BUCKET_EXAMPLES = 3
INT4_MIN_SQNR_DB = 15.0
# Retrieval agreement (``parity.retrieval``): a query counts when fp32's nearest neighbour leads its second by this
# much cosine, and the gate needs this many such queries (fewer are reported only: one miss would be 5% of them).
DECISIVE_MARGIN = 0.01
MIN_QUERIES = 20


@dataclass(frozen=True)
class Thresholds:
    """Pass/fail limits of a parity check (None: not checked).

    fp32 artifacts are held to an absolute error; int8 artifacts to decisive top-1 agreement and SQNR
    (over all examples and in every length bucket with enough examples) and a per-example SQNR floor,
    because an absolute error of 1e-4 is impossible after quantization.

    Args:
        max_abs_diff: largest |artifact - fp32| of any output value.
        min_agreement: share of the reference's clear decisions (top-1 margin above what the
            artifact's error can move) the artifact must reproduce.
        min_sqnr_db: signal-to-quantization-noise ratio over all outputs, and per length bucket.
        min_example_sqnr_db: floor on every single example's SQNR (no example may be badly wrong).
        min_cosine: floor on every example's cosine to fp32 (sentence embeddings, whose use is a cosine).
        min_retrieval: share of decisive queries (each text against the others) on which the artifact's nearest
            neighbour is fp32's (sentence embeddings; ``parity.retrieval``).
    """

    max_abs_diff: float | None = None
    min_agreement: float | None = None
    min_sqnr_db: float | None = None
    min_example_sqnr_db: float | None = None
    min_cosine: float | None = None
    min_retrieval: float | None = None

    def __post_init__(self) -> None:
        if self.max_abs_diff is not None and self.max_abs_diff < 0:
            raise BadInputError("max |diff| threshold must be >= 0")
        if self.min_agreement is not None and not 0.0 <= self.min_agreement <= 1.0:
            raise BadInputError("agreement threshold must be between 0 and 1")
        if self.min_retrieval is not None and not 0.0 <= self.min_retrieval <= 1.0:
            raise BadInputError("retrieval agreement threshold must be between 0 and 1")

    @staticmethod
    def from_overrides(quant: Quant, **limits: float | None) -> "Thresholds | None":
        """The defaults for ``quant`` with the given limits (``max_abs_diff=...``) replaced; None when
        nothing is overridden (each artifact then gets the defaults of its own precision)."""
        given = {k: v for k, v in limits.items() if v is not None}
        if not given:
            return None
        return replace(Thresholds.default_for(quant), **given)

    @staticmethod
    def default_for(quant: Quant) -> "Thresholds":
        if quant is Quant.FP32:
            return Thresholds(max_abs_diff=1e-4)
        if quant is Quant.INT4:  # half the bits: ~6 dB less signal-to-noise per bit than int8
            return Thresholds(min_agreement=0.98, min_sqnr_db=INT4_MIN_SQNR_DB, min_example_sqnr_db=10.0)
        return Thresholds(min_agreement=0.99, min_sqnr_db=20.0, min_example_sqnr_db=15.0)

    @staticmethod
    def default_for_task(quant: Quant, kind: str) -> "Thresholds":
        """The defaults for ``quant``, plus for a pooled sentence embedding what an app's similarity search reads:
        a cosine floor (int8 0.99, int4 0.95) and retrieval agreement (int8 0.98, int4 0.95)."""
        t = Thresholds.default_for(quant)
        if kind == "sentence_embedding" and quant is not Quant.FP32:
            int8 = quant is Quant.INT8
            return replace(t, min_cosine=0.99 if int8 else 0.95, min_retrieval=0.98 if int8 else 0.95)
        return t

    def explain(self) -> list[str]:
        """One line per active gate, for reports."""
        lines = []
        if self.min_cosine is not None:
            lines.append(f"cosine >= {self.min_cosine:g}: every example's output vector points where fp32's does")
        if self.min_retrieval is not None:
            lines.append(
                f"retrieval agreement >= {self.min_retrieval:.0%}: with each text as a query against the others, "
                f"the artifact's nearest neighbour is fp32's wherever fp32's leads its second by {DECISIVE_MARGIN:g} "
                f"in cosine (gated from {MIN_QUERIES} such queries)"
            )
        if self.max_abs_diff is not None:
            lines.append(
                f"max |diff| <= {self.max_abs_diff:g}: no output value of any example is further from fp32 than this"
            )
        if self.min_agreement is not None:
            lines.append(
                f"decisive agreement >= {self.min_agreement:.0%}: the artifact makes the same top-1 "
                "decision as fp32 wherever fp32's margin is more than twice the artifact's error on "
                "that example (closer calls are near-ties, counted but not gated), over all examples "
                "and in each length bucket"
            )
        if self.min_sqnr_db is not None:
            lines.append(
                f"SQNR >= {self.min_sqnr_db:g} dB: output energy over error energy, over all examples "
                f"and in each length bucket with {MIN_BUCKET_EXAMPLES} or more examples"
            )
        if self.min_example_sqnr_db is not None:
            lines.append(
                f"per-example SQNR >= {self.min_example_sqnr_db:g} dB: no single text may be badly wrong "
                "(a text with near-zero outputs is judged against the median text's output power)"
            )
        return lines
