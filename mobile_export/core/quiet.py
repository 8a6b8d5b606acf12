"""Silence the wrapped libraries' chatter (warnings, progress bars) so progress lines stay readable."""

from __future__ import annotations

import logging
import os
import sys
import warnings

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
)


def quiet_libraries() -> None:
    """Warnings and log lines of the wrapped libraries only; the caller's own warnings still show."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    warnings.filterwarnings("ignore", module=r"(%s)(\.|$)" % "|".join(_LIBRARIES))
    for name in _LIBRARIES:
        logging.getLogger(name).setLevel(logging.ERROR)
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
