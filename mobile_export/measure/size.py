"""What an artifact's bytes are: breakdown by part of the model and the sharing verdicts, and an artifact's
whole size section (``size_entry``: with its RAM, measured by memory.py, and budget verdict, budgets.py).

The breakdown reads the artifact itself: the distinct weight blobs it stores (ExecuTorch's named
data and constant buffers; ONNX initializers), matched to the model's parameters by size. ALBERT's
cross-layer sharing is preserved when the shared layer's parameters are stored once, not once per
layer; the verdict counts the blobs actually present, never trusts the config.
"""

from __future__ import annotations

import hashlib
import zlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from quantize.schemes import table_group_size

from ..assets.bundle import ASSETS_KEY, IDENTITY_KEY
from ..core.choices import Quant
from ..backends.base import WeightLayout
from ..model.families import FAMILIES, Family, family_of
from .budgets import Budget, budget_verdict
from .memory import measure as measure_memory

GROUPS = FAMILIES["albert"].size_parts  # ALBERT's parts; another family's are its ``size_parts``
# ---------------------------------------------------------------------------------------------- blobs


def artifact_blobs(path: Path) -> tuple[list[bytes], int]:
    """(weight blobs, delegate graph bytes) of an artifact, read by the backend that owns its format."""
    from .. import backends

    return backends.load(backends.for_path(path)).blobs(path)


# ------------------------------------------------------------------------------------------- params


def _meta_model(model_info: dict):
    """(the model a report's summary describes, built on the meta device; its config)."""
    import torch
    import transformers

    cfg = dict(model_info["config"])
    num_labels = cfg.pop("num_labels", None) or 2
    family = family_of(model_info.get("model_type") or "albert")
    config = transformers.AutoConfig.for_model(
        family.model_types[0], **{k: v for k, v in cfg.items() if v is not None}, num_labels=num_labels
    )
    cls = getattr(transformers, model_info.get("architecture") or type(config).__name__.replace("Config", "Model"))
    with torch.device("meta"):
        model = cls(config)
        if model_info.get("projections"):  # a sentence embedding's Dense modules: the task head's part
            from ..core.heads import Projection
            from ..model.projection import Dense

            specs = [Projection.from_manifest(p) for p in model_info["projections"]]
            model.add_module("projections", torch.nn.ModuleList(Dense(s) for s in specs))
        return model, config


def parameter_counts(model, config) -> dict:
    """Unique parameters of a (meta) model, and how many there would be with every layer stored separately
    (ALBERT's shared layer groups once per depth; another family's layers are each stored once)."""
    family = family_of(config.model_type)
    unique = sum(p.numel() for p in model.parameters())
    layer = sum(p.numel() for n, p in model.named_parameters() if family.part_of(n) == family.layer_part)
    unshared = unique
    if family.shared:
        per_layer = layer // max(1, config.num_hidden_groups * config.inner_group_num)
        unshared = unique - layer + config.num_hidden_layers * config.inner_group_num * per_layer
    return {
        "unique": int(unique),
        "unshared": int(unshared),
        "shared_layer": int(layer),  # (another family: every layer's)
        "layers": int(config.num_hidden_layers),
        "ratio": round(unshared / unique, 2),
    }


def tied_embeddings(model) -> bool:
    """Whether the (meta) model's output layer reads its input word-embedding table (fill-mask with
    ``tie_word_embeddings``): then one stored table must serve both."""
    out = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return bool(out is not None and out.weight is model.get_input_embeddings().weight)


PER_ROW = 0  # a "group size" for 4-bit weights with one scale per row (litert-quantizer's channelwise)


def _int4_sizes(rows: int, width: int, group_size: int, table: bool, layout: WeightLayout) -> list[int]:
    """Byte sizes of the blobs a [rows, width] matrix becomes at 4 bits in ``layout``: packed codes (a Linear's
    padded to whole groups, a lookup table's not) and its scales (per group)."""
    if group_size == PER_ROW:  # one scale per row, the codes unpadded (scales in the file's tensor parameters)
        return [(rows * width + 1) // 2]
    blocks = -(-width // group_size)
    if table and layout.int4_table_tiled:
        return [(rows * width + 1) // 2, rows * (width // table_group_size(width, group_size)) * 4]
    if table:
        return [(rows * width + 1) // 2, rows * blocks * 4]
    codes = rows * blocks * group_size // 2
    scales = [codes, rows * blocks * layout.int4_scale_bytes]
    return scales + [rows * 4, rows] if layout.int4_column_extras else scales


def _slots(
    model,
    quant: str,
    int8_embeddings: bool,
    group_size: int | None = None,
    layout: WeightLayout = WeightLayout(),
    fp32_linears: frozenset[str] = frozenset(),
) -> list[tuple[str, int]]:
    """(group, byte size) of every blob the model's parameters would become, one entry each (the Linears
    ``fp32_linears`` kept fp32 by a repair)."""
    slots = []
    family = family_of(model.config.model_type)
    for name, p in model.named_parameters():
        group = family.part_of(name)
        matrix = p.dim() == 2 and "position" not in name and "token_type" not in name  # what quantization takes
        matrix = matrix and name.removesuffix(".weight") not in fp32_linears
        if quant == "int4" and matrix:
            if group_size is None:
                raise ValueError("int4 sizes need the group size")
            sizes = _int4_sizes(
                p.shape[0], p.shape[1], group_size, "word_embeddings" in name, layout
            )  # Linear [out, in]; table [vocab, width]
            slots += [(group, s) for s in sizes]
            continue
        quantized = quant == "int8" and matrix and ("word_embeddings" not in name or int8_embeddings)
        if quantized:
            rows = p.shape[0]
            slots += [(group, p.numel()), (group, rows * 4), (group, rows)]  # int8 values, scales, zero points
        else:
            slots.append((group, p.numel() * 4))
    for name, buf in model.named_buffers():  # e.g. position_ids (int64), folded in as constants
        slots.append((family.part_of(name), buf.numel() * buf.element_size()))
    return slots


class SizeEntry(TypedDict, total=False):
    """An artifact's size section in report.json (``breakdown``; ``size_command`` adds memory and budgets)."""

    file: str
    bytes: int
    deflate_bytes: int
    compiled_for: str  # a file precompiled for this SoC (``--soc``): its weights are in QNN's context binary
    context_bytes: int  # that binary's bytes
    memory_sharing_preserved: bool | None  # None: no verdict (a simulated device's file of a model sharing nothing)
    memory_sharing_verdict: str
    simulated: str  # the simulator the format's runtime is here (its process's RAM is not the device's)
    blobs: int
    distinct_blobs: int
    duplicate_blob_bytes: int
    weights_bytes: int
    overhead_bytes: int
    groups: dict[str, int] | None  # bytes by part of the model; None without a model summary
    int4_group_size: int
    other_constants_bytes: int
    bundle_bytes: int  # the strings the artifact carries (its assets block and identity)
    length_graphs: dict[str, int]  # bytes of the graph stored for each other length the file runs (``--npu-lengths``)
    delegate_graph_bytes: int
    extra_copies_bytes: dict[str, int]
    parameters: dict[str, int]
    tied_embeddings: bool
    shares_weights: bool  # the model shares a weight (ALBERT's layer, a tied table): what "sharing" speaks of
    sharing_preserved: bool | None
    sharing_verdict: str
    memory: dict[str, int]  # MemoryFigures.to_dict()
    budgets: list[dict[str, Any]]
    precompiled: list[dict[str, Any]]  # the NPU file compiled per SoC (``precompiled_sizes``)


def breakdown(
    path: Path,
    model_info: dict | None,
    quant: str = "int8",
    int8_embeddings: bool = True,
    fp32_linears: Sequence[str] = (),
) -> SizeEntry:
    """Bytes of ``path`` by part of the model, the distinct blobs it stores and the sharing verdict
    (``fp32_linears``: the Linears a repair kept fp32 in this artifact)."""
    from .. import backends

    info = backends.get_info(backends.for_path(path))
    fmt = backends.load(info.backend)
    stored_group = fmt.int4_group_size(path) if quant == "int4" else None
    data = b"".join(f.read_bytes() for f in backends.artifact_files(path))
    blobs, graph_bytes = artifact_blobs(path)
    distinct: dict[str, bytes] = {}
    for b in blobs:
        distinct.setdefault(hashlib.sha256(b).hexdigest(), b)
    ram_shared, ram_verdict = fmt.memory_sharing(path)
    strings = fmt.bundled(path)  # read once: the assets' bytes and the other lengths' graphs
    simulator = info.simulator
    out: SizeEntry = {
        "file": path.name,
        "bytes": len(data),
        "deflate_bytes": len(zlib.compress(data, 6)),
        "bundle_bytes": sum(len(v) for k, v in strings.items() if k in (ASSETS_KEY, IDENTITY_KEY)),
        "length_graphs": {str(n): b for n, b in backends.length_graphs(path, strings).items()},
        "memory_sharing_preserved": ram_shared,
        "memory_sharing_verdict": ram_verdict,
        "blobs": len(blobs),
        "distinct_blobs": len(distinct),
        "duplicate_blob_bytes": sum(len(b) for b in blobs) - sum(len(b) for b in distinct.values()),
        **({"simulated": simulator} if simulator else {}),
    }
    stored = sum(len(b) for b in blobs)
    if model_info is None:
        out.update(
            {"weights_bytes": stored, "overhead_bytes": len(data) - stored, "groups": None, "sharing_preserved": None}
        )
        return out
    # the file's group size; a 4-bit file whose format names none stores one scale per row (the .tflite's
    # per-channel 4 bits: PER_ROW)
    group_size = (stored_group or PER_ROW) if quant == "int4" else None
    model, config = _meta_model(model_info)
    groups, extra_copies, unmatched, unquantized = _match(
        blobs, model, quant, int8_embeddings, group_size, info.layout, fp32_linears
    )
    counts = parameter_counts(model, config)
    tied = tied_embeddings(model)
    family = family_of(config.model_type)
    preserved, verdict = _sharing_verdict(family, groups, extra_copies, counts, tied, unquantized)
    why_twice = info.tied_table_twice
    if tied and extra_copies["word embeddings"] and why_twice:
        verdict += f"; why: {why_twice}"
    if simulator and not (family.shared or tied):  # the device's memory is not measured, and nothing is shared
        out["memory_sharing_preserved"] = None
        out["memory_sharing_verdict"] = (
            "no verdict: the model shares no weight (and the device's memory is not measured here)"
        )
    out.update(
        {
            "groups": {g: int(groups[g]) for g in family.size_parts},
            **({"int4_group_size": stored_group} if stored_group else {}),
            "other_constants_bytes": int(unmatched),
            "delegate_graph_bytes": int(graph_bytes),
            "overhead_bytes": int(len(data) - stored + unmatched),
            "extra_copies_bytes": {g: int(v) for g, v in extra_copies.items() if v},
            "parameters": counts,
            "tied_embeddings": tied,
            "shares_weights": family.shared or tied,
            "sharing_preserved": preserved,
            "sharing_verdict": verdict,
        }
    )
    return out


def _match(
    blobs: list[bytes],
    model,
    quant: str,
    int8_embeddings: bool,
    group_size: int | None,
    layout: WeightLayout,
    fp32_linears: Sequence[str],
) -> tuple[Counter, Counter, int, Counter]:
    """Every stored blob matched by size to a part of the (meta) model: (bytes per part, bytes of extra copies
    per part, bytes matched to no part, bytes of extra copies that are a quantized matrix kept at fp32). Duplicates
    are matched too: the same bytes stored twice cost twice (the regression ExecuTorch 1.1-1.2 had wrote the shared
    layer once per layer, identical bytes)."""
    slots = _slots(model, quant, int8_embeddings, group_size, layout, frozenset(fp32_linears))
    # a tied table's decoder stored apart at 4 bits is a Linear's blobs of the table's shape (its own layout)
    decoder = set()
    if tied_embeddings(model) and group_size is not None:
        table = model.get_input_embeddings().weight
        decoder = set(_int4_sizes(table.shape[0], table.shape[1], group_size, False, layout))
    # a matrix left at fp32 where quantization should have taken it (an unquantized copy) is an extra copy too
    family = family_of(model.config.model_type)
    whole = {p.numel() * 4: family.part_of(n) for n, p in model.named_parameters() if p.dim() == 2}
    free: dict[int, list[str]] = defaultdict(list)
    for group, size in slots:
        free[size].append(group)
    # an int8 matrix stored with its zero-point rows: its codes' size plus whole rows of its width (its ``out``)
    widths: dict[int, set[int]] = defaultdict(set)
    for p in model.parameters() if layout.int8_zero_point_rows else []:
        if p.dim() == 2:
            widths[p.numel()].add(p.shape[0])

    def stacked(size: int, pool) -> int | None:
        """The int8 matrix size among ``pool`` that ``size`` bytes are with zero-point rows added, if any: the
        largest that fits (the fewest rows; a few rows per column is what a stack adds)."""
        return max(
            (s for s in pool if s in widths and s < size <= 2 * s and any((size - s) % w == 0 for w in widths[s])),
            default=None,
        )

    groups: Counter = Counter()
    extra_copies: Counter = Counter()
    unquantized: Counter = Counter()
    unmatched = 0
    for b in sorted(blobs, key=len, reverse=True):
        size = len(b) if free.get(len(b)) or not widths else stacked(len(b), [s for s in free if free[s]]) or len(b)
        if free.get(size):
            groups[free[size].pop(0)] += len(b)
            continue
        size = stacked(len(b), {s for _, s in slots}) or len(b) if widths else len(b)
        taken = [g for g, s in slots if s == size] or (["word embeddings"] if len(b) in decoder else [])
        if not taken and len(b) in whole:
            taken = [whole[len(b)]]
            unquantized[whole[len(b)]] += len(b)
        if taken:
            groups[taken[0]] += len(b)
            extra_copies[taken[0]] += len(b)
        else:
            unmatched += len(b)
    return groups, extra_copies, unmatched, unquantized


def _sharing_verdict(
    family: Family, groups: Counter, extra_copies: Counter, counts: dict, tied: bool, unquantized: Counter
) -> tuple[bool, str]:
    """(every weight stored once, the verdict sentence). Stored once: no blob beyond one copy of each layer
    parameter (ALBERT's shared layer whatever the depth; another family's each layer), no matrix of another part
    also stored at fp32 (``unquantized``), and (tied word embeddings) no second copy of the table: the decoder's
    weight is no slot of its own then, so a decoder stored apart is an extra copy of the word embeddings."""
    part = family.layer_part
    layer_bytes = groups[part]
    problems = []
    what = "the shared layer" if family.shared else "the layers"
    if extra_copies[part] or not layer_bytes:
        problems.append(f"{extra_copies[part]:,} B of extra copies of {what}")
    if tied and extra_copies["word embeddings"]:
        problems.append(f"tied embeddings stored twice, {extra_copies['word embeddings']:,} bytes extra")
    for other, extra in unquantized.items():  # a matrix also kept at fp32 where quantization should take it
        if extra and other != part and not (tied and other == "word embeddings"):
            problems.append(f"{extra:,} B of the {other} also stored at fp32")
    if family.shared:
        once = f"the shared layer is stored once ({layer_bytes:,} B) for {counts['layers']} layers"
    else:
        once = f"each of the {counts['layers']} layers is stored once ({layer_bytes:,} B in all)"
    if tied:
        once += "; the tied word-embedding table is stored once for the lookup and the decoder"
    if problems:
        return False, f"NOT preserved ({'; '.join(problems)})"
    return True, f"preserved: {once}"


def size_entry(
    path: Path,
    summary: dict | None,
    quant: Quant,
    int8_embeddings: bool,
    max_len: int,
    budget: Budget | None,
    measure: bool,
    fp32_linears: Sequence[str] = (),
) -> SizeEntry:
    """The artifact's size section: breakdown, sharing verdicts, memory, budget verdict (``fp32_linears``: the
    Linears a repair kept fp32 in it)."""
    entry = breakdown(path, summary, quant.value, int8_embeddings, fp32_linears)
    if measure:
        entry["memory"] = measure_memory(path, min(128, max_len)).to_dict()
    if budget:
        entry["budgets"] = [budget_verdict(entry["bytes"], entry["deflate_bytes"], budget)]
    return entry


def precompiled_sizes(entry: SizeEntry, compiled: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each file compiled from the artifact of ``entry`` (``--soc``): its bytes and what it adds over the artifact
    (QNN's context holds each stored weight once: a context of the same model with each layer's copy of the shared
    weights made distinct is larger by about their bytes, BENCHMARKS.md "The phone's NPU")."""
    return [
        {
            "file": c["file"],
            "soc": c["soc"],
            "bytes": int(c["bytes"]),
            "over_model_bytes": int(c["bytes"]) - int(entry["bytes"]),
        }
        for c in compiled
    ]


def compiled_entry(path: Path, soc: str, context_bytes: int) -> SizeEntry:
    """A file precompiled for ``soc`` (``--soc``): its bytes and its compiled part's (``context_bytes``, from its
    format: ``Precompiling.compiled_for``); the weights are inside that part, so the breakdown and the sharing are
    those of the model it was compiled from."""
    data = path.read_bytes()
    return {
        "file": path.name,
        "bytes": len(data),
        "deflate_bytes": len(zlib.compress(data, 6)),
        "compiled_for": soc,
        "context_bytes": context_bytes,
        "distinct_blobs": 0,
        "blobs": 0,
    }
