"""Retrieval agreement of sentence embeddings: what a search app reads from them.

Each text is a query against every other text of the parity set. A query is *decisive* when fp32's nearest
neighbour leads its second by at least ``DECISIVE_MARGIN`` in cosine; the artifact keeps it when its own nearest
neighbour is fp32's. A file can keep every text's cosine to fp32 above 0.99 and still reorder neighbours (its error
moves texts towards each other), which is what a user of a search box sees; this measures it.

Only pooled embeddings are kept, as float32 [width] per text, since the pairwise similarities need all of them.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from ..core.thresholds import DECISIVE_MARGIN, MIN_QUERIES


@dataclass(frozen=True)
class Retrieval:
    """How many decisive queries there were and on how many the artifact's nearest neighbour is fp32's."""

    queries: int
    kept: int

    @property
    def agreement(self) -> float | None:
        """The share of decisive queries kept (None without any)."""
        return self.kept / self.queries if self.queries else None

    @property
    def gated(self) -> bool:
        """Whether there are enough decisive queries to gate on."""
        return self.queries >= MIN_QUERIES


class RetrievalTracker:
    """The pooled embeddings of the reference and the artifact, one text at a time."""

    def __init__(self) -> None:
        self.width = 0
        self._reference, self._actual = array("f"), array("f")

    def add(self, reference: np.ndarray, actual: np.ndarray) -> None:
        """Keep one text's embeddings (any shape with one vector: [1, width] or [width])."""
        r, a = np.asarray(reference, np.float32).reshape(-1), np.asarray(actual, np.float32).reshape(-1)
        if not self.width:
            self.width = r.size
        if r.size != self.width or a.size != self.width:
            raise ValueError(f"embedding width {r.size}/{a.size}, expected {self.width}")
        self._reference.extend(r.tolist())
        self._actual.extend(a.tolist())

    def merge(self, other: RetrievalTracker) -> None:
        """Fold in the texts of the batch that follows."""
        if other.width and self.width and other.width != self.width:
            raise ValueError(f"embedding width {other.width}, expected {self.width}")
        self.width = self.width or other.width
        self._reference.extend(other._reference)
        self._actual.extend(other._actual)

    def result(self) -> Retrieval | None:
        """The agreement over every text added (None with fewer than three texts: no first and second)."""
        if not self.width or len(self._reference) // self.width < 3:
            return None
        return retrieval(
            np.frombuffer(self._reference, np.float32).reshape(-1, self.width),
            np.frombuffer(self._actual, np.float32).reshape(-1, self.width),
        )


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def retrieval(reference: np.ndarray, actual: np.ndarray, margin: float = DECISIVE_MARGIN) -> Retrieval:
    """Retrieval agreement of ``actual`` against ``reference`` ([texts, width] each), every text a query."""
    ref, got = _unit(reference), _unit(actual)
    sim_ref, sim_got = ref @ ref.T, got @ got.T
    np.fill_diagonal(sim_ref, -np.inf)
    np.fill_diagonal(sim_got, -np.inf)
    top2 = np.argsort(-sim_ref, axis=1, kind="stable")[:, :2]
    rows = np.arange(len(ref))
    lead = sim_ref[rows, top2[:, 0]] - sim_ref[rows, top2[:, 1]]
    decisive = lead >= margin
    kept = np.argmax(sim_got, axis=1) == top2[:, 0]
    return Retrieval(queries=int(decisive.sum()), kept=int((decisive & kept).sum()))
