"""The .pte export: the XNNPACK-friendly model cut into the layer-loop methods, quantized and lowered."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import torch

from ...core.choices import Quant
from ..base import ExportStats, Plan
from .convention import (
    CALLING_CONVENTION_NAME,
    EMBED_METHOD,
    FORWARD_CONVENTION,
    FORWARD_METHOD,
    GROUP_METHOD,
    HEAD_INPUTS_METHOD,
    HEAD_METHOD,
    SCHEDULE_METHOD,
    entry_methods,
)
from .decompositions import only_decompositions_that_can_act
from .delegate_passes import only_passes_that_can_act
from .layout import share_stored_bytes
from .rewrites import xnnpack_friendly

KEY_HEX_CHARS = 16


class _ShortDigest:
    def __init__(self, digest) -> None:
        self._digest = digest

    def hexdigest(self) -> str:
        return self._digest.hexdigest()[:KEY_HEX_CHARS]


class _ShortSha256:
    """Stands in for ``hashlib`` in ExecuTorch's XNNPACK serializer: see ``short_constant_keys``."""

    @staticmethod
    def sha256(data=b""):
        import hashlib

        return _ShortDigest(hashlib.sha256(data))


@contextlib.contextmanager
def short_constant_keys():
    """Name XNNPACK's constants by 64 bits of their SHA-256 instead of all 256 while lowering.

    Every delegated call refers to each of its constants (weights, biases, per-channel scales) by that
    key. The keys only need to be unique within one file; ExecuTorch's named-data store refuses one
    key for two different blobs, so a collision would fail the export, never corrupt it.
    """
    from executorch.backends.xnnpack.operators import node_visitor

    original = node_visitor.hashlib
    node_visitor.hashlib = _ShortSha256
    try:
        yield
    finally:
        node_visitor.hashlib = original


def stages(
    wrapper: torch.nn.Module, quant: Quant, entry: str = "loop", keep: Sequence[str] = ()
) -> tuple[dict[str, torch.nn.Module], list[int], dict, list[torch.Tensor]]:
    """The XNNPACK-friendly copy of ``wrapper`` cut into the methods of ``entry`` (loop: embed, one per
    layer group, head; forward: all of them as one method; both), the layer schedule, the counts of
    rewritten modules, and the weights of the Linears ``keep`` (names in ``wrapper.model``) in that copy
    (which may have rescaled them: the query carries the attention scaling)."""
    from ...model.stages import Whole, cut, layer_schedule

    friendly: Any
    friendly, rewritten = xnnpack_friendly(wrapper, quant)
    kept = [friendly.model.get_submodule(name).weight.detach() for name in keep]
    schedule = layer_schedule(friendly.model.config)
    embed, groups, head = cut(friendly.model, tuple(friendly.output_names), batch_one=True)
    loop: dict[str, torch.nn.Module] = {EMBED_METHOD: embed}
    loop.update({GROUP_METHOD.format(g): group for g, group in enumerate(groups)})
    loop[HEAD_METHOD] = head
    every = {**loop, FORWARD_METHOD: Whole(embed, groups, head, schedule).eval()}
    return {name: every[name] for name in entry_methods(entry, list(loop))}, schedule, rewritten, kept


def export(wrapper: torch.nn.Module, plan: Plan, dest: Path, progress) -> ExportStats:
    """Export ``wrapper`` to ``dest`` (.pte) as the program of ``plan.options.pte_entry`` (the layer loop, one
    ``forward`` method, or both in one program: their weights are equal bytes, which the named-data store keeps
    once), quantized as ``plan`` says and lowered to XNNPACK; returns stats.

    int4 (``plan.group_size`` inputs per scale): torchao's 8da4w on every Linear and a 4-bit word table
    (``quantize.xnnpack_int4``), applied before torch.export. int8: PT2E with the XNNPACK quantizer, the Linears
    ``plan.keep`` (names in ``wrapper.model``) left fp32."""
    from ...model.stages import with_inputs

    entry = plan.options.pte_entry
    methods, schedule, rewritten, kept = stages(wrapper, plan.quant, entry, plan.keep)
    int4 = None
    if plan.quant is Quant.INT4:
        with progress.step(f"executorch: int4 weights (groups of {plan.group_size}, torchao 8da4w)"):
            if plan.group_size is None:
                raise ValueError("an int4 export needs its group size")
            int4 = quantize_methods_int4(methods, plan.group_size)
    examples, dims = _method_inputs(methods, plan)
    for name in (EMBED_METHOD, FORWARD_METHOD):  # the methods that take the model inputs: the family's
        if name in methods:
            methods[name] = with_inputs(methods[name], plan.signature.inputs)
    programs = {}
    with progress.step(f"executorch: torch.export of {len(methods)} methods"):
        for name, module in methods.items():
            programs[name] = torch.export.export(module, examples[name], dynamic_shapes=dims[name], strict=False)
    if plan.quant is Quant.INT8:
        from quantize.pt2e import quantize_graph

        with progress.step("executorch: int8 PT2E quantization"):
            for name, ep in programs.items():
                gm = quantize_graph(ep.module(), [examples[name]], keep=kept)
                programs[name] = torch.export.export(gm, examples[name], dynamic_shapes=dims[name], strict=False)
    constants = None
    if EMBED_METHOD in methods:  # the layer loop's constant methods
        extra = _head_inputs(methods)
        constants = {SCHEDULE_METHOD: schedule, **({HEAD_INPUTS_METHOD: extra} if extra else {})}
    shared = _lower_and_write(programs, constants, dest, progress)
    # delegate calls and the operators outside them are read from the written file (inspection.coverage)
    return {
        "shared_stored_bytes": shared,
        "rewritten_for_xnnpack": rewritten,
        **({"int4": int4} if int4 else {}),
        "methods": sorted(methods),
        "layer_schedule": schedule,
        "calling_convention": FORWARD_CONVENTION["name"] if entry == "forward" else CALLING_CONVENTION_NAME,
        "entry": entry,
    }


def quantize_methods_int4(methods: dict[str, torch.nn.Module], group_size: int) -> dict:
    """Give the methods' modules (which share submodules) torchao's 8da4w in place, each shared module once;
    returns ``quantize_int4``'s stats."""
    from quantize.xnnpack_int4 import quantize_int4

    # a ModuleDict refuses the key "forward" (its own method): the one-method program goes in as "whole"
    named = {"whole" if name == FORWARD_METHOD else name: module for name, module in methods.items()}
    return quantize_int4(torch.nn.ModuleDict(named), group_size)


def _head_inputs(methods: dict[str, torch.nn.Module]) -> list[int]:
    """Indices among the model inputs of those the head method reads after the hidden state."""
    from ...model.stages import head_inputs

    return head_inputs(methods[HEAD_METHOD]) if HEAD_METHOD in methods else []


def _method_inputs(methods: dict[str, torch.nn.Module], plan: Plan) -> tuple[dict[str, tuple], dict[str, dict]]:
    """Each method's example inputs and dynamic shapes: the model inputs for embed and forward, (hidden, mask)
    as embed computes them for each layer group, hidden and the inputs it reads for the head."""
    from ...model.stages import stage_dynamic_shapes

    example, dynamic_shapes = plan.example(), plan.dynamic_shapes()
    seq = dynamic_shapes[plan.signature.inputs[0]][1]
    with torch.no_grad():
        embed: Any = methods[EMBED_METHOD] if EMBED_METHOD in methods else cast(Any, methods[FORWARD_METHOD]).embed
        hidden, mask = embed(*example)
    examples: dict[str, tuple] = {EMBED_METHOD: example, FORWARD_METHOD: example}
    dims = {EMBED_METHOD: dynamic_shapes, FORWARD_METHOD: dynamic_shapes}
    stage_dims = stage_dynamic_shapes(None, seq, batch_one=True)
    for name in methods:
        if name.startswith(GROUP_METHOD.format("")):
            examples[name] = (hidden, mask)
            dims[name] = {"hidden": stage_dims["hidden"], "mask": stage_dims["mask"]}
    extra = _head_inputs(methods)
    examples[HEAD_METHOD] = (hidden, *[example[i] for i in extra])
    dims[HEAD_METHOD] = {"hidden": stage_dims["hidden"], **({"extra": stage_dims["input"]} if extra else {})}
    return examples, dims


def _lower_and_write(programs: dict, constants: dict | None, dest: Path, progress) -> int:
    """The exported programs lowered to XNNPACK as one ExecuTorch program with ``constants`` as constant methods,
    written to ``dest`` with equal stored weights kept once; returns the bytes so shared."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.utils.configs import (
        get_xnnpack_edge_compile_config,
        get_xnnpack_executorch_backend_config,
    )
    from executorch.exir import to_edge_transform_and_lower

    with (
        progress.step("executorch: lowering to XNNPACK"),
        short_constant_keys(),
        only_decompositions_that_can_act(),
        only_passes_that_can_act(),
    ):
        edge = to_edge_transform_and_lower(
            programs,
            partitioner=[XnnpackPartitioner()],
            compile_config=get_xnnpack_edge_compile_config(),
            constant_methods=constants,
        )
        program = edge.to_executorch(get_xnnpack_executorch_backend_config())
    with progress.step("executorch: writing .pte"):
        data, shared = share_stored_bytes(program.buffer)
        dest.write_bytes(data)
    return shared
