"""XNNPACK's delegate passes, each run only when its graph holds an operator the pass rewrites.

ExecuTorch 1.5.1's XNNPACK preprocess runs seventeen passes on every delegated graph, and each re-interprets the
whole graph even when it finds nothing to rewrite (for an int4 graph that includes torchao's quantization
primitives, re-run in Python each time). Nine of them act only on operators an encoder does not have (batch
norm, convolution, PReLU, concatenation, padding, ReLU-like activations, bilinear upsampling, the boolean mask of
a fused attention); skipping them when their operators are absent leaves the same graph, so the same file
(``tests/test_delegate_passes.py`` compares the bytes with ExecuTorch's own pass list), and saves about a sixth of
a lowering (BENCHMARKS.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def pass_triggers() -> dict[type, frozenset]:
    """Each skippable XNNPACK pass -> the edge operators it acts on (it leaves a graph without them unchanged)."""
    from executorch.backends.xnnpack._passes.conv1d_unsqueeze_pass import Conv1dUnsqueezePass
    from executorch.backends.xnnpack._passes.convert_to_sdpa import ConvertToSDPAPass
    from executorch.backends.xnnpack._passes.convert_to_upsample_bilinear2d import ConvertToUpsampleBilinear2d
    from executorch.backends.xnnpack._passes.decompose_batch_norm import DecomposeBatchNorm
    from executorch.backends.xnnpack._passes.decompose_cat import DecomposeConcatenate
    from executorch.backends.xnnpack._passes.fuse_activation_pass import FuseActivationPass
    from executorch.backends.xnnpack._passes.fuse_batch_norm import FuseBatchNormPass
    from executorch.backends.xnnpack._passes.insert_pad_qdq import InsertPadQDQPass
    from executorch.backends.xnnpack._passes.prelu_reshape_pass import PReLUReshapePass
    from executorch.exir.dialects._ops import ops as exir_ops

    aten = exir_ops.edge.aten
    batch_norm = frozenset(DecomposeBatchNorm.BATCH_NORM_OPS)
    return {
        # pattern passes: a match needs every operator of a pattern, so one that each pattern holds gates them
        # (tests/test_delegate_passes.py reads the patterns): the upsample operator itself, and the boolean mask
        # reduction of scaled_dot_product_attention's decomposition, which an additive-mask attention lacks
        ConvertToUpsampleBilinear2d: frozenset({aten.upsample_bilinear2d.vec}),
        ConvertToSDPAPass: frozenset({aten.any.dim}),
        FuseBatchNormPass: batch_norm,
        DecomposeBatchNorm: batch_norm,
        FuseActivationPass: frozenset(FuseActivationPass.FUSEABLE_ACTIVATIONS),
        DecomposeConcatenate: frozenset({aten.cat.default}),
        InsertPadQDQPass: frozenset({aten.constant_pad_nd.default}),
        Conv1dUnsqueezePass: frozenset({aten.convolution.default}),
        PReLUReshapePass: frozenset({aten._prelu_kernel.default}),
    }


def may_act(pass_: type, graph_module, triggers: dict[type, frozenset]) -> bool:
    """Whether ``pass_`` can change ``graph_module``: always, unless it is a gated pass and none of its operators
    is in the graph (nested graphs included)."""
    ops = triggers.get(pass_)
    if ops is None:
        return True
    return any(
        node.op == "call_function" and node.target in ops
        for module in graph_module.modules()
        if hasattr(module, "graph")
        for node in module.graph.nodes
    )


@contextlib.contextmanager
def only_passes_that_can_act() -> Iterator[None]:
    """While lowering, XNNPACK's preprocess runs its passes one at a time and skips a gated pass whose operators
    are absent from the graph as it stands then (an earlier pass may add them: batch norm becomes convolution)."""
    from executorch.backends.xnnpack import xnnpack_preprocess
    from executorch.backends.xnnpack._passes import XNNPACKPassManager

    triggers = pass_triggers()

    class _GatedPassManager(XNNPACKPassManager):
        def transform(self):
            ep = self.exported_program
            for pass_ in self.passes:
                if may_act(pass_, ep.graph_module, triggers):
                    ep = XNNPACKPassManager(ep, passes=[pass_]).transform()
            return ep

    original = xnnpack_preprocess.XNNPACKPassManager
    xnnpack_preprocess.XNNPACKPassManager = _GatedPassManager
    try:
        yield
    finally:
        xnnpack_preprocess.XNNPACKPassManager = original
