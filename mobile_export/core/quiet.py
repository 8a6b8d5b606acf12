"""Silence the wrapped libraries' chatter (warnings, log lines, progress bars, what native code prints) so that what
the command prints is its own: progress lines a person reads, and output a pipe reads (``run --json``)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator

_LIBRARIES = (
    "torch",
    "torchao",
    "transformers",
    "executorch",
    "onnxscript",
    "onnx_ir",
    "onnx",
    "onnxruntime",
    "optimum",
    "huggingface_hub",
    "copyreg",
    "absl",
)


def quiet_libraries() -> None:
    """Warnings and log lines of the wrapped libraries only; the caller's own warnings still show."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # LiteRT's converter (TensorFlow's C++ logging): errors only
    warnings.filterwarnings("ignore", module=r"(%s)(\.|$)" % "|".join(_LIBRARIES))
    for name in _LIBRARIES:
        logging.getLogger(name).setLevel(logging.ERROR)
    # ONNX Runtime's quantizer logs through the root logger ("WARNING:root:Axis 1 is out-of-range ..." once per
    # LayerNorm), and its int4 module sets the root's level to INFO when imported (``logging.basicConfig``), so a
    # level set here would not hold: warnings and below are dropped for every logger (the project's own modules
    # print, they do not log; --debug keeps them)
    logging.disable(logging.WARNING)
    # torch resets the level of "torch" when it is first imported, after this ran; a child logger set
    # here keeps its own (torchao's import warns through the first, the ONNX exporter's registry through
    # the second: "torchvision is not installed", four lines per export)
    for name in ("torch.utils._pytree", "torch.onnx._internal.exporter._registration"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if "transformers" not in sys.modules:  # it reads the settings above on import (a runtime-only process never does)
        return
    try:
        from transformers.utils import logging as tf_logging

        tf_logging.set_verbosity_error()
        tf_logging.disable_progress_bar()
    except Exception:  # pragma: no cover - transformers import problems surface later with context
        pass


@contextlib.contextmanager
def native_output_caught() -> Iterator[None]:
    """File descriptors 1 and 2 pointed at a temporary file while the block runs, so that what native libraries and
    the child processes they start print (LiteRT's "INFO: Created TensorFlow Lite XNNPACK delegate", absl's and
    oneDNN's lines, the QNN simulator's "# LIBNATIVE" on standard output) never reaches the terminal or a pipe;
    ``sys.stdout`` and ``sys.stderr`` keep writing where they wrote. Nothing changes when they are not the process's
    own descriptors 1 and 2 (a test's capture)."""
    streams = (sys.stdout, sys.stderr)
    try:
        own = tuple(s.fileno() for s in streams) == (1, 2)
    except (AttributeError, OSError, ValueError):
        own = False
    if not own:
        yield
        return
    for stream in streams:
        stream.flush()
    # the real destinations, kept on descriptors of their own: sys.stdout / sys.stderr write there meanwhile, and
    # descriptors 1 and 2 are pointed back at them afterwards
    ours = [
        os.fdopen(os.dup(fd), "w", buffering=1, encoding=stream.encoding, errors=stream.errors)
        for fd, stream in zip((1, 2), streams)
    ]
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        sys.stdout, sys.stderr = ours
        try:
            yield
        finally:
            sys.stdout, sys.stderr = streams
            for fd, stream in zip((1, 2), ours):
                with contextlib.suppress(OSError, ValueError):  # a reader gone (``| head``): nothing left to say
                    stream.flush()
                os.dup2(stream.fileno(), fd)
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
