"""XNNPACK's delegate passes run only where they can act (``backends.executorch.delegate_passes``): the same
file as ExecuTorch's own pass list, and a pass whose operator is in the graph still runs."""

from __future__ import annotations

import contextlib

import pytest
import torch

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.backends.executorch import delegate_passes, lowering


class _ReluCat(torch.nn.Module):
    """A Linear followed by ReLU (FuseActivationPass folds it into the Linear) and a concatenation."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = torch.relu(self.linear(x))
        return torch.cat([y, x], dim=-1)


class _Plain(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x)) + x


def _edge(module: torch.nn.Module):
    from executorch.exir import to_edge

    return to_edge(torch.export.export(module.eval(), (torch.randn(2, 8),))).exported_program().graph_module


def _lowered(gate) -> bytes:
    """_ReluCat (seeded: the same weights each call) lowered to XNNPACK under ``gate``."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    torch.manual_seed(0)
    ep = torch.export.export(_ReluCat().eval(), (torch.randn(2, 8),))
    with gate():
        edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
    return edge.to_executorch().buffer


def test_a_gated_pass_runs_only_when_its_operator_is_in_the_graph():
    from executorch.backends.xnnpack._passes.convert_to_linear import ConvertToLinearPass
    from executorch.backends.xnnpack._passes.decompose_cat import DecomposeConcatenate
    from executorch.backends.xnnpack._passes.fuse_activation_pass import FuseActivationPass
    from executorch.backends.xnnpack._passes.fuse_batch_norm import FuseBatchNormPass

    triggers = delegate_passes.pass_triggers()
    with_ops, without = _edge(_ReluCat()), _edge(_Plain())
    assert delegate_passes.may_act(FuseActivationPass, with_ops, triggers)
    assert delegate_passes.may_act(DecomposeConcatenate, with_ops, triggers)
    assert not delegate_passes.may_act(FuseActivationPass, without, triggers)
    assert not delegate_passes.may_act(DecomposeConcatenate, without, triggers)
    assert not delegate_passes.may_act(FuseBatchNormPass, with_ops, triggers)
    # a pass not in the table always runs
    assert ConvertToLinearPass not in triggers
    assert delegate_passes.may_act(ConvertToLinearPass, without, triggers)


@pytest.mark.parametrize("kind", ["upsample", "sdpa"])
def test_every_pattern_holds_the_operator_that_gates_its_pass(kind):
    """A pattern pass can only match a graph holding every operator of a pattern; its gate looks for one of them, so
    every pattern must contain it (a newer ExecuTorch with other patterns would fail here)."""
    from executorch.backends.xnnpack._passes.convert_to_sdpa import ConvertToSDPAPass
    from executorch.backends.xnnpack._passes.convert_to_upsample_bilinear2d import ConvertToUpsampleBilinear2d
    from executorch.backends.xnnpack.partition.graphs import bilinear_2d, sdpa

    pass_, patterns = {"upsample": (ConvertToUpsampleBilinear2d, bilinear_2d.get_graphs()),
                       "sdpa": (ConvertToSDPAPass, sdpa.get_graphs())}[kind]
    gate = {pass_: delegate_passes.pass_triggers()[pass_]}
    assert patterns
    for pattern in patterns:
        assert delegate_passes.may_act(pass_, pattern, gate)


def test_a_graph_with_the_operators_lowers_to_executorchs_bytes_and_skipping_them_would_not():
    """Both ways: with ReLU and a concatenation in the graph the gated lowering equals ExecuTorch's own pass list;
    a gate that skipped the activation fusion regardless writes another program (so the comparison can fail)."""
    from executorch.backends.xnnpack._passes.fuse_activation_pass import FuseActivationPass

    full = _lowered(contextlib.nullcontext)
    assert _lowered(delegate_passes.only_passes_that_can_act) == full

    @contextlib.contextmanager
    def never_fuse():
        real = delegate_passes.pass_triggers
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(delegate_passes, "pass_triggers", lambda: {**real(), FuseActivationPass: frozenset()})
            with delegate_passes.only_passes_that_can_act():
                yield

    assert _lowered(never_fuse) != full


@pytest.mark.full
def test_an_encoder_export_writes_the_same_pte_as_executorchs_own_passes(tiny_checkpoint, tmp_path, monkeypatch):
    """The tiny ALBERT classifier's int8 .pte: byte for byte the file the full pass list and every decomposition
    re-run write (``decompositions``, the other gate of the lowering; BENCHMARKS.md has the other families,
    precisions and entries compared the same way)."""
    ckpt = tiny_checkpoint("text-classification")
    options = ExportOptions(backends=(Backend.EXECUTORCH,), quant=Quant.INT8, measure_memory=False, bundle=False)
    gated = (export(ckpt, tmp_path / "gated", options).out / "model.pte").read_bytes()
    monkeypatch.setattr(lowering, "only_passes_that_can_act", contextlib.nullcontext)
    monkeypatch.setattr(lowering, "only_decompositions_that_can_act", contextlib.nullcontext)
    assert (export(ckpt, tmp_path / "full", options).out / "model.pte").read_bytes() == gated


def test_int4_takes_a_program_with_a_forward_method():
    """torch.nn.ModuleDict refuses the key "forward": --quant int4 with --pte-entry forward or both once failed on it."""
    from mobile_export.backends.executorch.convention import EMBED_METHOD, FORWARD_METHOD

    shared = torch.nn.Sequential(torch.nn.Linear(32, 32))
    methods = {EMBED_METHOD: shared, FORWARD_METHOD: torch.nn.Sequential(shared, torch.nn.Linear(32, 32))}
    stats = lowering.quantize_methods_int4(methods, 32)
    assert stats["linears"] == 2  # the shared Linear once, the forward's own once
    assert "Intx" in type(methods[FORWARD_METHOD][1].weight).__name__  # quantized in place (torchao subclass)
