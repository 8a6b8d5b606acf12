"""Which head an export gets, as data (``HeadSpec``: the model's own, top-k at the masks, a pooled sentence
embedding, with the projections a sentence-transformers folder puts after its pooling), the options that choose it,
and the task's outputs with it. The heads themselves, torch modules,
are ``model.heads``; this part is read by a process that only runs an export (``run``, ``load``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .choices import DEFAULT_TOP_K, POOLINGS
from .errors import BadInputError
from .signature import INTEGER_OUTPUTS, MASK_SLOTS
from .tasks import OutputKind, TaskSpec

TOPK_OUTPUTS = (*INTEGER_OUTPUTS, "top_scores")  # the top-k head's outputs (``model.heads.TopKMasked``)
POOLED_OUTPUTS = ("sentence_embedding",)  # the pooling head's (``model.heads.PoolingHead``)
REFERENCE_EXTRAS = ("slot_probs",)  # what the top-k head gives the fp32 reference beyond its outputs
# what each pooling returns, for the manifest
POOLING_WHAT = {
    "cls": "the first token's vector",
    "mean": "the mean over tokens with attention_mask 1",
    "max": "the per-dimension maximum over tokens with attention_mask 1",
    "mean_sqrt_len_tokens": "the sum over tokens with attention_mask 1 divided by the square root of their count",
    "weightedmean": "the mean over tokens with attention_mask 1 weighted by position (1, 2, ...)",
    "lasttoken": "the last token with attention_mask 1",
}
# a projection's activations sentence-transformers' Dense stores (by class name); the export builds them itself
ACTIVATIONS = ("Tanh", "Identity", "ReLU", "GELU", "Sigmoid", "SiLU")


@dataclass(frozen=True)
class Projection:
    """A sentence-transformers Dense module after the pooling: ``activation(x @ W^T + b)`` (``+ x`` or ``+ x @
    R^T`` with ``residual``); ``path``: its folder in the sentence-transformers folder (where a parity check reads its
    weights again)."""

    in_features: int
    out_features: int
    activation: str = "Tanh"
    bias: bool = True
    residual: bool = False
    path: str = ""

    def describe(self) -> dict[str, Any]:
        """The projection as manifest.json records it."""
        out = {"in": self.in_features, "out": self.out_features, "activation": self.activation, "bias": self.bias}
        return {**out, "residual": self.residual, "path": self.path}

    @classmethod
    def from_manifest(cls, d: dict[str, Any]) -> Projection:
        """The projection ``describe`` recorded."""
        return cls(
            int(d["in"]),
            int(d["out"]),
            str(d.get("activation", "Tanh")),
            bool(d.get("bias", True)),
            bool(d.get("residual", False)),
            str(d.get("path", "")),
        )


@dataclass(frozen=True)
class HeadSpec:
    """Which head an export gets: ``full`` (the model's own), ``topk`` or ``pool``."""

    kind: str = "full"
    k: int = DEFAULT_TOP_K
    pooling: str = "cls"  # one of POOLINGS, or several joined by "+" (their vectors concatenated, in order)
    normalize: bool = False
    projections: tuple[Projection, ...] = ()  # after the pooling, before the normalization

    @property
    def is_full(self) -> bool:
        """The model's own head, unchanged."""
        return self.kind == "full"

    @classmethod
    def from_manifest(cls, d: dict[str, Any] | None) -> HeadSpec:
        """The spec a manifest's ``head`` records (``describe``'s output); full when absent."""
        d = d or {}
        kind = str(d.get("kind", "full"))
        if kind == "topk":
            return cls("topk", k=int(d.get("k", DEFAULT_TOP_K)))
        if kind == "pool":
            projections = tuple(Projection.from_manifest(p) for p in d.get("projections") or ())
            return cls(
                "pool",
                pooling=str(d.get("pooling", "cls")),
                normalize=bool(d.get("normalize", False)),
                projections=projections,
            )
        return cls()

    def describe(self) -> dict[str, Any]:
        """The head as manifest.json records it."""
        if self.kind == "topk":
            return {
                "kind": "topk",
                "k": self.k,
                "mask_slots": MASK_SLOTS,
                "positions": f"the first {MASK_SLOTS} [MASK] tokens of input_ids, in order, found in the graph; "
                "mask_positions holds -1 in a slot without one (ignore that slot's ids and scores)",
                "scores": "softmax probabilities over the vocabulary, best first",
            }
        if self.kind == "pool":
            what = ", then ".join(POOLING_WHAT[p] for p in self.pooling.split("+"))
            out: dict[str, Any] = {
                "kind": "pool",
                "pooling": self.pooling,
                "normalize": self.normalize,
                "what": what if "+" not in self.pooling else f"concatenated: {what}",
            }
            if self.projections:
                out["projections"] = [p.describe() for p in self.projections]
            return out
        return {"kind": "full"}


def parse_head(
    task: str, head: str | None, pooling: str | None, normalize: bool, projections: tuple[Projection, ...] = ()
) -> HeadSpec:
    """The head of ``--head`` / ``--pooling`` / ``--normalize`` (and a sentence-transformers folder's projections)
    for ``task``; BadInputError when they do not fit."""
    if head is not None and head != "full":
        if task != "fill-mask":
            raise BadInputError(f"--head {head} is for fill-mask exports; this one is {task}")
        kind, _, k = head.partition(":")
        if kind != "topk":
            raise BadInputError(f"--head {head}: pass full, topk or topk:K (K candidates per [MASK])")
        try:
            top = int(k) if k else DEFAULT_TOP_K
        except ValueError:
            raise BadInputError(f"--head {head}: K must be an integer, e.g. topk:5") from None
        if not 1 <= top <= 100:
            raise BadInputError(f"--head {head}: K must be between 1 and 100")
        return HeadSpec("topk", k=top)
    if pooling is not None:
        if task != "feature-extraction":
            raise BadInputError(f"--pooling is for feature-extraction exports; this one is {task}")
        if not pooling or any(p not in POOLINGS for p in pooling.split("+")):
            raise BadInputError(f"--pooling {pooling}: pass one of {', '.join(POOLINGS)}")
        return HeadSpec("pool", pooling=pooling, normalize=normalize, projections=projections)
    if normalize:
        raise BadInputError("--normalize needs --pooling")
    return HeadSpec()


def head_task(task: TaskSpec, spec: HeadSpec) -> TaskSpec:
    """The task as the head shapes its outputs."""
    if spec.kind == "topk":
        return replace(
            task,
            outputs=TOPK_OUTPUTS,
            kind=OutputKind.TOP_K,
            reference_extras=REFERENCE_EXTRAS,
            head=spec.describe(),
        )
    if spec.kind == "pool":
        return replace(task, outputs=POOLED_OUTPUTS, kind=OutputKind.SENTENCE_EMBEDDING, head=spec.describe())
    return task
