"""A Ctrl-C latch: an interrupt that a library catches and drops still stops the run at the next step."""

from __future__ import annotations

import contextlib
import signal
import threading

_REQUESTED = threading.Event()


def _on_sigint(signum, frame) -> None:
    _REQUESTED.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def latched_interrupts():
    """Within this block, remember every SIGINT besides raising KeyboardInterrupt as Python does."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers are main-thread only
        yield
        return
    _REQUESTED.clear()
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _REQUESTED.clear()


def requested() -> bool:
    """Whether Ctrl-C was pressed since the latch was set (even if a library swallowed the exception)."""
    return _REQUESTED.is_set()


def wrapped(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt, or a library's exception wrapping or naming one (Ctrl-C inside
    a C++ call can surface as e.g. ``TypeError("... KeyboardInterrupt")``)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt) or "KeyboardInterrupt" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def stop_if_requested() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed and something swallowed it."""
    if _REQUESTED.is_set():
        raise KeyboardInterrupt
