"""Format registry: capabilities as data (checked before any expensive work), code loaded lazily.

Each format is a package here (``executorch``, ``onnx``, ``ort``, ``qnn``, ``litert``) implementing the contract
in ``base.Format``; a format is that package plus its entry here (its ``Backend`` name and its ``BackendInfo``).
The suffix of an artifact names its format here and nowhere else (``for_path``); each format's own export options
and flags are its package's ``Options`` (``flags.option``), gathered here (``option_fields``). The runtimes are
imported only inside their format's package.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import Field, dataclass, fields
from enum import Enum
from pathlib import Path
from typing import Any, cast

from quantize.schemes import XNNPACK_GROUP_MULTIPLE

from ..core.choices import Quant
from ..core.errors import ArtifactLoadError, BadInputError, UnsupportedError
from .base import (
    Capability,
    Diagnosing,
    FixedLength,
    Format,
    HostPrecision,
    Precompiling,
    TaskMetadata,
    WeightLayout,
)
from .qnn.socs import SOCS


class Backend(str, Enum):
    """Where an artifact runs: one name per format (its entry in ``BACKENDS`` below)."""

    EXECUTORCH = "executorch"  # .pte, XNNPACK delegate
    ONNX = "onnx"  # .onnx, ONNX Runtime
    ORT = "ort"  # .ort, ONNX Runtime (Mobile) flatbuffer format
    QNN = "qnn"  # .qnn.onnx, ONNX Runtime's QNN execution provider on a Snapdragon's Hexagon NPU (HTP)
    LITERT = "litert"  # .tflite, LiteRT's interpreter (XNNPACK), MediaPipe Tasks Text

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class BackendInfo:
    """One format's facts, known without importing it: its files, its runtime, what it offers and how its
    runtime computes int8 (the format's own export options are its package's ``Options`` type)."""

    backend: Backend
    file_name: str
    module: str
    runtime: str
    library: str  # the runtime's distribution, as reports name it (``onnxruntime``)
    runtime_modules: tuple[str, ...]  # import names of the runtime's libraries (memory baselines import them first)
    quants: frozenset[Quant]
    dynamic_batch: bool
    notes: str
    # how its runtime quantizes activations at run time: one scale per ``token`` or per ``tensor`` (what the
    # int8 diagnosis emulates, ``quantize.simulate``)
    granularity: str
    # its int8 kernels as the report describes them; None: chosen per CPU by the format (``onnx.precision``),
    # and the report names the checking host's choice
    int8_mode: str | None
    data_files: tuple[str, ...] = ()  # written beside file_name (the .onnx's external weights)
    optional_files: tuple[str, ...] = ()  # what an option adds beside it (the NPU file precompiled per --soc)
    int4_group_multiple: int = 1  # 4-bit weights: the group sizes it takes are multiples of this
    bundles: bool = True  # carries the export's assets inside itself (``exporter.bundling``)
    # converted from that format's artifact of the same plan (its package's ``convert``) when the export has one
    converted_from: Backend | None = None
    calibrated: bool = False  # statically quantized: its lowering calibrates on text (``Plan.calibration``)
    # int8 with embeddings: lowered from the copy whose word table is int8 per row (False: from the fp32 model;
    # the format quantizes the table itself)
    int8_table: bool = True
    fixed_length: int | None = None  # one sequence length (this, or --max-seq-len when given): no dynamic shapes
    families: frozenset[str] | None = None  # the encoder families it takes (None: every one)
    # its runtime here is a simulator of the device (too slow for every parity text; its time is not the device's)
    simulator: str | None = None
    # why a tied word table (a masked-LM decoder reading the lookup's matrix) is stored twice in this format; None
    # where it is stored once (``size`` says the why beside its verdict)
    tied_table_twice: str | None = None
    parity_per_bucket: int | None = None  # a simulated format's parity runs this many texts of each length bucket
    capabilities: frozenset[Capability] = frozenset()  # what it offers beyond the contract (``base.Capability``)
    # the distributions its export and runtime use, whose versions a report records (beside ``library``)
    packages: tuple[str, ...] = ()
    # what its ``Runner`` is given where an app's path is measured (``bench``): the app's load settings
    app_runner_options: tuple[tuple[str, Any], ...] = ()
    default: bool = False  # written by an export that names no --backend
    layout: WeightLayout = WeightLayout()  # how it stores a quantized matrix (the size breakdown's expectation)

    @property
    def simulated(self) -> bool:
        """Whether its runtime on this machine simulates the device (its time says nothing of the device's)."""
        return self.simulator is not None

    @property
    def suffix(self) -> str:
        """What the names of its artifacts end with (``.onnx``; ``.qnn.onnx``)."""
        return "".join(Path(self.file_name).suffixes)

    @property
    def output_names(self) -> tuple[str, ...]:
        """Every file an export of this format writes."""
        return (self.file_name, *self.data_files, *self.optional_files)


BACKENDS: dict[Backend, BackendInfo] = {
    Backend.EXECUTORCH: BackendInfo(
        backend=Backend.EXECUTORCH,
        file_name="model.pte",
        module="mobile_export.backends.executorch",
        runtime="ExecuTorch runtime, XNNPACK delegate",
        library="executorch",
        runtime_modules=("mobile_export.backends.executorch.runtime_libs",),  # its libraries, not its compiler
        quants=frozenset({Quant.INT8, Quant.FP32, Quant.INT4}),
        dynamic_batch=False,
        notes="batch fixed at 1 (ExecuTorch plans memory for the upper bound of every dynamic dim); "
        "sequence length dynamic from 2 to the max length",
        granularity="token",  # ExecuTorch 1.5.1 serializes the quantizer's dynamic per-tensor as XNNPACK's per-token
        # ExecuTorch has no int8 precision switch: XNNPACK picks its kernels from the CPU's features
        int8_mode="XNNPACK dynamic int8 (qd8 x qc8w), kernels chosen by XNNPACK from the CPU's features",
        int4_group_multiple=XNNPACK_GROUP_MULTIPLE,
        packages=("torch", "torchao"),
        default=True,
        app_runner_options=(("verification", "minimal"),),  # what ExecuTorch's Android Module loads with
        layout=WeightLayout(int4_scale_bytes=2, int4_column_extras=False, int4_table_tiled=True),
    ),
    Backend.ONNX: BackendInfo(
        backend=Backend.ONNX,
        file_name="model.onnx",
        module="mobile_export.backends.onnx",
        runtime="ONNX Runtime (CPU)",
        library="onnxruntime",
        runtime_modules=("onnxruntime",),
        quants=frozenset({Quant.INT8, Quant.FP32, Quant.INT4}),
        dynamic_batch=True,
        notes="batch and sequence length dynamic; ALBERT's shared layer group as a Loop body, other families' "
        "layers one after another; weights in model.onnx.data beside it (page-aligned, mapped by ONNX Runtime)",
        granularity="token",  # quantize.onnx_per_token: one activation scale per row, as XNNPACK's
        int8_mode=None,
        data_files=("model.onnx.data",),
        capabilities=frozenset({Capability.HOST_PRECISION}),
        packages=("onnx", "onnxscript"),
        default=True,
    ),
    Backend.ORT: BackendInfo(
        backend=Backend.ORT,
        file_name="model.ort",
        module="mobile_export.backends.ort",
        runtime="ONNX Runtime (CPU), ORT format",
        library="onnxruntime",
        runtime_modules=("onnxruntime",),
        # not int4: the ORT format of ONNX Runtime 1.32 has no INT4 tensor type (the 4-bit word table)
        quants=frozenset({Quant.INT8, Quant.FP32}),
        dynamic_batch=True,
        notes="the .onnx converted to ONNX Runtime Mobile's ORT format (graph optimizations applied, "
        "no x86-only layouts); opt-in with --backend ort",
        granularity="token",
        int8_mode=None,
        bundles=False,  # converted from the .onnx before the export bundles its assets
        converted_from=Backend.ONNX,
        capabilities=frozenset({Capability.HOST_PRECISION}),
        packages=("onnx",),
        layout=WeightLayout(int8_zero_point_rows=True),  # the .onnx's stacked weights, folded when converted
    ),
    Backend.QNN: BackendInfo(
        backend=Backend.QNN,
        file_name="model.qnn.onnx",
        module="mobile_export.backends.qnn",
        runtime="ONNX Runtime, QNN execution provider (Hexagon HTP)",
        library="onnxruntime-qnn",
        runtime_modules=("onnxruntime",),
        quants=frozenset({Quant.INT8}),  # 8-bit weights; activations 16-bit (default) or 8-bit, --qnn-activations
        dynamic_batch=False,
        notes="batch 1 and one sequence length (the HTP has no dynamic shapes): the app pads every input to "
        "--max-seq-len; static QDQ quantization calibrated on text; every node on the HTP",
        granularity="tensor",
        int8_mode="QNN HTP fixed point: uint8 per-channel weights, uint16 (or uint8) static activations",
        calibrated=True,
        fixed_length=128,
        families=frozenset({"albert", "bert", "camembert", "distilbert", "electra", "roberta", "xlm-roberta"}),
        int8_table=False,  # QNN's quantizer takes the float table (an int8 Gather and its Cast stay off the HTP)
        simulator="QNN's x86-64 HTP simulator",
        tied_table_twice="the decoder reads the lookup's codes at 16-bit activations (the default); at "
        "--qnn-activations 8 the lookup's table has one scale for every row, which no per-row decoder reads, so it "
        "keeps its own matrix",
        optional_files=tuple(soc.file_name for soc in SOCS.values()),
        parity_per_bucket=8,  # the simulator: about a second per text at 128 tokens on one core
        capabilities=frozenset(
            {Capability.DIAGNOSIS, Capability.SIMULATOR_POOL, Capability.PRECOMPILE, Capability.FIXED_LENGTH}
        ),
        packages=("onnx",),
    ),
    Backend.LITERT: BackendInfo(
        backend=Backend.LITERT,
        file_name="model.tflite",
        module="mobile_export.backends.litert",
        runtime="LiteRT interpreter, XNNPACK delegate",
        library="ai-edge-litert",
        runtime_modules=("ai_edge_litert.interpreter",),
        # int4: litert-quantizer's 4-bit weights per channel (dynamic_wi4_afp32)
        quants=frozenset({Quant.INT8, Quant.FP32, Quant.INT4}),
        dynamic_batch=False,
        notes="batch 1 and one sequence length (litert-torch converts no dynamic length): the app pads every "
        "input to --max-seq-len; int32 inputs ids, mask, segment_ids as MediaPipe's text tasks take them; "
        "opt-in with --backend litert",
        granularity="token",  # XNNPACK's dynamic-range int8 quantizes each row (measured: BENCHMARKS, issue 79)
        int8_mode="LiteRT dynamic-range int8 (int8 per-channel weights, activations quantized at run time)",
        int8_table=False,  # litert-quantizer quantizes the table (the float model in, one recipe for all)
        fixed_length=128,
        capabilities=frozenset({Capability.FIXED_LENGTH, Capability.TASK_METADATA}),
        packages=("litert-torch", "litert-quantizer", "mediapipe"),
    ),
}


def get_info(backend: Backend) -> BackendInfo:
    """The registry entry of ``backend``."""
    return BACKENDS[backend]


def default_backends() -> tuple[Backend, ...]:
    """The formats an export writes when it names none (``--backend``)."""
    return tuple(b for b, info in BACKENDS.items() if info.default)


def suffixes_where(predicate: Callable[[BackendInfo], bool]) -> str:
    """The suffixes of the formats ``predicate`` holds for (``.pte / .onnx``): for messages and help."""
    return " / ".join(info.suffix for info in BACKENDS.values() if predicate(info))


def options_type(backend: Backend) -> type:
    """``backend``'s own export options (its package's ``Options``: a frozen dataclass, each field a flag)."""
    return cast(type, load(backend).Options)


def option_fields() -> dict[str, tuple[Field, tuple[Backend, ...]]]:
    """Every format's own export options by name: the field (its default and flag, ``flags.option``) and the formats
    that read it (the .onnx's and the .ort's ``int4_kernel`` is one option of two formats)."""
    out: dict[str, tuple[Field, tuple[Backend, ...]]] = {}
    for backend in BACKENDS:
        for f in fields(options_type(backend)):
            known = out.get(f.name)
            out[f.name] = (known[0] if known else f, (*(known[1] if known else ()), backend))
    return out


def runtime_libraries() -> tuple[str, ...]:
    """The distributions of the runtimes that run on a phone's CPU (not a simulator's), once each: what the ARM64
    environment installs and its worker reports."""
    return tuple(dict.fromkeys(info.library for info in BACKENDS.values() if not info.simulated))


def packages() -> tuple[str, ...]:
    """Every format's runtime and export distributions, once each (a report's versions)."""
    return tuple(dict.fromkeys(n for info in BACKENDS.values() for n in (info.library, *info.packages)))


def suffixes() -> list[str]:
    """Artifact suffixes the registry reads, e.g. ``.pte``."""
    return [info.suffix for info in BACKENDS.values()]


def suffix_list() -> str:
    """``.pte, .onnx and .ort``: for messages."""
    *head, last = suffixes()
    return f"{', '.join(head)} and {last}" if head else last


def for_path(path: str | os.PathLike) -> Backend:
    """The backend whose artifacts have ``path``'s suffix; BadInputError naming the suffixes otherwise."""
    name, suffix = Path(path).name, Path(path).suffix
    # the longest suffix first: a name ending in .qnn.onnx is the NPU's, any other .onnx the CPU's
    for info in sorted(BACKENDS.values(), key=lambda i: -len(i.suffix)):
        if name.endswith(info.suffix) and len(name) > len(info.suffix):
            return info.backend
    raise BadInputError(f"{Path(path).name}: mobile-export reads {suffix_list()} files; got '{suffix or 'no suffix'}'")


def check_supported(backend: Backend, quant: Quant) -> None:
    """Raise UnsupportedError for a (backend, quant) pair the registry does not offer."""
    info = BACKENDS[backend]
    if quant not in info.quants:
        offered = ", ".join(sorted(q.value for q in info.quants))
        others = [b.value for b, i in BACKENDS.items() if quant in i.quants]
        hint = f"; --quant {quant.value} is offered by --backend {' / '.join(others)}" if others else ""
        raise UnsupportedError(
            f"backend {backend.value} does not offer --quant {quant.value}; it offers: {offered}{hint}"
        )


def takes_family(backend: Backend, family: str) -> bool:
    """Whether ``backend`` exports models of ``family`` (its registry entry's ``families``)."""
    families = BACKENDS[backend].families
    return families is None or family in families


def check_family(backend: Backend, family: str) -> None:
    """Raise UnsupportedError for a family the format does not take, naming those it does."""
    families = BACKENDS[backend].families
    if families is not None and family not in families:
        raise UnsupportedError(
            f"backend {backend.value} does not take {family} models yet; it takes: {', '.join(sorted(families))}; "
            "export this model with --backend onnx / executorch"
        )


def load(backend: Backend) -> Format:
    """Import the format's package (and with it its runtime library)."""
    return cast(Format, importlib.import_module(BACKENDS[backend].module))


def offers(backend: Backend, capability: Capability) -> bool:
    """Whether ``backend``'s registry entry declares ``capability`` (known without importing the format)."""
    return capability in BACKENDS[backend].capabilities


def capable(backend: Backend, capability: Capability) -> Any | None:
    """The format's package as the protocol of ``capability`` (``base.CAPABILITY_PROTOCOLS``), None when the
    format does not offer it."""
    return load(backend) if offers(backend, capability) else None


def diagnosing(backend: Backend) -> Diagnosing | None:
    """The format's own diagnosis and ranges repair (``Capability.DIAGNOSIS``), None without one."""
    return cast(Diagnosing | None, capable(backend, Capability.DIAGNOSIS))


def precompiling(backend: Backend) -> Precompiling | None:
    """The format's compilation for named devices (``Capability.PRECOMPILE``), None without one."""
    return cast(Precompiling | None, capable(backend, Capability.PRECOMPILE))


def host_precision(backend: Backend) -> HostPrecision | None:
    """The format's host-dependent int8 modes (``Capability.HOST_PRECISION``), None where the runtime has none."""
    return cast(HostPrecision | None, capable(backend, Capability.HOST_PRECISION))


def task_metadata(backend: Backend) -> TaskMetadata | None:
    """The format's writer of a task library's metadata (``Capability.TASK_METADATA``), None without one."""
    return cast(TaskMetadata | None, capable(backend, Capability.TASK_METADATA))


def simulator_pool(backend: Backend) -> type | None:
    """The class that runs the format's simulator on several processes (``Capability.SIMULATOR_POOL``)."""
    fmt = capable(backend, Capability.SIMULATOR_POOL)
    return fmt.Pool if fmt is not None else None


def sequence_length(backend: Backend, stats: dict[str, Any]) -> int | None:
    """The one length an artifact of a fixed-length format runs (read from its lowering's ``stats``); None for a
    format of dynamic length or stats that do not say."""
    fmt = cast(FixedLength | None, capable(backend, Capability.FIXED_LENGTH))
    return fmt.sequence_length(stats) if fmt is not None else None


def length_graphs(path: Path, strings: dict[str, str]) -> dict[int, int]:
    """The bytes a fixed-length file stores for each other length it runs, by length, from the ``strings`` it carries
    (the file is not read again); empty for any other file (``FixedLength.length_graphs``)."""
    fmt = cast(FixedLength | None, capable(for_path(path), Capability.FIXED_LENGTH))
    return fmt.length_graphs(strings, path.name) if fmt is not None else {}


def compiled_for(path: Path) -> dict[str, Any] | None:
    """The device a precompiled file at ``path`` was compiled for and its compiled part's bytes, None for any
    other file (``Precompiling.compiled_for``)."""
    fmt = precompiling(for_path(path))
    return fmt.compiled_for(path) if fmt is not None else None


def artifact_files(path: str | os.PathLike) -> list[Path]:
    """Every file an artifact consists of (``model.onnx`` and ``model.onnx.data``; one file otherwise)."""
    path = Path(path)
    return load(for_path(path)).files(path)


def combinations() -> list[tuple[Backend, Quant]]:
    """Every (backend, quant) the registry offers, for listing and for the test guard."""
    return [(b, q) for b, info in BACKENDS.items() for q in sorted(info.quants, key=lambda q: q.value)]


MAX_ARTIFACT_BYTES = 4 * 1024**3  # above any ALBERT export (albert-xxlarge fp32 is ~0.9 GB)


def open_artifact(path: str | os.PathLike) -> tuple[Backend, Path]:
    """Check a user-supplied artifact before any runtime sees it; returns (backend, resolved path).

    Every command that reads an artifact (parity, size, bench) goes through here: the file exists
    and is a regular file (a symlink is resolved and named in messages), is not empty or larger
    than ``MAX_ARTIFACT_BYTES``, and its backend's ``check`` accepts its bytes (magic, structure,
    external data, the interface of an export). Raises ArtifactLoadError (exit 2), one line.
    """
    p = Path(path)
    if not p.exists():
        raise ArtifactLoadError(
            f"{p} does not exist{' (a broken symlink)' if p.is_symlink() else ''}; "
            f"pass {suffix_list()} files written by mobile-export export"
        )
    backend = for_path(p)
    real = p.resolve()
    shown = f"{p} (a symlink to {real})" if p.is_symlink() else str(p)  # the path as the user gave it
    if not real.is_file():
        raise ArtifactLoadError(
            f"{shown} is not a regular file; pass the {Path(BACKENDS[backend].file_name).suffix} file itself"
        )
    size = real.stat().st_size
    if size == 0:
        raise ArtifactLoadError(f"{shown} is empty (0 bytes), e.g. a failed download or copy; export it again")
    if size > MAX_ARTIFACT_BYTES:
        raise ArtifactLoadError(
            f"{shown} is {size:,} bytes, over the {MAX_ARTIFACT_BYTES:,}-byte limit for an "
            "ALBERT export; pass an artifact written by mobile-export export"
        )
    load(backend).check(real, shown)
    return backend, real


def detect_quant(path: Path) -> Quant:
    """The precision the artifact's weights are stored in (decides the default parity thresholds)."""
    return load(for_path(path)).stored_quant(path)
