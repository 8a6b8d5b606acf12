"""Lowering: the module an export writes (the model, or a copy with an int8 word table) into one format's
artifact in the staging folder, as a named record (``Lowered``)."""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch

from .. import backends
from ..backends.base import Converted, ExportStats
from ..core import interrupts
from ..core.choices import Quant
from ..backends import Backend
from ..core.errors import ExportFailedError, MobileExportError, first_line
from ..core.fsutil import disk_error
from ..core.signature import INPUT_NAMES
from ..model.loading import LoadedModel
from ..model.reference import ExportWrapper
from .context import ExportRun
from .options import ExportOptions


@dataclass(frozen=True)
class Lowered:
    """One artifact written into the staging folder: its format, path, the lowering's facts and its time."""

    backend: Backend
    path: Path
    stats: ExportStats
    seconds: float


def plain_module(loaded: LoadedModel) -> torch.nn.Module:
    """The model itself as an export takes it (its float word table; a format that quantizes the table itself)."""
    return ExportWrapper(loaded.model, loaded.task).eval()


def export_module(loaded: LoadedModel, options: ExportOptions) -> tuple[torch.nn.Module, list[str]]:
    """The module to export: the model itself, or (int8 with embeddings) a copy with an int8 word table; and the
    tables replaced."""
    if options.quant is not Quant.INT8 or not options.quantize_embeddings:
        return plain_module(loaded), []
    from quantize.embedding import quantize_embeddings

    model = copy.deepcopy(loaded.model)
    replaced = quantize_embeddings(model)
    return ExportWrapper(model, loaded.task).eval(), replaced


def lower(
    run: ExportRun, backend: Backend, wrapper: torch.nn.Module, keep: tuple[str, ...] = (), widen: tuple[str, ...] = ()
) -> Lowered:
    """Write ``wrapper`` as ``backend``'s artifact into the staging folder; ``keep``: int8 Linear modules left
    fp32 (a repair's mixed precision), by name in the model; ``widen``: activations given the ranges repair's wider
    headroom (a statically quantized format). A converter's failure is one ExportFailedError."""
    dest = run.staging / backends.get_info(backend).file_name
    plan = run.plan(backend, keep, widen)
    t0 = time.monotonic()
    with _converter_errors(run, f"{backend.value} export"), torch.no_grad():
        stats = backends.load(backend).export(wrapper, plan, dest, run.progress)
    if plan.signature.inputs != INPUT_NAMES:  # a family with other inputs (DistilBERT): the manifest says which
        stats["inputs"] = list(plan.signature.inputs)
    return Lowered(backend, dest, stats, time.monotonic() - t0)


def convert(run: ExportRun, backend: Backend, source: Lowered) -> Lowered:
    """``backend``'s artifact converted from ``source`` (the artifact of the format it converts from, lowered with
    the same plan) into the staging folder, instead of lowering the model again. A failure is one
    ExportFailedError, as in ``lower``."""
    dest = run.staging / backends.get_info(backend).file_name
    t0 = time.monotonic()
    with _converter_errors(run, f"{backend.value} conversion"):
        stats = cast(Converted, backends.load(backend)).convert(source.path, source.stats, dest, run.progress)
    return Lowered(backend, dest, stats, time.monotonic() - t0)


@contextlib.contextmanager
def _converter_errors(run: ExportRun, what: str) -> Iterator[None]:
    """A converter's exception as one ExportFailedError naming ``what`` failed (an interrupt and a full disk
    as themselves)."""
    try:
        yield
    except MobileExportError:
        raise
    except Exception as exc:
        if interrupts.wrapped(exc) or interrupts.requested():
            raise KeyboardInterrupt from exc
        disk = disk_error(exc, run.staging.parent)
        if disk is not None:
            raise disk from exc
        cause = f"{type(exc).__name__}: {first_line(exc)}"
        raise ExportFailedError(f"{what} failed: {cause}; rerun with --debug for the traceback") from exc
