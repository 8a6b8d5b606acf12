"""How measured figures are summarized and shown: MiB, median and p90, SQNR from its sums, dB in report.json."""

from __future__ import annotations

import math


def mib(n_bytes: float, digits: int = 1) -> str:
    """``n_bytes`` as ``12.3 MiB``."""
    return f"{n_bytes / 2**20:.{digits}f} MiB"


def latency_summary(seconds_or_ms: list[float]) -> dict[str, float]:
    """Median and p90 (nearest rank, as the reports have always given them) of latencies, rounded to 3 places."""
    ordered = sorted(seconds_or_ms)
    return {"median": round(ordered[len(ordered) // 2], 3), "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 3)}


def db_json(value: float) -> float | None:
    """A dB figure as report.json holds it: two decimals, None where infinite (an exact match, or no signal)."""
    return round(value, 2) if math.isfinite(value) else None


def sqnr_from_sums(signal: float, noise: float) -> float:
    """10 log10(signal / noise) of summed squares: inf for no noise, -inf for no signal or unbounded noise."""
    if noise == 0.0:
        return math.inf
    if signal == 0.0 or not math.isfinite(noise):
        return -math.inf
    return 10.0 * math.log10(signal / noise)
