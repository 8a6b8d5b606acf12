"""ExecuTorch .pte with the XNNPACK delegate: the format's side of the contract in ``..base``.

Export (``lowering``: the layer-loop program, PT2E int8, torchao int4, lowered to XNNPACK), the file's
layout (``layout``: segments, shared stored bytes), what a file holds (``inspection``), whether a
user's file is sound (``validation``) and running it (``runner``). ExecuTorch is imported only here.
"""

from __future__ import annotations

from typing import Any

from .bundle import bundle, bundled
from .convention import (
    CALLING_CONVENTION,
    EMBED_METHOD,
    GROUP_METHOD,
    HEAD_METHOD,
    INT4_TABLE_OP,
    SCHEDULE_METHOD,
    usage,
)
from .inspection import coverage, int4_group_size, int4_weight_group_sizes, memory_sharing, stored_quant
from .layout import blobs, files, share_stored_bytes
from .options import PteOptions as Options
from .validation import check

__all__ = [
    "Options",
    "CALLING_CONVENTION",
    "EMBED_METHOD",
    "GROUP_METHOD",
    "HEAD_METHOD",
    "INT4_TABLE_OP",
    "SCHEDULE_METHOD",
    "Runner",
    "blobs",
    "check",
    "coverage",
    "bundle",
    "bundled",
    "depth_runner",
    "export",
    "files",
    "int4_group_size",
    "int4_weight_group_sizes",
    "memory_sharing",
    "runtime_version",
    "share_stored_bytes",
    "stored_quant",
    "usage",
]


def runtime_version() -> str:
    """The installed ExecuTorch version."""
    from importlib.metadata import version

    return version("executorch")


def __getattr__(name: str) -> Any:
    """The members that need torch (lowering, running), imported on first use: the package's options and facts
    load without torch (``mobile-export --help`` builds every format's flags)."""
    if name == "export":
        from .lowering import export

        return export
    if name in ("Runner", "depth_runner"):
        from . import runner

        return runner.PteRunner if name == "Runner" else runner.depth_runner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
