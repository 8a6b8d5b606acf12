"""ExecuTorch's runtime libraries (its Python bindings with the XNNPACK delegate, and the quantized kernels),
imported without its compiler (``compiler_free``: ``executorch.runtime`` imports one small module of exir)."""

from __future__ import annotations

import importlib

from .compiler_free import without_compiler

_RUNTIME = ("executorch.runtime", "executorch.kernels.quantized")  # + embedding_4bit (int4 tables)

with without_compiler():
    for _name in _RUNTIME:
        importlib.import_module(_name)

from executorch.extension.pybindings import portable_lib  # noqa: E402
from executorch.runtime import Runtime, Verification  # noqa: E402

__all__ = ["Runtime", "Verification", "portable_lib"]
