"""What a repaired artifact costs the device: ``bench``'s fresh-process measurement, before and after a repair."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ... import backends
from ...backends import Backend
from ...measure.bench import measure

COST_TOKENS = 128  # the length a repair's latency is reported at (the export's max length if shorter)
COST_THREADS = 2


@dataclass(frozen=True)
class Cost:
    """One artifact as the device feels it: ``bench``'s fresh-process measurement at one length."""

    tokens: int
    latency_ms: float  # median of batch-1 calls
    model_rss: int  # bytes: the model's RAM after load and the calls


def cost(backend: Backend, staging: Path, vocab_size: int, max_len: int) -> Cost:
    """The artifact of ``backend`` in ``staging`` as ``bench`` measures it: a fresh process, batch-1 calls at
    ``COST_TOKENS`` tokens on ``COST_THREADS`` threads, the model's RAM after them."""
    tokens = min(COST_TOKENS, max_len)
    path = staging / backends.get_info(backend).file_name
    got = measure(backend.value, str(path), COST_THREADS, [tokens], vocab_size, runs=10, warmup=3)
    return Cost(tokens, float(got["latency_ms"][str(tokens)]["median"]), int(got["model_rss_bytes"]))
