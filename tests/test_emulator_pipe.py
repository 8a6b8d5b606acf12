"""The emulated CPU's pipe, without qemu: requests sent a window ahead (far more than a pipe holds, both ways)
come back whole and in order; a process that ends mid-window is a one-line error naming its CPU model and
its last line, and closing it does not wait for the window. A stand-in "qemu" runs this machine's Python."""

from __future__ import annotations

import stat
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mobile_export.core.errors import MobileExportError
from mobile_export.parity.arm64 import emulator
from mobile_export.parity.arm64.env import Arm64Env


@pytest.fixture
def echo(tmp_path, monkeypatch):
    """An Emulator factory whose process is tests/arm64_echo_worker.py on this machine's Python."""
    qemu = tmp_path / "qemu"
    qemu.write_text(f'#!/bin/sh\nshift\nexec "{sys.executable}" "$@"\n')  # drops the emulated python's path
    qemu.chmod(qemu.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(emulator, "WORKER", "arm64_echo_worker")
    monkeypatch.setattr(emulator, "EXTRA_PYTHONPATH", [str(Path(__file__).parent)])

    def make() -> emulator.Emulator:
        return emulator.Emulator(Arm64Env(tmp_path / "env"), "cortex-a76", qemu=qemu)

    return make


def _within(seconds: float, work):
    """``work()``'s value, or a failure if it has not returned after ``seconds`` (a deadlock)."""
    box: list = []
    thread = threading.Thread(target=lambda: box.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert box, f"no answer after {seconds} s: the pipe deadlocked"
    return box[0]


def test_a_window_larger_than_the_pipes_comes_back_whole_and_in_order(echo):
    inputs = [np.full((1, 8192), k, np.int64) for k in range(200)]  # 64 KiB each way per request, 200 ahead

    def run():
        with echo() as em:
            for x in inputs:
                em.send("run", x)  # nothing is read until every request is queued
            assert em.pending == len(inputs)
            return [em.receive() for _ in inputs]

    replies = _within(120, run)
    assert [int(r[0, 0]) for r in replies] == list(range(200))
    assert all(r.shape == (1, 8192 * 8) for r in replies)


def test_a_process_that_ends_mid_window_is_named_and_closed_at_once(echo):
    em = echo()
    try:
        for k in range(50):
            em.send("run", np.full((1, 4), -1 if k == 4 else k, np.int64))
        got = [int(em.receive()[0, 0]) for _ in range(4)]
        assert got == [0, 1, 2, 3]
        with pytest.raises(MobileExportError) as err:
            em.receive()
        message = str(err.value)
        assert "cortex-a76" in message and "exit 7" in message and "told to stop here" in message
        assert "\n" not in message
        with pytest.raises(MobileExportError):
            em.send("run", np.zeros((1, 4), np.int64))  # a dead process takes no more requests
    finally:
        t = time.monotonic()
        em.close()
        assert time.monotonic() - t < 10


def test_closing_with_answers_pending_ends_the_process_at_once(echo):
    em = echo()
    for k in range(20):
        em.send("run", np.zeros((1, 4), np.int64))
    t = time.monotonic()
    em.close()
    assert time.monotonic() - t < 10 and em.process.returncode is not None
