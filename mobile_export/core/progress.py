"""Progress lines on stderr for long steps, with a heartbeat while a step runs."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import TextIO

from .interrupts import stop_if_requested


class Progress:
    """Prints ``[  12.3s] step ...`` when a step starts and ends; every ``heartbeat`` seconds while it runs."""

    def __init__(self, stream: TextIO | None = None, heartbeat: float = 20.0, enabled: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.heartbeat = heartbeat
        self.enabled = enabled
        self.start = time.monotonic()
        self.timings: dict[str, float] = {}

    def say(self, message: str) -> None:
        if self.enabled:
            print(f"[{time.monotonic() - self.start:7.1f}s] {message}", file=self.stream, flush=True)

    @contextlib.contextmanager
    def step(self, name: str, heartbeat: bool = True):
        """Time a step; while it runs, say it is still working (unless it reports progress itself)."""
        stop_if_requested()
        self.say(f"{name} ...")
        t0 = time.monotonic()
        done = threading.Event()

        def beat() -> None:
            while not done.wait(self.heartbeat):
                self.say(f"{name}: still working ({time.monotonic() - t0:.0f}s)")

        thread = threading.Thread(target=beat, daemon=True) if self.enabled and heartbeat else None
        if thread:
            thread.start()
        failed = True
        try:
            yield
            stop_if_requested()
            failed = False
        finally:
            done.set()
            if thread:
                thread.join()
            elapsed = time.monotonic() - t0
            self.timings[name] = self.timings.get(name, 0.0) + elapsed
            self.say(f"{name}: {'failed after' if failed else 'done in'} {elapsed:.1f}s")


class Silent(Progress):
    def __init__(self) -> None:
        super().__init__(enabled=False)
