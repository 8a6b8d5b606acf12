"""Size budgets: a plain size checked against the file, or a store preset checked against the
deflate-compressed download (stores limit what users download)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import BadInputError

CHECKED = "2026-11-29"
_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_size(text: str) -> int:
    """``15MB`` -> 15000000, ``12MiB`` -> 12582912, ``4096`` -> 4096."""
    import re

    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise BadInputError(f"cannot read size '{text}'; write e.g. 15MB, 12MiB or 4096")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


@dataclass(frozen=True)
class Budget:
    """A size limit; store limits apply to the compressed download, a plain number to the file."""

    name: str
    bytes: int
    compressed: bool
    source: str = ""
    checked: str = ""

    @property
    def applies_to(self) -> str:
        """What the limit is checked against: ``compressed`` (the download) or ``file``."""
        return "compressed" if self.compressed else "file"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "bytes": self.bytes,
            "applies_to": self.applies_to,
            "source": self.source,
            "checked": self.checked,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Budget:
        """The budget ``as_dict`` wrote."""
        return cls(
            d["name"], int(d["bytes"]), d.get("applies_to") == "compressed", d.get("source", ""), d.get("checked", "")
        )


PRESETS = {
    "play-base": Budget(
        "Google Play base module (compressed download)",
        500 * 10**6,
        True,
        "https://support.google.com/googleplay/android-developer/answer/9859372",
        CHECKED,
    ),
    "play-asset-pack": Budget(
        "Google Play asset pack (compressed download)",
        1500 * 10**6,
        True,
        "https://support.google.com/googleplay/android-developer/answer/9859372",
        CHECKED,
    ),
    "legacy-apk": Budget(
        "Google Play legacy APK (compressed download)",
        100 * 10**6,
        True,
        "https://support.google.com/googleplay/android-developer/answer/9859372",
        CHECKED,
    ),
    "app-store-cellular": Budget(
        "App Store cellular download",
        200 * 10**6,
        True,
        "https://developer.apple.com/help/app-store-connect/reference/maximum-build-file-sizes",
        CHECKED,
    ),
}


def resolve_budget(text: str) -> Budget:
    """A preset name (``play-base`` ...) or a size (``15MB``)."""
    key = text.strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    try:
        return Budget(f"{text.strip()} file size", parse_size(text), False)
    except BadInputError:
        raise BadInputError(
            f"cannot read budget '{text}'; write a size like 15MB or one of: {', '.join(PRESETS)}"
        ) from None


def budget_verdict(file_bytes: int, deflate_bytes: int, budget: Budget) -> dict[str, Any]:
    """The budget, what was measured against it (compressed or file size), and whether it fits."""
    measured = deflate_bytes if budget.compressed else file_bytes
    return {
        **budget.as_dict(),
        "within": measured <= budget.bytes,
        "over_bytes": max(0, measured - budget.bytes),
        "measured_bytes": measured,
    }
