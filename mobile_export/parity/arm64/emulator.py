"""One emulated ARM64 process per phone CPU model, serving artifact runs over a pipe.

The host sends length-prefixed pickles (``load``, ``run``, ``features``, ``versions``) to ``worker`` running under
qemu-aarch64 with ``QEMU_CPU`` set to the model; replies come back in order. Requests can be sent ahead
(``EmulatedRunner.submit``), a whole window of texts at once, so each CPU model computes without waiting for
the slower ones or for the host: a thread writes the requests and another reads the replies, so neither
side ever blocks on a full pipe.
"""

from __future__ import annotations

import os
import pickle
import queue
import struct
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

from ...core.errors import ArtifactLoadError, MobileExportError
from .env import Arm64Env

_HEADER = struct.Struct("<Q")
WORKER = "mobile_export.parity.arm64.worker"  # the module the emulated Python runs
EXTRA_PYTHONPATH: list[str] = []  # more folders for the emulated Python (tests put a worker of their own here)


def write_message(stream, message) -> None:
    """One length-prefixed pickle onto ``stream``."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_message(stream):
    """The next message on ``stream``, or None at its end."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    return pickle.loads(stream.read(size))  # our own worker's reply, never outside data


def _package_folder(name: str) -> Path:
    """Where the installed package ``name`` lives (found, not imported): the emulated Python imports it from a
    link, whatever the working directory."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise MobileExportError(f"the {name} package is not installed here; reinstall mobile-export")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


class Emulator:
    """A worker process under qemu-aarch64 emulating ``cpu`` (a context manager; ``close`` ends it)."""

    def __init__(self, env: Arm64Env, cpu: str, qemu: Path | None = None) -> None:
        self.cpu = cpu
        self._project = tempfile.TemporaryDirectory(prefix="mobile-export-arm64-")
        for name in ("mobile_export", "quantize"):  # only the project's packages, beside the aarch64 site
            os.symlink(_package_folder(name), Path(self._project.name) / name)
        self._log = open(Path(self._project.name) / "worker.log", "w+b")
        env_vars = {
            "QEMU_CPU": cpu,
            "QEMU_LD_PREFIX": str(env.userland),
            "LD_LIBRARY_PATH": str(env.stubs),
            "PYTHONPATH": ":".join([str(env.site), self._project.name, *EXTRA_PYTHONPATH]),
            "PYTHONNOUSERSITE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "HOME": self._project.name,
            "PATH": "/usr/bin:/bin",
            "OMP_NUM_THREADS": "1",
            "TORCHINDUCTOR_CACHE_DIR": self._project.name,
        }
        self.process = subprocess.Popen(
            [str(qemu or env.qemu), str(env.python), "-m", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env_vars,
        )
        self.pending = 0
        self._requests: queue.SimpleQueue = queue.SimpleQueue()  # None: no more requests
        self._replies: queue.SimpleQueue = queue.SimpleQueue()  # None: the process ended
        self._threads = [
            threading.Thread(target=self._write_requests, daemon=True, name=f"arm64-{cpu}-requests"),
            threading.Thread(target=self._read_replies, daemon=True, name=f"arm64-{cpu}-replies"),
        ]
        for thread in self._threads:
            thread.start()

    def _write_requests(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None  # opened with PIPE
        try:
            while (message := self._requests.get()) is not None:
                write_message(stdin, message)
        except (BrokenPipeError, OSError):
            pass  # the process ended: the reader sees its end and ``receive`` says why
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def _read_replies(self) -> None:
        try:
            while (reply := read_message(self.process.stdout)) is not None:
                self._replies.put(reply)
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            pass
        self._replies.put(None)

    def send(self, op: str, arg=None) -> None:
        """Queue a request (never blocks; the writer thread sends it)."""
        if self.process.poll() is not None:
            raise self._died()
        self._requests.put((op, arg))
        self.pending += 1

    def receive(self):
        """The reply to the oldest request not yet answered."""
        reply = self._replies.get()
        if reply is None:
            self._replies.put(None)  # every later call sees the end too
            self._wait()
            raise self._died()
        self.pending -= 1
        status, value = reply
        if status != "ok":
            raise ArtifactLoadError(f"arm64 {self.cpu}: {value}")
        return value

    def call(self, op: str, arg=None):
        self.send(op, arg)
        return self.receive()

    def versions(self) -> dict:
        """The runtime versions the emulated process imports."""
        return self.call("versions")

    def features(self) -> tuple[str, ...]:
        """The kernel-choosing features (dotprod, i8mm, sve2, sme2, ...) the emulated CPU model announces."""
        return tuple(self.call("features"))

    def _wait(self) -> None:
        """Until the process has ended; killed if it has not 30 s after its input or output closed."""
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _died(self) -> MobileExportError:
        self.process.poll()
        self._log.flush()
        self._log.seek(0)
        tail = [line for line in self._log.read().decode(errors="replace").splitlines() if line.strip()][-1:]
        return MobileExportError(
            f"the emulated ARM64 process ({self.cpu}) ended (exit {self.process.returncode}): "
            f"{tail[0][:200] if tail else 'no output'}"
        )

    def close(self) -> None:
        """End the process: at once when requests are still unanswered (an error stopped the check), else
        by closing its input."""
        if self.pending and self.process.poll() is None:
            self.process.kill()
        self._requests.put(None)  # the writer closes the process's input
        self._wait()
        for thread in self._threads:
            thread.join(timeout=30)
        self._log.close()
        self._project.cleanup()

    def __enter__(self) -> "Emulator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class EmulatedRunner:
    """An artifact loaded in the emulated process of one CPU model; runs like a backend's ``Runner``."""

    def __init__(self, emulator: Emulator, key: str, backend: str, path: Path) -> None:
        self.emulator, self.key = emulator, key
        emulator.send("load", (key, backend, str(path)))  # the emulated processes start side by side

    def ready(self) -> None:
        """Wait until the artifact is loaded (raises the emulated runtime's error if it did not load); a file of one
        fixed length says it (``length``, as a backend's ``Runner`` does), so no longer text is sent to it."""
        length = self.emulator.receive()
        if length is not None:
            self.length = int(length)

    def submit(self, feeds: dict[str, np.ndarray]) -> None:
        """Send one input ahead; ``result`` collects it (in the order sent)."""
        self.emulator.send("run", (self.key, feeds))

    def result(self) -> list[np.ndarray]:
        return self.emulator.receive()

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.submit(feeds)
        return self.result()
