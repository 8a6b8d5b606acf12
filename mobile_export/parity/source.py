"""The texts every artifact is judged on, streamed: the built-in mix, or the user's file framed by the empty text
and texts at 128 tokens and at the max length (so those length buckets are gated)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .data import ParityData
from .texts import long_texts, parity_texts


@dataclass(frozen=True)
class ParitySource:
    """The texts every artifact is judged on, in order: the empty text, then the user's file (read as a
    stream) or the built-in mix, then texts at 128 tokens and at the max length (so those length
    buckets are gated)."""

    before: tuple[str, ...]
    data: ParityData | None = None
    after: tuple[str, ...] = ()

    @staticmethod
    def build(tokenizer, data: ParityData | None, max_len: int) -> "ParitySource":
        """The parity texts for a checkpoint's tokenizer: ``data`` framed as above, or the built-in text."""
        if data is None:
            return ParitySource(tuple(parity_texts(tokenizer, max_len)))
        return ParitySource(("",), data, tuple(long_texts(tokenizer, max_len)))

    def __len__(self) -> int:
        return len(self.before) + (self.data.count if self.data else 0) + len(self.after)

    def items(self) -> Iterator[tuple[str, int | None]]:
        """(text, label or None) of every example, in order."""
        yield from ((t, None) for t in self.before)
        if self.data is not None:
            yield from self.data.items()
        yield from ((t, None) for t in self.after)

    def batches(self, size: int) -> Iterator[list[tuple[str, int | None]]]:
        """The examples in consecutive lists of ``size``."""
        batch: list[tuple[str, int | None]] = []
        for item in self.items():
            batch.append(item)
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch

    def texts_at(self, indices: Sequence[int]) -> dict[int, str]:
        """The texts of the given examples (one more pass over the source)."""
        wanted, out = set(indices), {}
        for i, (text, _) in enumerate(self.items()):
            if i in wanted:
                out[i] = text
                if len(out) == len(wanted):
                    break
        return out

    def describe(self) -> dict:
        return {
            "source": self.data.source if self.data is not None else "built-in text",
            "examples": len(self),
            "blank_lines_skipped": self.data.blank_lines if self.data is not None else 0,
        }
