"""Modules of ``executorch.exir`` imported without the compiler its package's ``__init__`` loads.

``executorch.runtime`` imports one small module of exir (its warning decorators) and the .pte reader needs its
serializer (``exir._serialize``); importing a module of a package runs the package's ``__init__`` first, and
exir's loads the whole compiler (7 s on a 2-core x86 host, about 35 s under qemu), which every process that only
runs or checks artifacts would pay (``run``, ``load``, the measurements, the .pte probe, the emulated phone).
When the compiler is not loaded yet, exir is entered as a bare package for such imports and forgotten after
them, so that a later import of the compiler loads it whole, as usual.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

COMPILER = "executorch.exir"


# what was imported under the bare package, kept: the serializer imports more of its modules inside its functions
# (the generated flatbuffer readers), so each call runs with them back in place, and nothing is imported twice
_KEPT: dict[str, ModuleType] = {}


@contextlib.contextmanager
def without_compiler() -> Iterator[None]:
    """Within: imports of exir's modules skip its package ``__init__`` (unless the compiler is loaded already),
    and the modules imported so in an earlier block are back; after: they leave ``sys.modules`` again."""
    bare = COMPILER not in sys.modules
    if bare and _KEPT:
        sys.modules.update(_KEPT)
    elif bare:
        spec = importlib.util.find_spec("executorch")
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError("executorch is not installed; reinstall mobile-export")
        package = types.ModuleType(COMPILER)
        package.__path__ = [str(Path(next(iter(spec.submodule_search_locations))) / "exir")]
        sys.modules[COMPILER] = package
    try:
        yield
    finally:
        if bare:  # out of sys.modules again: a later import of exir runs its __init__, the whole compiler
            for name in [n for n in sys.modules if n == COMPILER or n.startswith(COMPILER + ".")]:
                _KEPT[name] = sys.modules.pop(name)
            vars(sys.modules["executorch"]).pop("exir", None)


def exir_attribute(module: str, name: str) -> Any:
    """``executorch.exir.<module>.<name>``: the compiler's own where it is loaded, else imported without it."""
    with without_compiler():
        return getattr(importlib.import_module(f"{COMPILER}.{module}"), name)


def call_exir(module: str, function: str, *args: Any) -> Any:
    """``executorch.exir.<module>.<function>(*args)``: the compiler's own where it is loaded, else run without it."""
    with without_compiler():
        return getattr(importlib.import_module(f"{COMPILER}.{module}"), function)(*args)
