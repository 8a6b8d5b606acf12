"""Task heads shaped for a phone: fill-mask's top k at the masked positions, one pooled sentence embedding.

The training-time heads return a score for every position over the whole vocabulary (fill-mask:
[S, 30000] fp32 at albert-base, 58.6 MiB of planned arena at 512 tokens) or every token's vector
(feature-extraction). These return what an app reads, computed inside the graph:

- ``topk[:K]`` (fill-mask): the first ``MASK_SLOTS`` ``[MASK]`` tokens of ``input_ids``, found in the
  graph (the app passes nothing new and cannot pass wrong positions); outputs ``mask_positions``
  int64 [B, MASK_SLOTS] (a slot without a mask holds -1), ``top_ids`` int64 [B, MASK_SLOTS, K] and
  ``top_scores`` float32 [B, MASK_SLOTS, K]: softmax probabilities over the vocabulary, best first
  (an empty slot's rows are meaningless; read ``mask_positions``).
- ``--pooling MODE [--normalize]`` (feature-extraction): ``sentence_embedding`` float32 [B, D]: a pooling of
  sentence-transformers' (``core.choices.POOLINGS``) over real tokens (attention mask 1), a sentence-transformers
  folder's Dense projections after it (``projection``), L2-normalized if asked.

A head reads the encoder's last hidden state plus the model inputs it names (``head_inputs``); in the
.pte's layer loop those are passed to ``head`` after the hidden state (the program's constant method
``head_inputs`` lists their indices among the three inputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from ..core.errors import BadInputError
from ..core.heads import POOLED_OUTPUTS, REFERENCE_EXTRAS, TOPK_OUTPUTS, HeadSpec, head_task
from ..core.signature import MASK_SLOTS
from .families import Family
from .projection import load_projection


class TopKMasked(torch.nn.Module):
    """(hidden [B, S, H], input_ids [B, S]) -> the top k of the MLM head at the first MASK_SLOTS masks."""

    head_inputs = ("input_ids",)
    output_names = TOPK_OUTPUTS

    def __init__(self, predictions: torch.nn.Module, mask_id: int, k: int) -> None:
        super().__init__()
        self.predictions = predictions
        self.mask_id = int(mask_id)
        self.k = int(k)

    def forward(self, hidden, input_ids):
        batch, seq = input_ids.shape
        is_mask = (input_ids == self.mask_id).to(torch.float32)
        # first masks rank highest: a mask at position p scores seq + 1 - p, other tokens 0
        rank = is_mask * (seq + 1 - torch.arange(seq, dtype=torch.float32))
        padded = torch.cat([rank, torch.zeros(batch, MASK_SLOTS, dtype=torch.float32)], dim=1)
        top, where = torch.topk(padded, MASK_SLOTS, dim=1)
        valid = top > 0
        at = torch.where(valid, where, torch.zeros_like(where))
        picked = torch.gather(hidden, 1, at.unsqueeze(-1).expand(batch, MASK_SLOTS, hidden.shape[-1]))
        probs = torch.softmax(self.predictions(picked), dim=-1)
        scores, ids = torch.topk(probs, self.k, dim=-1)
        positions = torch.where(valid, where, torch.full_like(where, -1))
        # every slot's probabilities last, for the fp32 reference (parity scores the artifact's ids by
        # them); exports keep only output_names, so the graph never returns them
        return positions, ids, scores, probs


class PoolingHead(torch.nn.Module):
    """(hidden [B, S, H][, attention_mask [B, S]]) -> one vector per example [B, D]: the pooling (several
    concatenated), the projections after it, the L2 normalization; as sentence-transformers computes them for a
    mask of ones then zeros (the app pads on the right)."""

    output_names = POOLED_OUTPUTS

    def __init__(self, pooling: str, normalize: bool, projections: Sequence[torch.nn.Module] = ()) -> None:
        super().__init__()
        self.pooling = pooling
        self.modes = tuple(pooling.split("+"))
        self.normalize = normalize
        self.projections = torch.nn.ModuleList(projections)
        self.head_inputs: tuple[str, ...] = () if self.modes == ("cls",) else ("attention_mask",)

    def forward(self, hidden, *mask):
        keep = mask[0].to(hidden.dtype).unsqueeze(1) if mask else None  # [B, 1, S]
        vectors = [_pooled(mode, hidden, keep) for mode in self.modes]  # each [B, 1, H]
        vector = vectors[0] if len(vectors) == 1 else torch.cat(vectors, dim=-1)
        for projection in self.projections:
            vector = projection(vector)
        if self.normalize:
            squared = torch.bmm(vector, vector.transpose(1, 2))  # [B, 1, 1]
            vector = vector / torch.sqrt(squared.clamp(min=1e-24))
        return (vector[:, 0],)


def _pooled(mode: str, hidden: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """One pooling of ``hidden`` [B, S, H] over the tokens ``keep`` [B, 1, S] marks 1: [B, 1, H].

    Sums are batched matmuls, which XNNPACK runs (it has no reduce-sum): ``w @ hidden`` sums the tokens weighted by
    ``w``, ``w @ keep^T`` sums the weights. No large constant stands in for a padded token (an NPU's 16-bit
    activations would spend their range on it): max pooling fills padded tokens with the first token's vector
    (a real token's, so the maximum is unchanged), the last token is the one whose next token is not kept."""
    if mode == "cls" or keep is None:
        return hidden[:, :1]
    if mode == "lasttoken":
        # the next token's mask: padded first, then cut (cutting first asks torch.export for 3 or more tokens)
        after = torch.cat([keep, torch.zeros_like(keep[:, :, :1])], dim=2)[:, :, 1:]
        return torch.bmm(keep - after, hidden)
    if mode == "max":
        real = keep.transpose(1, 2)  # [B, S, 1]
        filled = hidden * real + hidden[:, :1] * (1.0 - real)
        return filled.amax(dim=1, keepdim=True)
    weights = keep
    if mode == "weightedmean":
        weights = keep * torch.arange(1, hidden.shape[1] + 1, dtype=hidden.dtype)
    total = torch.bmm(weights, hidden)
    count = torch.bmm(weights, keep.transpose(1, 2)).clamp(min=1.0)  # [B, 1, 1]
    return total / (torch.sqrt(count) if mode == "mean_sqrt_len_tokens" else count)


class PhoneModel(torch.nn.Module):
    """A transformers encoder model with its head replaced by a phone head; called like the transformers model
    (0/1 or additive attention mask), returns a dict of the head's outputs. ``stages.cut`` cuts it into
    the layer loop like any model of its family (its base model is the original's, under the original's name,
    so that its parameters keep their names)."""

    def __init__(self, model: Any, head: torch.nn.Module) -> None:
        super().__init__()
        self.base_model_prefix = model.base_model_prefix
        self.add_module(self.base_model_prefix, model.base_model)
        self.head = head
        self.config = model.config
        self.architecture = type(model).__name__  # what reports name (the weights are that model's)

    @property
    def base_model(self) -> torch.nn.Module:
        """The encoder (transformers' name for it)."""
        return self.get_submodule(self.base_model_prefix)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        keep = (attention_mask[:, 0, 0, :] == 0).to(torch.int64) if attention_mask.dim() == 4 else attention_mask
        types = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = self.base_model(input_ids=input_ids, attention_mask=attention_mask, **types).last_hidden_state
        given = {"input_ids": input_ids, "attention_mask": keep}
        outs = self.head(hidden, *[given[n] for n in self.head.head_inputs])
        return dict(zip([*self.head.output_names, *REFERENCE_EXTRAS], outs))


def build_head(
    model: Any, spec: HeadSpec, mask_id: int | None, family: Family, projections: Sequence[torch.nn.Module] = ()
) -> torch.nn.Module:
    """``model`` (transformers, of ``family``) with the head of ``spec`` (``projections``: the modules of its
    projections, with their weights); the model itself for ``full``."""
    if spec.kind == "topk":
        if mask_id is None:
            raise BadInputError("--head topk needs a tokenizer with a [MASK] token")
        mlm = family.mlm_modules(model)  # ALBERT's is one module, kept as it is (its parameters' names too)
        predictions = mlm[0] if len(mlm) == 1 else torch.nn.Sequential(*mlm)
        return PhoneModel(model, TopKMasked(predictions, mask_id, spec.k)).eval()
    if spec.kind == "pool":
        return PhoneModel(model, PoolingHead(spec.pooling, spec.normalize, projections)).eval()
    return model


def with_head(loaded: Any, spec: HeadSpec) -> Any:
    """``loaded`` (a LoadedModel) with the head of ``spec``: its model and task replaced (the projections' weights
    read from the checkpoint's folder); as it is for ``full``."""
    if spec.is_full:
        return loaded
    mask_id = getattr(loaded.tokenizer, "mask_token_id", None)
    projections = [load_projection(loaded.folder, p) for p in spec.projections]
    model = build_head(loaded.model, spec, mask_id, loaded.family, projections)
    return replace(loaded, model=model, task=head_task(loaded.task, spec))
