"""The NPU file on several HTP simulators side by side: the x86 simulator runs one text on one core, so the
parity check spreads its texts over one simulator process per core and takes the outputs back in order.

Each simulator is ``python -m mobile_export.backends.qnn.pool FILE``, not a multiprocessing child: a child that
multiprocessing spawns imports the caller's main module again, which breaks a user's script that calls ``export``
without an ``if __name__ == "__main__"`` guard. Messages are pickles over the child's stdin and stdout (our own
process on both ends); a thread per direction keeps a full pipe from blocking the parent."""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ...core.errors import BadInputError
from .runner import QnnRunner as Runner


class _Simulator:
    """One simulator process of the file at ``path``: ``send`` queues a text, ``receive`` gives the next reply."""

    def __init__(self, path: Path) -> None:
        self.stderr = tempfile.TemporaryFile()  # the provider's notes, and a crash's last words
        self.proc = subprocess.Popen(
            [sys.executable, "-m", __name__, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        self.inbox: queue.Queue = queue.Queue()
        self.outbox: queue.Queue = queue.Queue()
        threading.Thread(target=self._send, daemon=True).start()
        threading.Thread(target=self._receive, daemon=True).start()

    def _send(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (item := self.inbox.get()) is not None:
                pickle.dump(item, stdin)
                stdin.flush()
            stdin.close()
        except (BrokenPipeError, OSError):  # the process is gone: ``_receive`` says so
            pass

    def _receive(self) -> None:
        try:
            while True:
                self.outbox.put(pickle.load(self.proc.stdout))  # type: ignore[arg-type]
        except (EOFError, OSError, pickle.UnpicklingError):
            self.outbox.put(("died", self._last_words()))

    def _last_words(self) -> str:
        self.proc.wait()
        self.stderr.seek(0)
        lines = [x for x in self.stderr.read().decode("utf-8", "replace").splitlines() if x.strip()]
        return f"exit code {self.proc.returncode}" + (f": {lines[-1][:300]}" if lines else "")

    def send(self, feeds: dict[str, np.ndarray]) -> None:
        self.inbox.put(feeds)

    def receive(self) -> tuple:
        kind, *rest = self.outbox.get()
        if kind == "error":
            raise (BadInputError if rest[0] == "BadInputError" else RuntimeError)(rest[1])
        if kind == "died":
            raise RuntimeError(f"the HTP simulator process ended ({rest[0]})")
        return tuple(rest)

    def close(self) -> None:
        self.inbox.put(None)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


class SimulatorPool:
    """``processes`` HTP sessions of the file at ``path``, each in its own process: ``submit`` a text's inputs,
    ``result`` gives the outputs of the oldest text not yet taken; ``took`` is that text's time in its
    simulator (not the phone's time)."""

    def __init__(self, path: Path, processes: int) -> None:
        self.simulators: list[_Simulator] = []
        self.pending: deque[_Simulator] = deque()
        self.took = 0.0
        self.turn = 0
        try:
            self.simulators = [_Simulator(Path(path)) for _ in range(processes)]
            self.length = [s.receive()[0] for s in self.simulators][0]  # each loads its session side by side
        except BaseException:
            self.close()
            raise

    def submit(self, feeds: dict[str, np.ndarray]) -> None:
        """Queue one text (batch 1) on the next simulator in turn."""
        simulator = self.simulators[self.turn % len(self.simulators)]
        self.turn += 1
        simulator.send(feeds)
        self.pending.append(simulator)

    def result(self) -> list[np.ndarray]:
        """The outputs of the oldest submitted text, as ``Runner.run`` gives them."""
        outs, self.took = self.pending.popleft().receive()
        return outs

    def close(self) -> None:
        """End the simulator processes."""
        self.pending.clear()
        for simulator in self.simulators:
            simulator.close()
        self.simulators = []


def _serve(path: str, replies: BinaryIO) -> None:
    """The simulator process: the file's session, then one reply per text read from stdin until it closes."""

    def reply(message: Any) -> None:
        pickle.dump(message, replies)
        replies.flush()

    try:
        runner = Runner(Path(path))
    except Exception as exc:
        reply(("error", type(exc).__name__, f"{type(exc).__name__}: {exc}"))
        return
    reply(("ready", runner.length))
    while True:
        try:
            feeds = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        t = time.perf_counter()
        try:
            outs = runner.run(feeds)
        except Exception as exc:
            reply(("error", type(exc).__name__, str(exc)))
            continue
        reply(("ok", outs, time.perf_counter() - t))


if __name__ == "__main__":
    # the replies get stdout's pipe alone: anything a native library prints goes to stderr instead
    _replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _serve(sys.argv[1], _replies)
