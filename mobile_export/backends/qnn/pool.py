"""The NPU file on several HTP simulators side by side: the x86 simulator runs one text on one core, so the
parity check spreads its texts over one simulator process per core and takes the outputs back in order."""

from __future__ import annotations

import multiprocessing
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import numpy as np

from .runner import Runner

_runner: list[Runner] = []  # the worker process' session, opened once by its initializer


def _open(path: str) -> None:
    _runner.append(Runner(Path(path)))


def _length() -> int:
    return _runner[0].length


def _run(feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], float]:
    t = time.perf_counter()
    outs = _runner[0].run(feeds)
    return outs, time.perf_counter() - t


class Pool:
    """``processes`` HTP sessions of the file at ``path``, each in its own process: ``submit`` a text's inputs,
    ``result`` gives the outputs of the oldest text not yet taken; ``took`` is that text's time in its
    simulator (not the phone's time)."""

    def __init__(self, path: Path, processes: int) -> None:
        # spawned, not forked: the parent may hold torch's and ONNX Runtime's threads
        self.executor = ProcessPoolExecutor(
            max_workers=processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_open,
            initargs=(str(path),),
        )
        self.pending: deque[Future] = deque()
        self.took = 0.0
        try:
            self.length = self.executor.submit(_length).result()
        except BaseException:
            self.close()
            raise

    def submit(self, feeds: dict[str, np.ndarray]) -> None:
        """Queue one text (batch 1) on the next free simulator."""
        self.pending.append(self.executor.submit(_run, feeds))

    def result(self) -> list[np.ndarray]:
        """The outputs of the oldest submitted text, as ``Runner.run`` gives them."""
        outs, self.took = self.pending.popleft().result()
        return outs

    def close(self) -> None:
        """End the simulator processes."""
        self.pending.clear()
        self.executor.shutdown(wait=True, cancel_futures=True)
