"""What native runtimes write to file descriptor 2, caught: noise dropped, the rest written back, nothing written
back when the caller refuses with what it said."""

import os
import sys

import pytest

from mobile_export.core.native_stderr import caught_stderr


def test_native_lines_are_caught_and_all_but_the_noise_written_back(capfd):
    with caught_stderr(lambda line: line.startswith("[probe")) as lines:
        os.write(2, b"[probe] reading /proc/cpuinfo\nE: a real error\n")
        print("python said", file=sys.stderr)
    assert lines == ["[probe] reading /proc/cpuinfo", "E: a real error", "python said"]
    err = capfd.readouterr().err
    assert "E: a real error" in err and "python said" in err and "[probe]" not in err


def test_nothing_is_written_back_when_the_block_raises_and_the_caller_says_it(capfd):
    with pytest.raises(RuntimeError):
        with caught_stderr(echo_on_error=False) as lines:
            os.write(2, b"QNN: Fail to create context\n")
            raise RuntimeError("load failed")
    assert lines == ["QNN: Fail to create context"]
    assert "QNN" not in capfd.readouterr().err
    with pytest.raises(RuntimeError):
        with caught_stderr() as lines:
            os.write(2, b"kept on error\n")
            raise RuntimeError("load failed")
    assert "kept on error" in capfd.readouterr().err
