"""ExecuTorch's runtime libraries (its Python bindings with the XNNPACK delegate, and the quantized kernels),
imported without its compiler.

``executorch.runtime`` imports one small module of ``executorch.exir`` (its warning decorators), and importing
a module of a package runs the package's ``__init__`` first: exir's loads the whole compiler (7 s on a 2-core
x86 host, about 35 s under qemu), which every process that only runs artifacts paid when it started (the
memory and speed measurements, the .pte probe, the emulated phone). When the compiler is not loaded yet, exir
is entered as a bare package for these imports and forgotten after them, so a later import of the compiler
loads it whole, as usual.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

_COMPILER = "executorch.exir"
_RUNTIME = ("executorch.runtime", "executorch.kernels.quantized")  # + embedding_4bit (int4 tables)


def _import_without_compiler() -> None:
    """Import ``_RUNTIME`` with exir's package ``__init__`` skipped (when nothing imported exir yet)."""
    bare = _COMPILER not in sys.modules
    if bare:
        spec = importlib.util.find_spec("executorch")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError("executorch is not installed; reinstall mobile-export")
        package = types.ModuleType(_COMPILER)
        package.__path__ = [str(Path(next(iter(spec.submodule_search_locations))) / "exir")]
        sys.modules[_COMPILER] = package
    try:
        for name in _RUNTIME:
            importlib.import_module(name)
    finally:
        if bare:  # forgotten with what was imported under it: a later import of exir runs its __init__
            for name in [n for n in sys.modules if n == _COMPILER or n.startswith(_COMPILER + ".")]:
                del sys.modules[name]
            vars(sys.modules["executorch"]).pop("exir", None)


_import_without_compiler()

from executorch.extension.pybindings import portable_lib  # noqa: E402
from executorch.runtime import Runtime, Verification  # noqa: E402

__all__ = ["Runtime", "Verification", "portable_lib"]
