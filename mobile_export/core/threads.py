"""How many threads a runtime (ONNX Runtime, ExecuTorch's XNNPACK threadpool) gets when no one asked.

By default each runtime takes one thread per core. Several processes that each do that on the same cores
(parallel exports on a CI machine, pytest-xdist workers) oversubscribe them, and the runtimes' spinning
thread pools make that far slower than running one after another (measured: two demo parity runs side by
side on 2 cores took 194 s each with the default, 50 s each with one thread; one alone 50 s).
``MOBILE_EXPORT_THREADS`` caps it in one place; an explicit count (``bench --threads``) still wins.
"""

from __future__ import annotations

import os

from .errors import BadInputError

THREADS_ENV = "MOBILE_EXPORT_THREADS"


def runtime_threads(requested: int | None = None) -> int | None:
    """``requested``, else ``$MOBILE_EXPORT_THREADS``, else None (the runtime's own default)."""
    if requested:
        return requested
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise BadInputError(f"{THREADS_ENV}={value!r} is not a thread count; set it to a whole number >= 1 or unset it")
    return int(value)
