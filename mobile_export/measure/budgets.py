"""Size budgets: a plain size checked against the file, or a store preset checked against the
deflate-compressed download (stores limit what users download)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.config import parse_size
from ..core.errors import BadInputError

CHECKED = "2026-11-29"


@dataclass(frozen=True)
class Budget:
    """A size limit; store limits apply to the compressed download, a plain number to the file."""

    name: str
    bytes: int
    compressed: bool
    source: str = ""
    checked: str = ""

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "bytes": self.bytes,
            "applies_to": "compressed" if self.compressed else "file",
            "source": self.source,
            "checked": self.checked,
        }


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
