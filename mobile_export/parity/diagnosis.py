"""Where an int8 artifact's error comes from, measured on the fp32 model: the outlier channels of each
quantized weight's input, each weight's share of the error, and how the error grows through the shared
layer's depths, in PyTorch's emulation of each runtime's dynamic int8 (``quantize.simulate``).

The gate still judges the real artifact in its real runtime; the diagnosis says why it scores what it
does and which repair can help (``exporter.repair``). It runs on a sample of the parity texts.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from quantize.simulate import quantized

from .. import backends
from ..backends import Backend
from ..core.tasks import OutputKind
from ..model.activations import ChannelRanges, channel_ranges
from ..model.families import FAMILIES
from ..model.reference import Example, ExportWrapper
from .attribution import WeightError, pooled_sqnr_db, weight_errors
from ..core.figures import db_json, sqnr_from_sums

SAMPLE_TEXTS = 16  # enough texts to find a channel that dominates; a diagnosis must stay cheap beside export
SAMPLE_LENGTH = 128  # tokens per sample text at most: one padded batch of them must stay small
LISTED_OUTLIERS = 4  # channels named per weight input in a report
# Multiply-adds the per-weight attribution may cost per runtime (1 + 2 emulated passes per weight): on ALBERT's few
# weights most of the 16 texts of the demo (14 of its test split), two short ones on albert-base; on a BERT's 74
# weights (one set per layer) two short texts, so that the diagnosis stays a fraction of the export (measured in
# BENCHMARKS.md). The ranges and whole-model figures use the whole sample.
ATTRIBUTION_MACS = 1.6e11


@dataclass(frozen=True)
class InputRange:
    """One quantized weight's input: its channels' spread, at every depth, and the channels that dominate."""

    weight: str
    calls: int  # runs per forward: the depth for the shared layer's weights
    spread: float  # largest channel's range over the median channel's, over every depth
    spread_by_depth: tuple[float, ...]
    outliers: tuple[tuple[int, float], ...]  # (channel, range over the median's), largest first

    @classmethod
    def of(cls, ranges: ChannelRanges) -> InputRange:
        """The summary of ``ranges`` a report carries."""
        by_depth = tuple(round(ChannelRanges(ranges.weight, row[None]).spread(), 2) for row in ranges.by_call)
        named = tuple((c, round(r, 1)) for c, r in ranges.outliers()[:LISTED_OUTLIERS])
        return cls(ranges.weight, ranges.calls, round(ranges.spread(), 2), by_depth, named)

    def to_json(self) -> dict[str, Any]:
        return {
            "weight": self.weight,
            "calls": self.calls,
            "spread": self.spread,
            "spread_by_depth": list(self.spread_by_depth),
            "outliers": [{"channel": c, "ratio": r} for c, r in self.outliers],
        }


@dataclass(frozen=True)
class Emulated:
    """One runtime's dynamic int8, emulated: the whole model's SQNR, per depth, and each weight's share."""

    granularity: str  # quantize.simulate: tensor (ONNX Runtime) or token (XNNPACK)
    sqnr_db: float
    depth_sqnr_db: tuple[float, ...]  # the hidden state after each run of a shared layer
    weights: tuple[WeightError, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "granularity": self.granularity,
            "sqnr_db": db_json(self.sqnr_db),
            "depth_sqnr_db": [db_json(d) for d in self.depth_sqnr_db],
            "weights": [
                {"weight": w.weight, "alone_db": db_json(w.alone_db), "without_db": db_json(w.without_db)}
                for w in self.weights
            ],
        }


@dataclass(frozen=True)
class Diagnosis:
    """The fp32 model's int8 weak points on ``texts`` parity texts, per runtime granularity."""

    texts: int
    attribution_texts: int  # the shortest of the ``texts`` each weight's share is measured on
    inputs: tuple[InputRange, ...]
    emulated: dict[str, Emulated] = field(default_factory=dict)  # by granularity
    table_db: float = math.inf  # the int8 word table alone (every Linear fp32); inf: the table stays fp32
    # by artifact file: the hidden state's SQNR after each depth, the artifact run in its real runtime
    # through its layer loop on the same texts (absent where the file's layers are not a loop it exposes)
    runtime_depth_db: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "texts": self.texts,
            "attribution_texts": self.attribution_texts,
            "inputs": [i.to_json() for i in self.inputs],
            "emulated": {g: e.to_json() for g, e in self.emulated.items()},
            "int8_table_alone_db": db_json(self.table_db),
            "runtime_depth_sqnr_db": {f: [db_json(d) for d in depths] for f, depths in self.runtime_depth_db.items()},
        }


def quantized_linears(model: torch.nn.Module) -> list[str]:
    """The names of ``model``'s Linears, each once (a tied or shared weight is one module)."""
    seen: set[int] = set()
    names = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and id(module) not in seen:
            seen.add(id(module))
            names.append(name)
    return names


_DEPTHS = {name for family in FAMILIES.values() for name in family.layer_classes}


def _layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The modules whose every call is one depth (ALBERT's shared AlbertLayer; another family's layers)."""
    return [m for m in model.modules() if type(m).__name__ in _DEPTHS]


@dataclass(frozen=True)
class _Batch:
    """The sample as one padded batch: each forward pass of the diagnosis runs every text at once."""

    feeds: tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # input_ids, attention_mask, token_type_ids
    lengths: tuple[int, ...]
    per_token: bool  # the task's outputs have one row per token (sliced to the real tokens)

    @property
    def valid(self) -> torch.Tensor:
        return self.feeds[1].bool()

    @classmethod
    def of(cls, examples: Sequence[Example], pad_id: int, per_token: bool) -> _Batch:
        lengths = tuple(ex.length for ex in examples)
        longest = max(lengths)
        feeds = []
        for name, fill in (("input_ids", pad_id), ("attention_mask", 0), ("token_type_ids", 0)):
            rows = [np.pad(ex.feeds[name][0], (0, longest - ex.length), constant_values=fill) for ex in examples]
            feeds.append(torch.from_numpy(np.stack(rows)))
        return cls((feeds[0], feeds[1], feeds[2]), lengths, per_token)

    @classmethod
    def padded(cls, loaded, examples: Sequence[Example]) -> _Batch:
        """``examples`` padded with ``loaded``'s tokenizer's pad id, split per token where its task's outputs are."""
        pad = loaded.tokenizer.pad_token_id
        return cls.of(list(examples), int(pad) if pad is not None else 0, loaded.task.kind in PER_TOKEN)

    def split(self, t: torch.Tensor) -> list[np.ndarray]:
        """A batched tensor as each example's flat array (its real tokens only where ``per_token``)."""
        t = t.detach().float()
        rows = [t[i, :n] if self.per_token and t.dim() > 2 else t[i] for i, n in enumerate(self.lengths)]
        return [r.reshape(-1).numpy() for r in rows]


def _runner(model: torch.nn.Module, task, batch: _Batch) -> Callable[[], list[np.ndarray]]:
    """A function that runs the batch through ``model`` as the artifact does and returns each example's
    float outputs as one flat array."""
    wrapper = ExportWrapper(model, task).eval()

    @torch.no_grad()
    def run() -> list[np.ndarray]:
        got = [t for t in wrapper(*batch.feeds) if t.dtype.is_floating_point]
        per = [batch.split(t) for t in got]
        return [np.concatenate(parts) for parts in zip(*per)] if per else [np.zeros(0, np.float32)] * len(batch.lengths)

    return run


def _with_states(
    model: torch.nn.Module, run: Callable[[], list[np.ndarray]], batch: _Batch
) -> tuple[list[np.ndarray], list[list[np.ndarray]]]:
    """``run``'s outputs and, [depth][example], the hidden state after each run of the shared layer."""
    calls: list[list[np.ndarray]] = []

    def hook(_module, _args, output) -> None:
        hidden = output[0] if isinstance(output, tuple) else output
        calls.append(dataclasses.replace(batch, per_token=True).split(hidden))

    handles = [m.register_forward_hook(hook) for m in _layers(model)]
    try:
        outputs = run()
    finally:
        for h in handles:
            h.remove()
    return outputs, calls


PER_TOKEN = (OutputKind.TOKEN_LOGITS, OutputKind.SPAN_LOGITS, OutputKind.HIDDEN_STATES)


class Emulation:
    """The sample as one padded batch through ``loaded``'s fp32 model (the reference), and through a copy of
    it as the artifact computes: its word table int8 (``int8_table``, as an int8 export stores it) and the
    Linears chosen per call in a runtime's emulated dynamic int8."""

    def __init__(self, loaded, examples: Sequence[Example], int8_table: bool = True) -> None:
        self.batch = _Batch.padded(loaded, examples)
        self.reference, self.reference_states = _with_states(
            loaded.model, _runner(loaded.model, loaded.task, self.batch), self.batch
        )
        self.model = loaded.model
        if int8_table:
            from quantize.embedding import quantize_embeddings

            self.model = copy.deepcopy(loaded.model)
            quantize_embeddings(self.model)
        self.run = _runner(self.model, loaded.task, self.batch)
        self._int8: dict[str, torch.Tensor] = {}  # each Linear's emulated int8 weight, computed once

    @torch.no_grad()
    def sqnr(self, names: Sequence[str], granularity: str) -> tuple[float, float]:
        """(SQNR over the sample, the lowest example's as the gate counts it: an example's signal floored at the
        median example's) with the Linears ``names`` in emulated int8."""
        with quantized(self.model, names, granularity, self.batch.valid, self._int8):
            return self._scores(self.run())

    @torch.no_grad()
    def depth_sqnr(self, names: Sequence[str], granularity: str) -> tuple[float, float, tuple[float, ...]]:
        """``sqnr`` and, from the same pass, the SQNR of the hidden state after each depth of the shared layer."""
        with quantized(self.model, names, granularity, self.batch.valid, self._int8):
            got, states = _with_states(self.model, self.run, self.batch)
        depth = tuple(pooled_sqnr_db(r, s) for r, s in zip(self.reference_states, states))
        return (*self._scores(got), depth)

    def _scores(self, got: list[np.ndarray]) -> tuple[float, float]:
        power = [float(np.mean(r.astype(np.float64) ** 2)) for r in self.reference]
        noise = [float(np.mean((r.astype(np.float64) - g) ** 2)) for r, g in zip(self.reference, got)]
        typical = float(np.median(power))
        lowest = min(sqnr_from_sums(max(p, typical), q) for p, q in zip(power, noise))
        return pooled_sqnr_db(self.reference, got), lowest

    def forget(self, names: Sequence[str]) -> None:
        """Drop the emulated int8 weights of the Linears ``names`` (their fp32 weights were changed)."""
        for name in names:
            self._int8.pop(name, None)

    def weight_errors(self, names: Sequence[str], granularity: str) -> tuple[float, list[WeightError]]:
        """``attribution.weight_errors`` of the Linears ``names`` against the fp32 reference."""
        return weight_errors(self.model, names, self.run, granularity, self.batch.valid, self.reference, self._int8)


def attribution_sample(config, examples: Sequence[Example], weights: int) -> list[Example]:
    """The shortest ``examples`` (at least two) whose padded batch costs at most ``ATTRIBUTION_MACS`` over the
    ``1 + 2 * weights`` passes through ``config``'s encoder that attributing the error to ``weights`` Linears takes."""
    budget = ATTRIBUTION_MACS / (1 + 2 * weights)
    hidden = int(config.hidden_size)
    inner = int(getattr(config, "intermediate_size", None) or config.hidden_dim)  # DistilBERT names it hidden_dim
    per_token = int(config.num_hidden_layers) * hidden * (4 * hidden + 2 * inner)
    chosen: list[Example] = []
    for ex in sorted(examples, key=lambda e: e.length):
        if len(chosen) >= 2 and (len(chosen) + 1) * ex.length * per_token > budget:
            break
        chosen.append(ex)
    return chosen


def reference_states(loaded, examples: Sequence[Example]) -> list[list[np.ndarray]]:
    """[depth][example]: the fp32 model's hidden state after each run of the shared layer, real tokens only."""
    batch = _Batch.padded(loaded, examples)
    return _with_states(loaded.model, _runner(loaded.model, loaded.task, batch), batch)[1]


def runtime_depth_sqnr(
    backend: Backend, path: Path, examples: Sequence[Example], reference: list[list[np.ndarray]]
) -> tuple[float, ...] | None:
    """The SQNR of the hidden state after each depth, the artifact at ``path`` run in its real runtime through
    its layer loop against ``reference`` (``reference_states`` of the same ``examples``); None where the file's
    layers are not a loop its runtime exposes."""
    runner = backends.load(backend).depth_runner(path)
    if runner is None:
        return None
    got: list[list[np.ndarray]] = []  # [example][depth]
    for ex in examples:
        got.append([s.reshape(-1) for s in runner.run_states(ex.feeds)[1]])
    depths = len(got[0]) if got else 0
    if not depths or len(reference) % depths:
        return None
    inner = len(reference) // depths  # a layer group of several inner layers is one run of the loop
    return tuple(pooled_sqnr_db(reference[(d + 1) * inner - 1], [states[d] for states in got]) for d in range(depths))


@torch.no_grad()
def diagnose(
    loaded,
    examples: Sequence[Example],
    granularities: Sequence[str],
    int8_table: bool = True,
    artifacts: Sequence[tuple[Backend, Path]] = (),
) -> Diagnosis:
    """The diagnosis of ``loaded``'s fp32 model (a LoadedModel) on ``examples`` for each runtime granularity
    (``int8_table``: the export stores the word table int8, which every emulated run then includes), and the
    error by depth of each of ``artifacts`` in its real runtime."""
    model = loaded.model
    examples = list(examples)[:SAMPLE_TEXTS]
    names = quantized_linears(model)
    ranges = channel_ranges(model, examples)
    inputs = tuple(InputRange.of(ranges[n]) for n in names if n in ranges)
    emulation = Emulation(loaded, examples, int8_table)
    few = attribution_sample(loaded.config, examples, len(names))
    shares = emulation if len(few) == len(examples) else Emulation(loaded, few, int8_table)
    emulated = {}
    for g in granularities:
        _, errors = shares.weight_errors(names, g)
        every, _, depth_db = emulation.depth_sqnr(names, g)
        emulated[g] = Emulated(g, every, depth_db, tuple(errors))
    table_db = emulation.sqnr((), "tensor")[0] if int8_table else math.inf  # no Linear quantized: the table alone
    runtime = {}
    for backend, path in artifacts:
        measured = runtime_depth_sqnr(backend, path, examples, emulation.reference_states)
        if measured is not None:
            runtime[path.name] = measured
    return Diagnosis(len(examples), len(few), inputs, emulated, table_db, runtime)
