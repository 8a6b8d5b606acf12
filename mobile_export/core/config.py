"""Choices are enums and frozen dataclasses, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from quantize.onnx_nbits import INT4_KERNELS
from quantize.schemes import XNNPACK_GROUP_MULTIPLE

from .errors import BadInputError


class Backend(str, Enum):
    """Where an artifact runs."""

    EXECUTORCH = "executorch"  # .pte, XNNPACK delegate
    ONNX = "onnx"  # .onnx, ONNX Runtime
    ORT = "ort"  # .ort, ONNX Runtime (Mobile) flatbuffer format

    def __str__(self) -> str:
        return self.value


class Repair(str, Enum):
    """What ``export`` does when an int8 artifact fails its parity gate (``--repair``)."""

    AUTO = "auto"  # every repair below, in order of cost, until the gate passes
    OFF = "off"  # refuse, as the gate decides
    SMOOTH = "smooth"  # rescalings that leave the fp32 function unchanged, folded exactly into the weights
    MIXED = "mixed"  # the fewest Linears kept in fp32 that let the rest pass (emulated, then the real gate)

    def __str__(self) -> str:
        return self.value


class Quant(str, Enum):
    """Weight/activation precision of an artifact."""

    INT8 = "int8"  # dynamic int8 activations, symmetric per-channel int8 weights
    FP32 = "fp32"
    INT4 = "int4"  # dynamic int8 activations, symmetric group-wise 4-bit weights (.pte and .onnx)

    def __str__(self) -> str:
        return self.value


# fill-mask: candidates per [MASK] (the --head topk default, Predictor.fill_mask, `run --top-k`).
DEFAULT_TOP_K = 5

# Parity batches: texts per batch a runtime (or a Ray worker) is handed, and the most texts in one padded
# fp32 reference batch (within its token and value limits, parity.checker).
PARITY_BATCH_TEXTS = 64
REFERENCE_BATCH_TEXTS = 32

# --isa arm64: the phone CPU generations checked by default (no dotprod: older and low-end phones;
# dotprod; SVE2 + i8mm + bf16: current) and every qemu CPU model accepted.
DEFAULT_ARM64_CPUS = ("cortex-a53", "cortex-a76", "cortex-a710")
ARM64_CPUS = (
    "cortex-a53",
    "cortex-a55",
    "cortex-a57",
    "cortex-a72",
    "cortex-a76",
    "cortex-a710",
    "neoverse-n1",
    "neoverse-n2",
    "neoverse-v1",
    "a64fx",
    "max",
)

# A length bucket of the parity text is gated on its own when it has at least this many examples.
MIN_BUCKET_EXAMPLES = 3
INT4_MIN_SQNR_DB = 15.0

# int4 weights are quantized in groups of this many input values (one scale per group); a width that
# is not a multiple is padded with zeros to whole groups (ONNX Runtime's MatMulNBits does that; the .pte
# export widens the Linear, quantize.xnnpack_int4.PaddedLinear). XNNPACK takes multiples of 32 only.
INT4_GROUP_SIZES = (16, 32, 64, 128, 256)
DEFAULT_INT4_GROUP_SIZE = 32
WIDE_INT4_GROUP_SIZE = 64
WIDE_HIDDEN_SIZE = 512


def int4_group_size_for(hidden_size: int, chosen: int | None = None) -> int:
    """The int4 group size of a model: ``chosen`` (``--group-size``) if given, else 32 for narrow models
    (small files anyway; the finer scales keep more accuracy) and 64 from hidden size 512 up, where a scale
    per 32 values costs 0.125 B a weight: albert-base int4 .onnx 7.57 MB with 32, 6.84 MB with 64."""
    if chosen is not None:
        return chosen
    return WIDE_INT4_GROUP_SIZE if hidden_size >= WIDE_HIDDEN_SIZE else DEFAULT_INT4_GROUP_SIZE


def check_max_seq_len(requested: int) -> None:
    """BadInputError unless ``requested`` leaves room for [CLS] and [SEP]."""
    if requested < 2:
        raise BadInputError(f"--max-seq-len {requested} is too small; it must be >= 2 ([CLS] and [SEP])")


def resolve_max_len(limit: int, requested: int | None) -> int:
    """The longest input artifacts accept: ``requested`` checked against the model's position table."""
    if requested is None:
        return limit
    check_max_seq_len(requested)
    if requested > limit:
        raise BadInputError(
            f"--max-seq-len {requested} exceeds the model's max_position_embeddings ({limit}); pass at most {limit}"
        )
    return requested


@dataclass(frozen=True)
class Thresholds:
    """Pass/fail limits of a parity check (None: not checked).

    fp32 artifacts are held to an absolute error; int8 artifacts to decisive top-1 agreement and SQNR
    (over all examples and in every length bucket with enough examples) and a per-example SQNR floor,
    because an absolute error of 1e-4 is impossible after quantization.

    Args:
        max_abs_diff: largest |artifact - fp32| of any output value.
        min_agreement: share of the reference's clear decisions (top-1 margin above what the
            artifact's error can move) the artifact must reproduce.
        min_sqnr_db: signal-to-quantization-noise ratio over all outputs, and per length bucket.
        min_example_sqnr_db: floor on every single example's SQNR (no example may be badly wrong).
        min_cosine: floor on every example's cosine to fp32 (sentence embeddings, whose use is a cosine).
    """

    max_abs_diff: float | None = None
    min_agreement: float | None = None
    min_sqnr_db: float | None = None
    min_example_sqnr_db: float | None = None
    min_cosine: float | None = None

    def __post_init__(self) -> None:
        if self.max_abs_diff is not None and self.max_abs_diff < 0:
            raise BadInputError("max |diff| threshold must be >= 0")
        if self.min_agreement is not None and not 0.0 <= self.min_agreement <= 1.0:
            raise BadInputError("agreement threshold must be between 0 and 1")

    @staticmethod
    def from_overrides(quant: Quant, **limits: float | None) -> "Thresholds | None":
        """The defaults for ``quant`` with the given limits (``max_abs_diff=...``) replaced; None when
        nothing is overridden (each artifact then gets the defaults of its own precision)."""
        given = {k: v for k, v in limits.items() if v is not None}
        if not given:
            return None
        return replace(Thresholds.default_for(quant), **given)

    @staticmethod
    def default_for(quant: Quant) -> "Thresholds":
        if quant is Quant.FP32:
            return Thresholds(max_abs_diff=1e-4)
        if quant is Quant.INT4:  # half the bits: ~6 dB less signal-to-noise per bit than int8
            return Thresholds(min_agreement=0.98, min_sqnr_db=INT4_MIN_SQNR_DB, min_example_sqnr_db=10.0)
        return Thresholds(min_agreement=0.99, min_sqnr_db=20.0, min_example_sqnr_db=15.0)

    @staticmethod
    def default_for_task(quant: Quant, kind: str) -> "Thresholds":
        """The defaults for ``quant``, plus a cosine floor for a pooled sentence embedding (int8 0.99,
        int4 0.95: what an app's similarity search reads)."""
        t = Thresholds.default_for(quant)
        if kind == "sentence_embedding" and quant is not Quant.FP32:
            return replace(t, min_cosine=0.99 if quant is Quant.INT8 else 0.95)
        return t

    def explain(self) -> list[str]:
        """One line per active gate, for reports."""
        lines = []
        if self.min_cosine is not None:
            lines.append(f"cosine >= {self.min_cosine:g}: every example's output vector points where fp32's does")
        if self.max_abs_diff is not None:
            lines.append(
                f"max |diff| <= {self.max_abs_diff:g}: no output value of any example is further from fp32 than this"
            )
        if self.min_agreement is not None:
            lines.append(
                f"decisive agreement >= {self.min_agreement:.0%}: the artifact makes the same top-1 "
                "decision as fp32 wherever fp32's margin is more than twice the artifact's error on "
                "that example (closer calls are near-ties, counted but not gated), over all examples "
                "and in each length bucket"
            )
        if self.min_sqnr_db is not None:
            lines.append(
                f"SQNR >= {self.min_sqnr_db:g} dB: output energy over error energy, over all examples "
                f"and in each length bucket with {MIN_BUCKET_EXAMPLES} or more examples"
            )
        if self.min_example_sqnr_db is not None:
            lines.append(
                f"per-example SQNR >= {self.min_example_sqnr_db:g} dB: no single text may be badly wrong "
                "(a text with near-zero outputs is judged against the median text's output power)"
            )
        return lines


PTE_ENTRIES = ("loop", "forward", "both")
POOLINGS = ("cls", "mean")  # --pooling (heads.Pooled)


@dataclass(frozen=True)
class ExportOptions:
    """What ``export`` should produce.

    Args:
        backends: formats to write; both by default.
        quant: precision of the artifacts.
        task: optimum task name (``text-classification`` ...); None infers it from the config.
        max_seq_len: longest sequence the artifacts accept; None means max_position_embeddings.
        overwrite: replace the files of an existing export in the destination.
        thresholds: parity limits; None uses ``Thresholds.default_for_task(quant, kind)`` (``thresholds_for``).
        data: parity data file (one text per line, optionally ``label<TAB>text``); None uses built-in text.
        budget: largest acceptable artifact: a size (``15MB``, checked against the file) or a store preset
            (``play-base``, ``play-asset-pack``, ``legacy-apk``, ``app-store-cellular``; checked against
            the deflate-compressed size, as stores count downloads); over it the export fails with exit 4.
        measure_memory: measure each artifact's peak RSS (load + one run) in a fresh process.
        quantize_embeddings: with int8, store the word-embedding table as int8 per row too
            (``--keep-fp32-embeddings`` turns it off).
        int4_group_size: with int4, input values per weight scale (``--group-size``); None picks it from the
            model's width (``int4_group_size_for``).
        int4_kernel: with int4 in the .onnx, how ONNX Runtime computes (``--int4-kernel``): ``nbits`` runs
            ``MatMulNBits`` (4-bit weights in RAM too); ``int8`` widens the 4-bit weights to int8 when the
            model loads (int8's speed and RAM, plus int8 rounding on top of int4's).
        pte_entry: how the .pte is called (``--pte-entry``): ``loop`` (embed, the shared layer once per
            layer, head: one packed copy of the shared layer in RAM), ``forward`` (the whole model as one
            method, what ExecuTorch's own tools call) or ``both`` in one program sharing stored weights.
        repair: when an int8 artifact fails its gate: ``auto`` (default) tries each repair in order of cost
            and keeps the first that passes; ``off`` refuses; ``smooth`` tries only the exact rescaling.
        head: fill-mask only: ``full`` (default, the model's own head: every position's vocabulary
            logits) or ``topk`` / ``topk:K`` (the top K tokens at the first 8 masks, in the graph).
        pooling, normalize: feature-extraction only: ``cls`` or ``mean`` gives one sentence embedding
            [1, H] instead of the last hidden state; ``normalize`` L2-normalizes it.
    """

    backends: tuple[Backend, ...] = (Backend.EXECUTORCH, Backend.ONNX)
    quant: Quant = Quant.INT8
    task: str | None = None
    max_seq_len: int | None = None
    overwrite: bool = False
    thresholds: Thresholds | None = field(default=None)
    data: str | None = None
    budget: str | None = None
    measure_memory: bool = True
    quantize_embeddings: bool = True
    int4_group_size: int | None = None
    int4_kernel: str = "nbits"
    pte_entry: str = "loop"
    repair: Repair = Repair.AUTO
    head: str | None = None
    pooling: str | None = None
    normalize: bool = False

    def __post_init__(self) -> None:
        if self.pte_entry not in PTE_ENTRIES:
            raise BadInputError(f"--pte-entry {self.pte_entry} is not one of {', '.join(PTE_ENTRIES)}")
        if self.pte_entry != "loop" and Backend.EXECUTORCH not in self.backends:
            raise BadInputError(f"--pte-entry {self.pte_entry} shapes the .pte; add --backend executorch or drop it")
        if self.int4_kernel not in INT4_KERNELS:
            raise BadInputError(f"--int4-kernel {self.int4_kernel} is not one of {', '.join(INT4_KERNELS)}")
        if self.int4_group_size is not None and self.int4_group_size not in INT4_GROUP_SIZES:
            raise BadInputError(
                f"--group-size {self.int4_group_size} is not supported; choose one of "
                f"{', '.join(map(str, INT4_GROUP_SIZES))}"
            )
        if (
            self.quant is Quant.INT4
            and Backend.EXECUTORCH in self.backends
            and self.int4_group_size is not None
            and self.int4_group_size % XNNPACK_GROUP_MULTIPLE
        ):
            raise BadInputError(
                f"--group-size {self.int4_group_size}: XNNPACK (.pte) takes groups of a multiple of "
                f"{XNNPACK_GROUP_MULTIPLE}; pass --group-size "
                f"{', '.join(str(g) for g in INT4_GROUP_SIZES if g % XNNPACK_GROUP_MULTIPLE == 0)}, "
                "or --backend onnx alone"
            )
        if not self.backends:
            raise BadInputError("no backend selected; pass --backend executorch and/or --backend onnx")
        if len(set(self.backends)) != len(self.backends):
            object.__setattr__(self, "backends", tuple(dict.fromkeys(self.backends)))
        if self.max_seq_len is not None:
            check_max_seq_len(self.max_seq_len)

    def thresholds_for(self, kind: str) -> Thresholds:
        """The thresholds given, or the defaults for the quantization and the task's output kind."""
        return self.thresholds or Thresholds.default_for_task(self.quant, kind)


@dataclass(frozen=True)
class ParityOptions:
    """How ``parity_check`` judges existing artifacts.

    Args:
        data: parity data file; None uses built-in text.
        quant: thresholds of this precision for every artifact; None picks per artifact from what it stores.
        thresholds: explicit limits (overrides ``quant``'s defaults).
        task: the checkpoint's task; None infers it.
        max_seq_len: longest input the artifacts accept; None means max_position_embeddings.
        ray: address of a Ray cluster (``auto``, ``local``, ``host:port``) to spread the texts over; None
            runs in this process.
        ray_workers: workers on the cluster (default: one per CPU it has).
        isa: ``arm64`` also runs every artifact on the ARM64 builds of its runtime, emulated, for each of
            ``cpus`` (qemu CPU models), in the environment at ``arm64_env`` (default: the prepared one).
    """

    data: str | None = None
    quant: Quant | None = None
    thresholds: Thresholds | None = None
    task: str | None = None
    max_seq_len: int | None = None
    ray: str | None = None
    ray_workers: int | None = None
    isa: str | None = None
    cpus: tuple[str, ...] = DEFAULT_ARM64_CPUS
    head: str | None = None  # as ExportOptions; None: what a manifest.json beside the first artifact records
    pooling: str | None = None
    normalize: bool = False
    arm64_env: str | None = None


_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_size(text: str) -> int:
    """``15MB`` -> 15000000, ``12MiB`` -> 12582912, ``4096`` -> 4096."""
    import re

    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise BadInputError(f"cannot read size '{text}'; write e.g. 15MB, 12MiB or 4096")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])
