"""The one rule text passes before either tokenizer (Python parity and the Java one on the phone) sees it."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def sanitize(text: str) -> str:
    """Replace unpaired surrogates by U+FFFD (the Rust tokenizers library cannot take one at all)."""
    return _SURROGATE.sub("\ufffd", text)
