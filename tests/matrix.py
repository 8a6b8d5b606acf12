"""The export test matrix, covered by design: one declared list of factors, the values that cannot meet, and a
pairwise covering array generated from them.

Every pair of factor values that can meet in an export (family x task, family x format, task x format, format x
precision, tokenizer x format, head x precision, entry x family, ...) meets in at least one case, which catches the
interaction faults of two factors at a fraction of the full product's cases (``python -m matrix`` in ``tests/``
prints both counts). A case is one artifact: one format's lowering, the cost that dominates the suite; cases that
share everything but the format are one export (``exports``). The full product runs on demand:
``make test-matrix-full`` (``MOBILE_EXPORT_MATRIX=full``), not in CI.

Usage: ``cd tests && ../.venv/bin/python -m matrix [--full]`` lists the cases and the pairs they cover.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from dataclasses import astuple, dataclass, fields

from mobile_export import Backend, Quant, backends
from mobile_export.core.tasks import supported_tasks
from mobile_export.demo.tiny import NATIVE_TOKENIZER

# CamemBERT is RoBERTa's adapter under other class names (test_families checks the data is the same and runs one
# round trip of its own), so the matrix takes RoBERTa's machinery once
FAMILIES = ("albert", "bert", "electra", "distilbert", "roberta", "xlm-roberta")
# ALBERT reads both kinds a user brings (its WordPiece demo, SentencePiece as albert-base ships); the others their own
TOKENIZERS = {f: ("wordpiece", "sentencepiece") if f == "albert" else (NATIVE_TOKENIZER.get(f, "wordpiece"),)
              for f in FAMILIES}
# the phone heads (``--head topk``, ``--pooling mean --normalize``) replace these tasks' outputs with their reduction
REDUCED_HEAD = {"fill-mask": {"head": "topk:5"}, "feature-extraction": {"pooling": "mean", "normalize": True}}
# the .pte's methods (``--pte-entry``): the layer loop or one unrolled forward (``both`` is their union,
# test_pte_entry)
ENTRIES = ("loop", "forward")
# relative cost of one artifact (BENCHMARKS, the suite's time: a tiny .pte lowering ~12-24 s, an .onnx ~6 s, the
# .ort its .onnx plus a conversion, the NPU file a calibration and the simulator, the .tflite a conversion)
COST = {Backend.EXECUTORCH: 4.0, Backend.ONNX: 1.0, Backend.ORT: 1.3, Backend.QNN: 3.0, Backend.LITERT: 2.0}
DEFAULT_COST = 2.0  # a format not measured yet (a new one): the middle of the others


def cost(fmt: Backend) -> float:
    """What one export of ``fmt`` costs, in .onnx lowerings (measured; a new format the default)."""
    return COST.get(fmt, DEFAULT_COST)


# What the product offers but does not yet hold, each with what was measured; the export's gate refuses it (exit 3)
KNOWN_GAPS = {
    # a tiny 2-layer BERT's top-k head on the HTP simulator: 8.7 dB against fp32's probabilities of the returned ids;
    # the same model's full head 34.3 dB
    (Backend.QNN, "fill-mask", "reduced"): "the NPU file's top-k head fails its gate",
}


@dataclass(frozen=True)
class Case:
    """One artifact of the matrix: a tiny seeded checkpoint of ``family`` for ``task`` in one format."""

    family: str
    task: str
    format: Backend
    precision: Quant
    tokenizer: str
    head: str  # "full" (the model's own outputs) or "reduced" (the task's phone head, REDUCED_HEAD)
    entry: str | None  # the .pte's methods; None for the other formats

    @property
    def id(self) -> str:
        """The pytest id: every factor's value, in order."""
        return "-".join(str(getattr(v, "value", v)) for v in astuple(self) if v is not None)

    @property
    def layers(self) -> int:
        """One layer where depth is not the point; ALBERT two, so its layer loop runs the shared group twice; the NPU
        file two (a one-layer random DistilBERT classifier measured 19.8 dB on the simulator, under the 20 dB gate)."""
        return 2 if self.family == "albert" or self.format is Backend.QNN else 1

    @property
    def head_options(self) -> dict:
        """The export options of its head."""
        return REDUCED_HEAD[self.task] if self.head == "reduced" else {}


FACTORS: dict[str, tuple] = {
    "family": FAMILIES,
    "task": tuple(supported_tasks()),
    "format": tuple(backends.BACKENDS),
    "precision": (Quant.INT8, Quant.FP32, Quant.INT4),
    "tokenizer": tuple(dict.fromkeys(k for kinds in TOKENIZERS.values() for k in kinds)),
    "head": ("full", "reduced"),
    "entry": (*ENTRIES, None),
}
assert tuple(FACTORS) == tuple(f.name for f in fields(Case))


def feasible(case: Case) -> bool:
    """Whether the registries offer this case: the format takes the family and the precision, the tokenizer is one
    the family reads, the reduced head belongs to the task, the entry to the .pte."""
    return (backends.takes_family(case.format, case.family)
            and case.precision in backends.get_info(case.format).quants
            and case.tokenizer in TOKENIZERS[case.family]
            and (case.head == "full" or case.task in REDUCED_HEAD)
            and (case.entry is not None) == (case.format is Backend.EXECUTORCH)
            and (case.format, case.task, case.head) not in KNOWN_GAPS)


def product() -> list[Case]:
    """The full cross product of the factors, less what cannot meet."""
    return [c for c in (Case(*values) for values in itertools.product(*FACTORS.values())) if feasible(c)]


def _pairs(case: Case) -> Iterator[tuple]:
    values = [(name, v) for name, v in zip(FACTORS, astuple(case)) if v is not None]
    return itertools.combinations(values, 2)


def required_pairs() -> set[tuple]:
    """Every pair of factor values that meets in some feasible case (a value None, 'not this format's', pairs with
    nothing)."""
    return {p for c in product() for p in _pairs(c)}


def covering(candidates: list[Case]) -> list[Case]:
    """A pairwise covering array: greedily the case that covers the most pairs not yet covered per unit of its
    cost, until every pair is, then without the cases later ones made redundant; deterministic (ties go to the first
    candidate in the product's order)."""
    left = {p for c in candidates for p in _pairs(c)}
    chosen: list[Case] = []
    while left:
        best = max(candidates, key=lambda c: len(left.intersection(_pairs(c))) / cost(c.format))
        chosen.append(best)
        left.difference_update(_pairs(best))
    for c in reversed(chosen[:]):  # a greedy pick that later picks made redundant goes
        rest = [x for x in chosen if x != c]
        if {p for x in rest for p in _pairs(x)} >= {p for p in _pairs(c)}:
            chosen = rest
    return chosen


def uncovered(cases: list[Case]) -> set[tuple]:
    """The required pairs ``cases`` leave uncovered."""
    return required_pairs() - {p for c in cases for p in _pairs(c)}


def cases() -> list[Case]:
    """The cases the suite runs: the covering array, or the full product with ``MOBILE_EXPORT_MATRIX=full``."""
    everything = product()
    return everything if os.environ.get("MOBILE_EXPORT_MATRIX") == "full" else covering(everything)


# the .pte's and the .tflite's int4 on random tiny weights are held to limits of their own (test_matrix), so each is
# exported alone
OWN_INT4_LIMITS = (Backend.EXECUTORCH, Backend.LITERT)


def export_key(case: Case) -> tuple:
    """What decides the export a case's artifact comes from: cases equal in all but the format (and the .pte's
    entry, which only the .pte reads) are written by one export, as a user's export writes several formats."""
    alone = case.format if case.precision is Quant.INT4 and case.format in OWN_INT4_LIMITS else None
    return (case.family, case.task, case.precision, case.tokenizer, case.head, case.layers, alone)


@dataclass(frozen=True)
class Export:
    """One export of the matrix: the formats it writes, and its .pte's entry when it writes one."""

    formats: tuple[Backend, ...]
    entry: str


def exports(chosen: list[Case]) -> dict[Case, Export]:
    """Each case -> the export that writes its artifact (each format once an export)."""
    groups: list[tuple[tuple, list[Case]]] = []
    for c in chosen:
        group = next((g for key, g in groups if key == export_key(c) and c.format not in {x.format for x in g}), None)
        if group is None:
            groups.append((export_key(c), group := []))
        group.append(c)
    plans = {id(g): Export(tuple(x.format for x in g), next((x.entry for x in g if x.entry), "loop"))
             for _, g in groups}
    return {c: plans[id(g)] for _, g in groups for c in g}


def main(argv: list[str]) -> int:
    """Print the cases (covering array, or ``--full`` the product), their exports, and the pairs by factors."""
    chosen = product() if "--full" in argv else covering(product())
    for c in chosen:
        print(c.id)
    need = required_pairs()
    by_factors: dict[tuple[str, str], int] = {}
    for (a, _), (b, _) in need:
        by_factors[(a, b)] = by_factors.get((a, b), 0) + 1
    n_exports = len({id(e) for e in exports(chosen).values()})
    print(f"\n{len(chosen)} cases in {n_exports} exports (the full product: {len(product())} cases); "
          f"cost {sum(cost(c.format) for c in chosen):.0f} .onnx-lowerings")
    print(f"{len(need)} pairs of factor values can meet; left uncovered: {len(uncovered(chosen))}")
    for (a, b), n in sorted(by_factors.items()):
        print(f"  {a} x {b}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
