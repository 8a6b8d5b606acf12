"""What native runtimes write to standard error, caught: ExecuTorch, ONNX Runtime and QNN log outside Python, to file
descriptor 2, which ``contextlib.redirect_stderr`` does not reach."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def caught_stderr(noise: Callable[[str], bool] = lambda line: False, echo_on_error: bool = True) -> Iterator[list[str]]:
    """File descriptor 2 and ``sys.stderr`` caught while the block runs; afterwards the yielded list holds every line
    caught, and the lines that are not ``noise`` are written back (real errors still show), unless the block raised
    and ``echo_on_error`` is False (the caller's refusal then says what they said, in one line)."""
    sys.stderr.flush()
    lines: list[str] = []
    saved, python_stderr = os.dup(2), sys.stderr
    logged = io.StringIO()
    failed = False
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        sys.stderr = logged
        try:
            yield lines
        except BaseException:
            failed = True
            raise
        finally:
            sys.stderr = python_stderr
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            native = caught.read().decode("utf-8", "replace").splitlines()
            python = logged.getvalue().splitlines()
            lines.extend(native + python)
            if echo_on_error or not failed:
                kept = [line for line in native if not noise(line)]
                if kept:
                    os.write(2, ("\n".join(kept) + "\n").encode())
                said = [line for line in python if not noise(line)]
                if said:
                    python_stderr.write("\n".join(said) + "\n")
