"""A model cut where its layer loop goes: embed, the layer groups (ALBERT's shared one; another family's L
layers), head. How each family's modules map onto these is ``families``.

Both backends export these pieces and run a group once per layer of the schedule (the .pte as methods the caller
loops over, the .onnx's ALBERT inside a ``Loop``), so ALBERT's shared layer exists once in the artifact and in RAM.
Layouts: ``batch_one`` (the XNNPACK .pte) keeps hidden states ``[1, S, 1, H]`` and the additive mask
``[1, 1, S]``; otherwise hidden states are ``[B, S, H]`` and the mask ``[B, 1, 1, S]``.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from ..core.signature import INPUT_NAMES
from .families import Family, family_of
from .reference import additive_mask


class Embed(torch.nn.Module):
    """Embeddings and (where the family has one) the projection to the hidden width, plus the additive mask
    every layer reads."""

    def __init__(self, base: Any, family: Family, batch_one: bool) -> None:  # a transformers base model
        super().__init__()
        self.embeddings = base.embeddings
        self.project = family.module(base, family.projection) or torch.nn.Identity()
        self.width = base.config.hidden_size
        self.batch_one = batch_one
        self.types = INPUT_NAMES[2] in family.signature.inputs
        self.padding_idx = int(base.config.pad_token_id) if family.positions_after_padding else None

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        if self.types:
            hidden = self.project(self.embeddings(input_ids=input_ids, token_type_ids=token_type_ids))
        elif self.padding_idx is not None:
            # RoBERTa's positions: padding_idx + 1 for the first real token, padding_idx where masked. From the mask
            # (transformers reads input_ids != padding_idx: the same wherever padding is the pad id), and the one
            # token type as zeros (transformers gathers its buffer by position: one op fewer here). No Python scalar
            # in the integer arithmetic: PT2E's XNNPACK quantizer turns an op's scalar into a float tensor, and the
            # positions came out float
            keep = attention_mask.to(input_ids.dtype)
            positions = torch.cumsum(keep, dim=1) * keep + torch.full_like(keep, self.padding_idx)
            types = torch.zeros_like(input_ids)
            hidden = self.embeddings(input_ids=input_ids, token_type_ids=types, position_ids=positions)
        else:  # DistilBERT's embeddings take the ids alone
            hidden = self.project(self.embeddings(input_ids))
        keep = attention_mask[:, None, :] if self.batch_one else attention_mask[:, None, None, :]
        mask = additive_mask(keep)
        return (hidden.view(1, -1, 1, self.width) if self.batch_one else hidden), mask


class Group(torch.nn.Module):
    """One layer group (ALBERT's shared layer; another family's layer): (hidden, mask) -> hidden."""

    def __init__(self, group: torch.nn.Module) -> None:
        super().__init__()
        self.group = group

    def forward(self, hidden, mask):
        return self.group(hidden, mask)


class _PassEmbeddings(torch.nn.Module):
    """Stands in for the embeddings (and a projection) inside the head: returns the hidden states it is given
    (``inputs_embeds``, by name or, as DistilBERT passes it, second by position; a projection's only input)."""

    def forward(self, *args, inputs_embeds=None, **kwargs):
        if inputs_embeds is not None:
            return inputs_embeds
        return args[1] if len(args) > 1 else args[0]


class _PassEncoder(torch.nn.Module):
    """Stands in for the encoder inside the head: the layers already ran."""

    def __init__(self, width: int | None) -> None:
        super().__init__()
        self.width = width

    def forward(self, *args, hidden_states=None, **kwargs):
        # the richest encoder output: a base model reads ``.cache`` of BERT's (None: no cache)
        from transformers.modeling_outputs import BaseModelOutputWithPastAndCrossAttentions as Output

        hidden = args[0] if hidden_states is None else hidden_states
        return Output(last_hidden_state=hidden if self.width is None else hidden.view(1, -1, self.width))


class Head(torch.nn.Module):
    """The model after its encoder (pooler and task head) run exactly as transformers wrote them."""

    def __init__(self, model: torch.nn.Module, output_names: tuple[str, ...], batch_one: bool) -> None:
        super().__init__()
        self.model = model
        self.output_names = output_names
        self.batch_one = batch_one

    def forward(self, hidden):
        if self.batch_one:  # nothing masked here: the layers did it
            mask = torch.zeros_like(hidden[:, :, 0, :1]).view(1, 1, 1, -1)
        else:
            mask = torch.zeros_like(hidden[:, :, :1]).transpose(1, 2)[:, None]
        out = self.model(inputs_embeds=hidden, attention_mask=mask)
        return tuple(out[name] for name in self.output_names)


class PhoneStage(torch.nn.Module):
    """A phone head (``heads``) after the layers: (hidden[, the one model input it reads]) -> its outputs."""

    def __init__(self, head: torch.nn.Module, output_names: tuple[str, ...], batch_one: bool, width: int) -> None:
        super().__init__()
        self.head = head
        self.n_outputs = len(output_names)
        self.batch_one = batch_one
        self.width = width
        self.head_inputs: tuple[str, ...] = tuple(getattr(head, "head_inputs", ()))

    def _run(self, hidden, *extra):
        if self.batch_one:
            hidden = hidden.view(1, -1, self.width)
        return tuple(self.head(hidden, *extra)[: self.n_outputs])


class PhoneStageAlone(PhoneStage):
    """A phone head that reads the hidden state only."""

    def forward(self, hidden):
        return self._run(hidden)


class PhoneStageWithInput(PhoneStage):
    """A phone head that also reads one model input (``head_inputs``)."""

    def forward(self, hidden, extra):
        return self._run(hidden, extra)


def stage_dynamic_shapes(batch: Any, seq: Any, batch_one: bool) -> dict[str, dict[int, Any]]:
    """The dynamic axes of what passes between the stages, in the layout of ``batch_one``: the hidden state,
    the additive mask, and a model input a head reads (``batch``, ``seq``: torch.export dimensions)."""
    if batch_one:
        return {"hidden": {1: seq}, "mask": {2: seq}, "input": {1: seq}}
    return {"hidden": {0: batch, 1: seq}, "mask": {0: batch, 3: seq}, "input": {0: batch, 1: seq}}


def head_inputs(head: torch.nn.Module) -> list[int]:
    """Indices among (input_ids, attention_mask, token_type_ids) of the inputs ``head`` reads after the hidden state."""
    from ..core.signature import INPUT_NAMES

    return [INPUT_NAMES.index(n) for n in getattr(head, "head_inputs", ())]


class Whole(torch.nn.Module):
    """embed, the groups in schedule order, head: the whole model as one method (``--pte-entry forward``).

    Built from the same modules as the loop's methods, so both quantize to the same stored weights."""

    def __init__(self, embed: Embed, groups: list[Group], head: torch.nn.Module, schedule: list[int]) -> None:
        super().__init__()
        self.embed = embed
        self.groups = torch.nn.ModuleList(groups)
        self.head = head
        self.schedule = list(schedule)
        self.extra = head_inputs(head)

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        given = (input_ids, attention_mask, token_type_ids)
        hidden, mask = self.embed(input_ids, attention_mask, token_type_ids)
        for g in self.schedule:
            hidden = self.groups[g](hidden, mask)
        return self.head(hidden, *[given[i] for i in self.extra])


class _TwoInputs(torch.nn.Module):
    """A module that takes the model inputs, called with the two every family has (``with_inputs``)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, input_ids, attention_mask):
        return self.inner(input_ids, attention_mask)


def with_inputs(module: torch.nn.Module, inputs: tuple[str, ...]) -> torch.nn.Module:
    """``module`` (it takes the model inputs: ``Embed``, ``Whole``, an export wrapper) as it is exported for a
    family whose models take ``inputs``: itself for all three, else one whose graph has exactly two."""
    return module if len(inputs) == len(INPUT_NAMES) else _TwoInputs(module).eval()


def cut(
    model: Any, output_names: tuple[str, ...], batch_one: bool, family: Family | None = None
) -> tuple[Embed, list[Group], torch.nn.Module]:
    """``model`` (a transformers model of ``family``, found from its config when not given, or a
    ``heads.PhoneModel``) as embed, one ``Group`` per layer group, and head.

    The pieces share the model's modules (nothing is copied but two shallow module shells).
    """
    base: Any = model.base_model
    family = family or family_of(base.config.model_type)
    embed = Embed(base, family, batch_one).eval()
    groups = [Group(g).eval() for g in base.get_submodule(family.layers)]
    phone = getattr(model, "head", None)
    if phone is not None and hasattr(phone, "head_inputs"):  # a heads.PhoneModel
        cls = PhoneStageWithInput if phone.head_inputs else PhoneStageAlone
        return embed, groups, cls(phone, tuple(output_names), batch_one, int(base.config.hidden_size)).eval()
    return embed, groups, _model_head(model, base, family, tuple(output_names), batch_one)


def _model_head(model: Any, base: Any, family: Family, output_names: tuple[str, ...], batch_one: bool) -> Head:
    """The transformers model after its encoder: shallow shells whose embeddings (a projection beside them
    too) and encoder pass through."""
    head_base = copy.copy(base)
    passes: dict[str, torch.nn.Module] = {"embeddings": _PassEmbeddings()}
    if family.projection and "." not in family.projection:  # ELECTRA's, run by the base model after its embeddings
        passes[family.projection] = _PassEmbeddings()
    passes[family.encoder] = _PassEncoder(base.config.hidden_size if batch_one else None)
    head_base._modules = {**base._modules, **{k: v for k, v in passes.items() if k in base._modules}}
    head_model = head_base
    if model is not base:
        head_model = copy.copy(model)
        head_model._modules = {**model._modules, model.base_model_prefix: head_base}
    return Head(head_model, output_names, batch_one).eval()


def layer_schedule(config) -> list[int]:
    """Which layer group runs at each depth (the family's rule: ALBERT's AlbertTransformer, else each once)."""
    return family_of(config.model_type).layer_schedule(config)
