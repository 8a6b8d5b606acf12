"""The contract every artifact format implements (one package per format), and the typed records it returns.

A new format (Core ML, LiteRT, ...) is one package under ``backends/`` whose ``__init__`` provides the
members of ``Format`` below, plus one ``BackendInfo`` line in the registry (``backends/__init__.py``):
file name, runtime, quantizations offered, dynamic batch, and the ``Capability`` set it offers beyond the
contract (its own diagnosis and repair, a simulator pool, precompiled variants, a fixed length, a host-dependent
int8 precision), each the members ``CAPABILITIES`` names. Everything outside ``backends/`` reaches a format only
through the registry, which asks for a capability rather than for a format (``tests/test_layout.py`` fails when
a module outside ``backends/`` imports a format's package or its runtime); the runtime library is imported only
inside the format's package.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np

from ..core.choices import Quant
from ..core.signature import ENCODER, Signature

if TYPE_CHECKING:  # a process that only runs artifacts (measurements, the phone) never imports torch
    import torch

    from ..core.host import Host
    from ..model.reference import Example


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
    # the same texts cut to another length as the tokenizer truncates (a file with graphs for several lengths)
    calibrate: Callable[[int], tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]] | None = None
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


@dataclass(frozen=True)
class WeightLayout:
    """How a format stores a quantized matrix: the blobs the size breakdown expects each weight to become (the
    registry entry's ``layout``; ``measure.size`` matches a file's stored blobs against them)."""

    int4_scale_bytes: int = 4  # bytes of each 4-bit group's scale (XNNPACK's Linears: bf16)
    # a 4-bit Linear also stores per-column scales and zero points (the .onnx's --int4-kernel int8 widening)
    int4_column_extras: bool = True
    int4_table_tiled: bool = False  # a 4-bit lookup table's groups tile the row (ExecuTorch's embedding_4bit)
    # an int8 Linear is stored with rows carrying its per-token zero point's share under its codes (the .onnx's
    # stacked weight, folded in a .ort): a few rows per output column, as many as the weight's values need
    int8_zero_point_rows: bool = False


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
    litert: dict[str, Any]  # .tflite: the fixed length, inputs, outputs per token, quantization recipe
    task_metadata: dict[str, Any]  # a task library's metadata written into the file (MediaPipe's), or why not


class ArtifactStats(ExportStats, total=False):
    """``ExportStats`` plus the facts of the runtime check (report.json's ``stats``)."""

    runtime: str
    runtime_version: str
    parity_latency_ms: dict[str, Any]
    parity_texts_per_second: float | None
    dynamic_batch: bool
    shape_notes: str
    bundle: dict[str, Any]  # the block the artifact carries: its bytes, the assets' bytes, its identity
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
    ``targets(options)`` and ``precompile(path, options, feeds)``, ``exporter.precompiled``)."""

    Runner: type
    Options: type  # the format's own export options (a frozen dataclass, each field a flag: ``flags.option``)

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

    def bundle(self, path: Path, values: dict[str, str]) -> None:
        """Rewrite the artifact at ``path`` to carry ``values`` (name -> string) where its runtime's API reads them."""
        ...

    def bundled(self, path: Path) -> dict[str, str]:
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
    "bundle",
    "bundled",
)


class Capability(enum.Enum):
    """What a format may offer beyond ``Format``, declared in its registry entry (``BackendInfo.capabilities``)
    and asked for by the stages through the registry; its package then provides the members ``CAPABILITIES``
    names (``tests/test_formats.py`` checks both ways)."""

    DIAGNOSIS = "diagnosis"  # its own error diagnosis per tensor, and the ranges repair it drives (``Diagnosing``)
    SIMULATOR_POOL = "simulator_pool"  # its simulated runtime on several processes side by side (``Pool``)
    PRECOMPILE = "precompile"  # variants compiled for named devices beside the file (``Precompiling``)
    FIXED_LENGTH = "fixed_length"  # each file runs one sequence length, which its stats record (``FixedLength``)
    HOST_PRECISION = "host_precision"  # its runtime's int8 arithmetic depends on the host CPU (``HostPrecision``)
    TASK_METADATA = "task_metadata"  # a task library's metadata (tokenizer, labels) written into it (``TaskMetadata``)


class Diagnosing(Protocol):
    """A statically quantized format's own diagnosis, and the headroom its ranges repair widens activations by."""

    def diagnose(self, path: Path, examples: Sequence[Example], inputs: Sequence[str]) -> dict[str, Any] | None:
        """Where the freshly lowered file at ``path`` loses accuracy, per tensor and by layer, on ``examples``
        (report.json's ``diagnosis.npu`` entry); None when the lowering left nothing to compare against."""
        ...

    def ranges_headroom(self) -> dict[str, float]:
        """The factor the ranges repair widens a clipped activation's range by, per activation precision."""
        ...


class Pool(Protocol):
    """A simulated runtime on several processes (``Pool(path, processes)``): texts submitted side by side, their
    outputs taken back in order."""

    took: float  # the last text's time in its simulator (not the device's)
    length: int  # the sequence length the file runs

    def submit(self, feeds: dict[str, np.ndarray]) -> None:
        """Queue one text (batch 1)."""
        ...

    def result(self) -> list[np.ndarray]:
        """The outputs of the oldest submitted text, as ``Runner.run`` gives them."""
        ...

    def close(self) -> None:
        """End the processes."""
        ...


class Precompiling(Protocol):
    """A format compiled ahead of time for named devices (the NPU file's ``--soc``)."""

    def targets(self, options: Any) -> tuple[str, ...]:
        """The devices the format's own ``options`` name (empty: nothing to precompile)."""
        ...

    def precompile(self, path: Path, options: Any, feeds: Sequence[dict[str, np.ndarray]]) -> list[dict]:
        """Each device of ``targets(options)`` its compiled file beside ``path``, checked on ``feeds``; the manifest's
        entries (each with ``file``, ``bytes``, ``device``, ``checked_texts``, ``load_seconds``)."""
        ...

    def compiled_for(self, path: Path) -> dict[str, Any] | None:
        """A compiled file's device and the bytes of its compiled part (``{"soc", "context_bytes"}``), None for a
        file that is not one."""
        ...


class FixedLength(Protocol):
    """A format whose files each run one sequence length."""

    def sequence_length(self, stats: ExportStats | dict[str, Any]) -> int | None:
        """The length an artifact lowered with ``stats`` runs, None where they do not record it."""
        ...

    def length_graphs(self, strings: dict[str, str], shown: str) -> dict[int, int]:
        """The bytes a file stores for each other length it runs (a graph per length over the same weights), by
        length, read from the strings it carries (``bundled``; ``shown`` names it in an error); empty for a file of
        one length."""
        ...


class HostPrecision(Protocol):
    """A format whose runtime sums int8 products differently by host CPU; its ``Runner`` takes ``precision`` (one of
    ``precision_modes``)."""

    def precision_modes(self, host: Host | None = None) -> tuple[str, ...]:
        """The int8 modes worth measuring on ``host`` (default: this one), the one its sessions use first."""
        ...

    def describe_precision(self, mode: str | None = None, host: Host | None = None) -> str:
        """One line for reports: ``mode`` (default: the sessions') and what it means on ``host``."""
        ...

    def phone_precision(self) -> str:
        """The mode a phone's runtime computes in (memory measured as the app holds the file)."""
        ...


class TaskMetadata(Protocol):
    """A format whose files an app's task library loads by themselves once they carry its metadata (MediaPipe
    Tasks Text's tokenizer and labels in a .tflite)."""

    def task_metadata(
        self, path: Path, task: str, tokenizer: dict[str, bytes], labels: list[str] | None
    ) -> dict[str, Any]:
        """Write the task library's metadata into the artifact at ``path`` (an export of ``task``) from the export's
        tokenizer files (name -> bytes, ``tokenizer_settings.json`` among them) and its ``labels``; returns what
        was written, or why nothing was (``{"written": False, "why": ...}``), for the report."""
        ...


CAPABILITIES: dict[Capability, tuple[str, ...]] = {
    Capability.DIAGNOSIS: ("diagnose", "ranges_headroom"),
    Capability.SIMULATOR_POOL: ("Pool",),
    Capability.PRECOMPILE: ("targets", "precompile", "compiled_for"),
    Capability.FIXED_LENGTH: ("sequence_length", "length_graphs"),
    Capability.HOST_PRECISION: ("precision_modes", "describe_precision", "phone_precision"),
    Capability.TASK_METADATA: ("task_metadata",),
}
CAPABILITY_PROTOCOLS: dict[Capability, type] = {
    Capability.DIAGNOSIS: Diagnosing,
    Capability.SIMULATOR_POOL: Pool,
    Capability.PRECOMPILE: Precompiling,
    Capability.FIXED_LENGTH: FixedLength,
    Capability.HOST_PRECISION: HostPrecision,
    Capability.TASK_METADATA: TaskMetadata,
}
