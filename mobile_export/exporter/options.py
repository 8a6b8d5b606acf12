"""What the library's two verbs take: ``ExportOptions`` (``export``) and ``ParityOptions`` (``parity_check``).

Options a format alone reads (``--pte-entry``, ``--int4-kernel``) are fields here so that the command line
and the Python API stay flat; each format receives them as its own options type (``Format.Options``),
built from these fields by name (``format_options``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .. import backends
from ..core.choices import INT4_GROUP_SIZES, Backend, Quant, Repair
from ..core.errors import BadInputError
from ..core.signature import check_max_seq_len
from ..core.thresholds import Thresholds
from ..parity.arm64.cpus import DEFAULT_ARM64_CPUS


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
        embed: each .pte and .onnx carries the tokenizer assets, labels, golden examples and its own identity
            (``exporter.embedding``), so that the file alone is enough to run it; False writes plain artifacts.
        quantize_embeddings: with int8, store the word-embedding table as int8 per row too
            (``--keep-fp32-embeddings`` turns it off).
        int4_group_size: with int4, input values per weight scale (``--group-size``); None picks it from the
            model's width (``int4_group_size_for``).
        int4_kernel: the .onnx's and .ort's own option (``backends.onnx.options.OnnxOptions``).
        pte_entry: the .pte's own option (``backends.executorch.options.PteOptions``).
        qnn_activations: the NPU file's own option (``backends.qnn.options.QnnOptions``): 16 (default) or 8-bit
            activations.
        soc: the NPU file's own option: SoCs (``SM8650,SM8750``) to precompile it for, each an EPContext model
            beside it (``model.SM8650.qnn.onnx``) checked against it on that SoC's simulator.
        npu_lengths: the NPU file's own option: shorter lengths (``16,32,64``) it also holds a graph for, over the
            same stored weights; a text runs in the shortest graph it fits.
        calibration: the NPU file's own option: a text file (one text per line, or ``label<TAB>text``) its static
            quantization calibrates on; None: the demo corpus' training split (never the parity texts).
        repair: when an int8 artifact fails its gate: ``auto`` (default) tries each repair in order of cost
            and keeps the first that passes; ``off`` refuses; ``smooth`` tries only the exact rescalings
            (folds, then input scales).
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
    embed: bool = True
    quantize_embeddings: bool = True
    int4_group_size: int | None = None
    int4_kernel: str = "nbits"
    pte_entry: str = "loop"
    qnn_activations: int = 16
    calibration: str | None = None
    soc: str | None = None
    npu_lengths: str | None = None
    repair: Repair = Repair.AUTO
    head: str | None = None
    pooling: str | None = None
    normalize: bool = False

    def __post_init__(self) -> None:
        if not self.backends:
            raise BadInputError("no backend selected; pass --backend executorch and/or --backend onnx")
        if len(set(self.backends)) != len(self.backends):
            object.__setattr__(self, "backends", tuple(dict.fromkeys(self.backends)))
        _check_format_options(self)
        if self.int4_group_size is not None and self.int4_group_size not in INT4_GROUP_SIZES:
            raise BadInputError(
                f"--group-size {self.int4_group_size} is not supported; choose one of "
                f"{', '.join(map(str, INT4_GROUP_SIZES))}"
            )
        if self.quant is Quant.INT4 and self.int4_group_size is not None:
            _check_group_multiple(self.int4_group_size, self.backends)
        if self.max_seq_len is not None:
            check_max_seq_len(self.max_seq_len)

    def thresholds_for(self, kind: str) -> Thresholds:
        """The thresholds given, or the defaults for the quantization and the task's output kind."""
        return self.thresholds or Thresholds.default_for_task(self.quant, kind)

    def format_options(self, backend: Backend) -> Any:
        """``backend``'s own options type (``Format.Options``), its fields read from the fields of the same name."""
        kind = backends.load(backend).Options
        return kind(**{f.name: getattr(self, f.name) for f in fields(kind)})


def _check_format_options(options: ExportOptions) -> None:
    """Each chosen format's own options valid, and no option of a format left out set away from its default
    (BadInputError naming the option and the format that reads it)."""
    owners: dict[str, list[Backend]] = {}
    for b in backends.BACKENDS:
        for f in fields(backends.load(b).Options):
            owners.setdefault(f.name, []).append(b)
    for b in options.backends:
        options.format_options(b)
    defaults = {f.name: f.default for f in fields(ExportOptions)}
    for name, readers in owners.items():
        value = getattr(options, name)
        if value != defaults[name] and not set(readers) & set(options.backends):
            files = " / ".join(backends.get_info(b).suffix for b in readers)
            raise BadInputError(
                f"--{name.replace('_', '-')} {value} shapes the {files}; add --backend {readers[0].value} or drop it"
            )


def _check_group_multiple(group_size: int, chosen: tuple[Backend, ...]) -> None:
    """BadInputError when a chosen format takes int4 groups of a multiple ``group_size`` is not."""
    for b in chosen:
        info = backends.get_info(b)
        if group_size % info.int4_group_multiple:
            fits = [g for g in INT4_GROUP_SIZES if g % info.int4_group_multiple == 0]
            others = [
                o.value
                for o, i in backends.BACKENDS.items()
                if Quant.INT4 in i.quants and not group_size % i.int4_group_multiple
            ]
            alone = f", or --backend {' / '.join(others)} alone" if others else ""
            suffix = info.suffix
            raise BadInputError(
                f"--group-size {group_size}: the {suffix} ({info.runtime}) takes groups of a multiple of "
                f"{info.int4_group_multiple}; pass --group-size {', '.join(map(str, fits))}{alone}"
            )


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
        ignore_manifest: check an artifact whose bytes differ from what the manifest.json beside it records
            (refused by default: it is not the file that export checked).
        npu_sample: texts of each length bucket the NPU file runs on its simulator; None: the format's sample
            (8), 0: every text (the default with ``ray``, whose workers each run one simulator).
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
    ignore_manifest: bool = False
    npu_sample: int | None = None
