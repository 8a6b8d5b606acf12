"""A disk cache for values that are slow to derive and depend only on their key (the on-device tokenizer's
Unicode tables: ~8 s of probing every code point, the same for every export made with the same libraries).

A value lives in ``$MOBILE_EXPORT_CACHE`` (default ``~/.cache/mobile-export/tables``) as JSON beside its full
key, written under a temporary name and renamed into place. A file that is missing, unreadable or written for
another key is recomputed; a cache that cannot be written costs only the time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import OutputError
from .fsutil import write_json

ENV_VAR = "MOBILE_EXPORT_CACHE"


def cache_dir() -> Path:
    """Where cached values live: ``$MOBILE_EXPORT_CACHE``, else ``~/.cache/mobile-export/tables``."""
    return Path(os.environ.get(ENV_VAR) or Path.home() / ".cache" / "mobile-export" / "tables")


def cached_json(kind: str, key: dict, compute: Callable[[], Any]) -> Any:
    """``compute()``'s JSON value for ``key`` (which must name everything the value depends on), from the cache
    when a file there was written for exactly this key, else computed and stored."""
    full = {"kind": kind, **key}
    digest = hashlib.sha256(json.dumps(full, sort_keys=True).encode()).hexdigest()[:32]
    path = cache_dir() / f"{kind}-{digest}.json"
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(stored, dict) and stored.get("key") == full and "value" in stored:
            return stored["value"]
    except (OSError, ValueError):
        pass
    value = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {"key": full, "value": value}, compact=True)
    except (OSError, OutputError):
        pass  # a read-only home: every export probes again, as before the cache
    return value
