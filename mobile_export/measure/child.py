"""Measurements in a fresh Python process (``python -m mobile_export.X``): what ``bench`` and ``memory`` share."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from ..core.errors import ArtifactLoadError

RESULT_PREFIX = "RESULT "


def run_child(module: str, args: list[str], env: dict[str, str], timeout: int, failure: str) -> dict[str, Any]:
    """Run ``python -m module args`` and return the JSON its ``print_result`` wrote; ArtifactLoadError
    (``failure``: what could not be done, then the child's last error line) if it failed or wrote none."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ArtifactLoadError(f"{failure}: {tail}")
    return json.loads(lines[-1][len(RESULT_PREFIX) :])


def print_result(result: dict[str, Any]) -> None:
    """In the child: hand ``result`` to ``run_child``."""
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def import_runtime(backend: str) -> Any:
    """In the child: the format's package and its runtime's libraries, imported before any baseline is taken
    (the libraries belong to the baseline, not to the model)."""
    import importlib

    from .. import backends
    from ..backends import Backend

    info = backends.get_info(Backend(backend))
    module = backends.load(info.backend)
    for name in info.runtime_modules:
        importlib.import_module(name)
    return module
