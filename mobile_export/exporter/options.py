"""What the library's two verbs take: ``ExportOptions`` (``export``) and ``ParityOptions`` (``parity_check``).

Options a format alone reads (``--pte-entry``, ``--int4-kernel``, ``--soc``) are declared by its package (its
``Options``, gathered by the registry: ``backends.option_fields``) and given here by name in ``format_options``;
each format receives its own options type built from them (``options_for``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .. import backends
from ..core.choices import INT4_GROUP_SIZES, Quant, Repair
from ..backends import Backend
from ..backends.flags import flag_name
from ..core.errors import BadInputError
from ..core.signature import check_max_seq_len
from ..core.thresholds import Thresholds
from ..parity.arm64.cpus import DEFAULT_ARM64_CPUS


@dataclass(frozen=True)
class ExportOptions:
    """What ``export`` should produce.

    Args:
        backends: formats to write; None given: the registry's defaults (``backends.default_backends``: the .pte and
            the .onnx).
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
        bundle: each artifact of a format that bundles (``BackendInfo.bundles``) carries the tokenizer assets, labels,
            golden examples and its own identity (``exporter.bundling``), so that the file alone is enough to run it;
            False writes plain artifacts (``--no-bundle``).
        quantize_embeddings: with int8, store the word-embedding table as int8 per row too
            (``--keep-fp32-embeddings`` turns it off).
        int4_group_size: with int4, input values per weight scale (``--group-size``); None picks it from the
            model's width (``int4_group_size_for``).
        calibration: for a statically quantized format (the NPU file): a text file (one text per line, or
            ``label<TAB>text``) its quantization calibrates on; None: the demo corpus' training split (never the
            parity texts).
        format_options: the chosen formats' own options by name (``{"pte_entry": "both"}``, ``{"soc": "SM8650"}``;
            every one: ``mobile-export export --help`` or ``backends.option_fields()``); each is checked by the
            format that reads it, and refused when no chosen format reads it.
        repair: when an int8 artifact fails its gate: ``auto`` (default) tries each repair in order of cost
            and keeps the first that passes; ``off`` refuses; ``smooth`` tries only the exact rescalings
            (folds, then input scales).
        head: fill-mask only: ``full`` (default, the model's own head: every position's vocabulary
            logits) or ``topk`` / ``topk:K`` (the top K tokens at the first 8 masks, in the graph).
        pooling, normalize: feature-extraction only: ``cls`` or ``mean`` gives one sentence embedding
            [1, H] instead of the last hidden state; ``normalize`` L2-normalizes it.
    """

    backends: tuple[Backend, ...] = field(default_factory=backends.default_backends)
    quant: Quant = Quant.INT8
    task: str | None = None
    max_seq_len: int | None = None
    overwrite: bool = False
    thresholds: Thresholds | None = field(default=None)
    data: str | None = None
    budget: str | None = None
    measure_memory: bool = True
    bundle: bool = True
    quantize_embeddings: bool = True
    int4_group_size: int | None = None
    calibration: str | None = None
    format_options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    repair: Repair = Repair.AUTO
    head: str | None = None
    pooling: str | None = None
    normalize: bool = False

    def __post_init__(self) -> None:
        if not self.backends:
            names = " / ".join(b.value for b in backends.BACKENDS)
            raise BadInputError(f"no backend selected; pass --backend (one or more of {names})")
        if len(set(self.backends)) != len(self.backends):
            object.__setattr__(self, "backends", tuple(dict.fromkeys(self.backends)))
        object.__setattr__(self, "format_options", dict(self.format_options))  # a copy: the options stay as checked
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

    def options_for(self, backend: Backend) -> Any:
        """``backend``'s own options (its package's ``Options``), built from ``format_options`` by name."""
        kind = backends.options_type(backend)
        return kind(**{f.name: self.format_options[f.name] for f in fields(kind) if f.name in self.format_options})


def _check_format_options(options: ExportOptions) -> None:
    """Each chosen format's own options valid, no option that no format declares, and none that only a format left
    out reads set away from its default (BadInputError naming the option and the format that reads it)."""
    declared = backends.option_fields()
    for name, value in options.format_options.items():
        if name not in declared:
            known = ", ".join(flag_name(n) for n in declared)
            raise BadInputError(f"{flag_name(name)} is not an option of any format; the formats' own are: {known}")
        f, readers = declared[name]
        if value != f.default:
            _check_read(name, value, readers, options.backends)
    if options.calibration is not None:
        static = tuple(b for b, info in backends.BACKENDS.items() if info.calibrated)
        _check_read("calibration", options.calibration, static, options.backends)
    for b in options.backends:
        options.options_for(b)


def _check_read(name: str, value: Any, readers: tuple[Backend, ...], chosen: tuple[Backend, ...]) -> None:
    """BadInputError when no chosen format reads the option ``name`` set to ``value``, naming the formats that do."""
    if not set(readers) & set(chosen):
        files = " / ".join(backends.get_info(b).suffix for b in readers)
        raise BadInputError(
            f"{flag_name(name)} {value} shapes the {files}; add --backend {readers[0].value} or drop it"
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
