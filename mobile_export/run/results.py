"""What a task's outputs mean, as typed values: the predictor returns them and ``run`` prints them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Classification:
    """text-classification: the top label and every label's score (softmax or sigmoid, as the model says)."""

    label: str
    score: float
    scores: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"label": self.label, "score": self.score, "scores": self.scores}

    def __str__(self) -> str:
        others = ", ".join(f"{k} {v:.4f}" for k, v in self.scores.items() if k != self.label)
        return f"{self.label} {self.score:.4f}" + (f"  ({others})" if others else "")


@dataclass(frozen=True)
class Entity:
    """token-classification: consecutive tokens of one tag (B-/I- grouped), their mean score and character span."""

    label: str
    score: float
    word: str
    start: int
    end: int

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"label": self.label, "score": self.score, "word": self.word, "start": self.start, "end": self.end}

    def __str__(self) -> str:
        return f"{self.label} [{self.start}:{self.end}] {self.word!r} {self.score:.4f}"


@dataclass(frozen=True)
class Answer:
    """question-answering: the best span of the context (start*end probability) and its character span."""

    text: str
    score: float
    start: int
    end: int

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"answer": self.text, "score": self.score, "start": self.start, "end": self.end}

    def __str__(self) -> str:
        return f"{self.text!r} [{self.start}:{self.end}] {self.score:.4f}"


@dataclass(frozen=True)
class Fill:
    """One candidate for a masked position."""

    token_id: int
    token: str
    score: float

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"token_id": self.token_id, "token": self.token, "score": self.score}


@dataclass(frozen=True)
class MaskFills:
    """fill-mask: the top candidates at one ``[MASK]`` (``position``: its token index), best first."""

    position: int
    fills: tuple[Fill, ...]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"position": self.position, "fills": [f.to_json() for f in self.fills]}

    def __str__(self) -> str:
        return f"[MASK]@{self.position}: " + ", ".join(f"{f.token!r} {f.score:.4f}" for f in self.fills)


@dataclass(frozen=True)
class Embedding:
    """feature-extraction: the model's vectors, [tokens, hidden] (last hidden state) or [hidden] (pooled)."""

    vector: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        """The vector's shape."""
        return tuple(int(d) for d in self.vector.shape)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"shape": list(self.shape), "embedding": self.vector.astype(float).tolist()}

    def __str__(self) -> str:
        flat = self.vector.reshape(-1)
        head = ", ".join(f"{v:.4f}" for v in flat[:4])
        return f"shape {list(self.shape)}: [{head}{', ...' if flat.size > 4 else ''}]"


Result = Classification | list[Entity] | Answer | list[MaskFills] | Embedding


def result_json(result: Result) -> Any:
    """A result (or list of results) as JSON-ready data."""
    if isinstance(result, list):
        return [r.to_json() for r in result]
    return result.to_json()


def result_text(result: Result) -> str:
    """A result as lines for a terminal."""
    if isinstance(result, list):
        return "\n".join(str(r) for r in result) if result else "(none)"
    return str(result)
