"""How measured figures are summarized and shown: MiB, median and p90."""

from __future__ import annotations


def mib(n_bytes: float, digits: int = 1) -> str:
    """``n_bytes`` as ``12.3 MiB``."""
    return f"{n_bytes / 2**20:.{digits}f} MiB"


def latency_summary(seconds_or_ms: list[float]) -> dict[str, float]:
    """Median and p90 (nearest rank, as the reports have always given them) of latencies, rounded to 3 places."""
    ordered = sorted(seconds_or_ms)
    return {"median": round(ordered[len(ordered) // 2], 3), "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 3)}
