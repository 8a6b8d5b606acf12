"""The contract every artifact format implements (one package per format), and the typed records it returns.

A new format (Core ML, LiteRT, ...) is one package under ``backends/`` whose ``__init__`` provides the
members of ``Format`` below, plus one ``BackendInfo`` line in the registry (``backends/__init__.py``):
file name, runtime, quantizations offered, dynamic batch. Everything outside ``backends/`` reaches a
format only through the registry and this contract; the runtime library is imported only inside the
format's package.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np

from ..core.choices import Quant
from ..core.signature import ENCODER, Signature

if TYPE_CHECKING:  # a process that only runs artifacts (measurements, the phone) never imports torch
    import torch


@dataclass(frozen=True)
class Plan:
    """What a format lowers a model to: the precision and its settings, the inputs the artifact takes, and the
    format's own options (its package's ``Options``, built from the export options of the same names)."""

    quant: Quant
    max_len: int  # the longest input the artifact takes
    vocab_size: int  # the example inputs' token ids are below it
    dynamic_batch: bool  # the format takes any batch (its registry entry)
    options: Any  # the format's own options (``Format.Options``)
    group_size: int | None = None  # int4: input values per weight scale
    keep: tuple[str, ...] = ()  # int8 Linears left fp32 (a repair's mixed precision), by name in the model
    signature: Signature = ENCODER
    int8_table: bool = False  # int8 with embeddings: the word table stored at 8 bits too (``--keep-fp32-embeddings``)
    # a statically quantized format's calibration texts as (token ids, type ids), unpadded (``BackendInfo.calibrated``)
    calibration: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...] = ()
    calibration_source: str = ""  # where those texts come from (the NPU file records it)
    # a statically quantized format's activations (by name) calibrated with the ranges repair's wider headroom
    widen: tuple[str, ...] = ()

    def dynamic_shapes(self) -> dict[str, dict[int, Any]]:
        """torch.export's dynamic shapes of the artifact's inputs."""
        return self.signature.dynamic_shapes(self.max_len, self.dynamic_batch)

    def example(self) -> tuple[torch.Tensor, ...]:
        """The example inputs a lowering traces with (``Signature.example_shape``)."""
        from ..model.reference import example_inputs

        inputs = example_inputs(*self.signature.example_shape(self.max_len, self.dynamic_batch), self.vocab_size)
        return inputs[: len(self.signature.inputs)]


class ExportStats(TypedDict, total=False):
    """Facts of a lowering, written to report.json's ``stats``; each format fills the keys it has."""

    int4: dict[str, Any]  # 4-bit weights: group size, kernel, padded widths, counts (both formats)
    inputs: list[str]  # the model inputs the artifact takes, where not all of INPUT_NAMES (DistilBERT's)
    # .pte
    shared_stored_bytes: int  # XNNPACK weights pointed at equal program constants (tied tables)
    rewritten_for_xnnpack: dict[str, int]  # modules rewritten into ops XNNPACK takes, by kind
    methods: list[str]
    layer_schedule: list[int]
    calling_convention: str
    entry: str  # --pte-entry: loop, forward or both
    # .onnx and .ort
    activation_matmuls: int  # attention's Q.K^T and P.V, fp32 by design
    deduplicated: int  # initializer copies and nodes folded before quantization
    layer_loop: bool
    shared_table_bytes: int  # a tied table stored once for its lookup and its transposed decoder
    opset: int
    onnx_bytes: int  # .ort: the intermediate .onnx's size
    format: str  # .ort: how the ORT flatbuffer was written
    qnn: dict[str, Any]  # .qnn.onnx: the fixed length, precisions, mask and calibration (its metadata too)
    precompiled: list[dict[str, Any]]  # .qnn.onnx with --soc: each SoC's compiled file (bytes, load time, checks)


class ArtifactStats(ExportStats, total=False):
    """``ExportStats`` plus the facts of the runtime check (report.json's ``stats``)."""

    runtime: str
    runtime_version: str
    parity_latency_ms: dict[str, Any]
    parity_texts_per_second: float | None
    dynamic_batch: bool
    shape_notes: str
    embedded: dict[str, Any]  # the block the artifact carries: its bytes, the assets' bytes, its identity
    simulated: dict[str, Any]  # a simulated runtime's check: the simulator, the texts it ran and how they were chosen


class Runner(Protocol):
    """An artifact loaded in its real runtime."""

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The artifact's outputs for int64 ``input_ids``, ``attention_mask``, ``token_type_ids``."""
        ...


class DepthRunner(Protocol):
    """An artifact loaded in its real runtime so that the hidden state after each depth of its layer loop
    can be read (the int8 diagnosis' error by depth)."""

    def run_states(self, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """``Runner.run``'s outputs for one example (batch 1), and the hidden state after each depth as
        ``[tokens, hidden]``."""
        ...


@dataclass(frozen=True)
class MatmulCoverage:
    """Weight MatMuls quantized and left fp32, read from an .onnx / .ort (subgraphs included)."""

    quant: Quant
    quantized_weight_matmuls: int
    fp32_weight_matmuls: int
    fp32_weight_matmul_nodes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    kept_fp32_weight_matmuls: int = 0  # left fp32 on purpose: the weights the file declares (a repair's)
    kept_fp32_weights: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for a report."""
        quantized = "quantized" if self.quant is Quant.FP32 else self.quant.value
        kept = f" (+{self.kept_fp32_weight_matmuls} kept fp32 by repair)" if self.kept_fp32_weight_matmuls else ""
        return f"{self.quantized_weight_matmuls} {quantized} / {self.fp32_weight_matmuls} fp32 weight MatMuls{kept}"


@dataclass(frozen=True)
class DelegateCoverage:
    """XNNPACK delegate calls and the operators each method runs outside them, read from a .pte."""

    xnnpack_calls: int
    ops_outside_delegate: tuple[str, ...] = ()
    compute_ops_outside_delegate: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for a report."""
        moves = len(self.ops_outside_delegate) - len(self.compute_ops_outside_delegate)
        return (
            f"{self.xnnpack_calls} XNNPACK calls; outside: {len(self.compute_ops_outside_delegate)} compute, "
            f"{moves} data-movement ops"
        )


Coverage = MatmulCoverage | DelegateCoverage


def coverage_from_dict(data: dict[str, Any], quant: str | None) -> Coverage:
    """The typed coverage of a report.json entry (``quant``: the artifact's, for entries written without it)."""
    if "xnnpack_calls" in data:
        return DelegateCoverage(
            int(data["xnnpack_calls"]),
            tuple(data.get("ops_outside_delegate", ())),
            tuple(data.get("compute_ops_outside_delegate", ())),
            tuple(data.get("problems", ())),
        )
    return MatmulCoverage(
        Quant(data.get("quant") or quant or "int8"),
        int(data["quantized_weight_matmuls"]),
        int(data["fp32_weight_matmuls"]),
        tuple(data.get("fp32_weight_matmul_nodes", ())),
        tuple(data.get("problems", ())),
        int(data.get("kept_fp32_weight_matmuls", 0)),
        tuple(data.get("kept_fp32_weights", ())),
    )


class Converted(Protocol):
    """What a format converted from another format's artifact (``BackendInfo.converted_from``) provides besides
    ``Format``."""

    def convert(self, source: Path, stats: ExportStats, dest: Path, progress: Any) -> ExportStats:
        """``source`` (an artifact lowered with ``stats``) converted into ``dest``; returns this artifact's facts."""
        ...


class Format(Protocol):
    """What each format package provides (module-level functions and the ``Runner`` class; a simulated format,
    ``BackendInfo.simulator``, also a ``Pool(path, processes)`` with ``submit``, ``result``, ``took``, ``length``
    and ``close``, which the parity check runs its texts on side by side; one that compiles for named devices,
    ``precompile(path, socs, feeds)``, ``exporter.precompiled``)."""

    Runner: type
    Options: type  # the format's own export options (a frozen dataclass; defaults for every field)

    def runtime_version(self) -> str:
        """The installed runtime's version."""
        ...

    def export(self, wrapper: torch.nn.Module, plan: Plan, dest: Path, progress: Any) -> ExportStats:
        """Write ``wrapper`` to ``dest`` as ``plan`` says; returns the lowering's facts (JSON-ready, into
        report.json)."""
        ...

    def files(self, path: Path) -> list[Path]:
        """The artifact's files (e.g. ``model.onnx`` and ``model.onnx.data``)."""
        ...

    def blobs(self, path: Path) -> tuple[list[bytes], int]:
        """(stored weight blobs, bytes of delegate graphs) for the size breakdown."""
        ...

    def stored_quant(self, path: Path) -> Quant:
        """The precision the file stores (default parity thresholds)."""
        ...

    def int4_group_size(self, path: Path) -> int | None:
        """Values per scale of the 4-bit weights, None without any."""
        ...

    def memory_sharing(self, path: Path) -> tuple[bool, str]:
        """(one packed copy of each stored weight in RAM, verdict sentence), from what the file stores."""
        ...

    def coverage(self, path: Path, quant: Quant) -> Coverage:
        """What runs quantized / delegated, read from the file."""
        ...

    def check(self, path: Path, shown: str) -> None:
        """Raise ArtifactLoadError unless the file is a sound export, before its runtime runs it."""
        ...

    def usage(self, stats: ExportStats) -> dict[str, Any]:
        """How an app loads and calls the artifact (into manifest.json)."""
        ...

    def depth_runner(self, path: Path) -> DepthRunner | None:
        """The artifact loaded so that each depth's hidden state can be read, None where the file's layers
        are not a loop the runtime exposes."""
        ...

    def embed(self, path: Path, values: dict[str, str]) -> None:
        """Rewrite the artifact at ``path`` to carry ``values`` (name -> string) where its runtime's API reads them."""
        ...

    def embedded(self, path: Path) -> dict[str, str]:
        """The strings the artifact carries (name -> string; empty when none)."""
        ...


CONTRACT = (
    "Runner",
    "Options",
    "runtime_version",
    "export",
    "files",
    "blobs",
    "stored_quant",
    "int4_group_size",
    "memory_sharing",
    "coverage",
    "check",
    "usage",
    "depth_runner",
    "embed",
    "embedded",
)
