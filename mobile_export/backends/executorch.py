"""ExecuTorch .pte with the XNNPACK delegate: export (PT2E int8 or fp32) and run in the ExecuTorch runtime."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import torch

from ..config import Quant


def RUNTIME_VERSION() -> str:
    from importlib.metadata import version

    return version("executorch")


class SigmoidGelu(torch.nn.Module):
    """gelu_new (tanh approximation) as ``x * sigmoid(x * (2a + 2ab x^2))``: the same function
    (0.5 (1 + tanh z) = sigmoid(2z); max difference 2e-15 in float64), in six ops XNNPACK takes, where
    ``pow(x, 3)`` stayed outside the delegate as a slow portable kernel (measured: 2-3x the latency
    of the demo model) and the textbook form needs nine ops per layer."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x * (1.5957691216057308 + 0.0713548162726009 * (x * x)))


# gelu_new differs from the exact (erf) GELU by at most 4.8e-4; int8 weights and activations move
# the outputs far more than that, so int8 exports use XNNPACK's one-op GELU (one node per layer
# instead of six: smaller graph per layer, faster). fp32 exports keep the exact function.
GELU_NEW_VS_ERF_MAX_DIFF = 4.8e-4


class XnnpackLayerNorm(torch.nn.LayerNorm):
    """LayerNorm written with ops XNNPACK takes (ExecuTorch 1.5 has no XNNPACK layer-norm config, so
    ``native_layer_norm`` stayed outside the delegate and cut every layer into pieces).

    XNNPACK lowers ``mean`` only over the two inner dims of a 4D tensor (global average pooling), so
    the batch-1 input is normalised as ``[1, S, 1, H]``: the encoder keeps its hidden states in that
    shape (``_xnnpack_encoder_forward``); a ``[1, S, H]`` input is viewed there and back (static sizes
    and one ``-1``: a reshape XNNPACK takes with a dynamic sequence length)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        width = self.normalized_shape[-1]
        x4 = x if x.dim() == 4 else x.view(1, -1, 1, width)
        centred = x4 - x4.mean(dim=(2, 3), keepdim=True)
        var = (centred * centred).mean(dim=(2, 3), keepdim=True)
        y = centred * torch.rsqrt(var + self.eps)
        if self.weight is not None:
            y = y * self.weight
        if self.bias is not None:
            y = y + self.bias
        return y if x.dim() == 4 else y.view(1, -1, width)


def _xnnpack_attention_forward(self, hidden_states, attention_mask=None, **kwargs):
    """AlbertAttention for a batch of one, as 3D batched matmuls over the heads.

    Eager attention's 4D ``matmul`` becomes expand + reshape-with-symbolic-sizes + bmm, and XNNPACK takes
    no reshape with a symbolic size, so each layer fell apart into ~8 delegate calls. Here every
    reshape has static sizes and one ``-1``. ``hidden_states`` is ``[1, S, 1, hidden]`` and
    ``attention_mask`` the ``[1, 1, S]`` additive mask, both prepared by ``_xnnpack_encoder_forward``;
    the query weights carry the 1/sqrt(head size) scaling (``xnnpack_friendly``).
    """
    heads, size = self.num_attention_heads, self.attention_head_size
    q = self.query(hidden_states).view(-1, heads, size).permute(1, 0, 2)  # [H, S, D]
    k = self.key(hidden_states).view(-1, heads, size).permute(1, 2, 0)  # [H, D, S]
    v = self.value(hidden_states).view(-1, heads, size).permute(1, 0, 2)  # [H, S, D]
    scores = torch.bmm(q, k)
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = torch.softmax(scores, dim=-1)
    context = torch.bmm(probs, v).permute(1, 0, 2).contiguous().view(1, -1, 1, self.all_head_size)
    return self.LayerNorm(hidden_states + self.dense(context)), None


def _xnnpack_encoder_forward(self, hidden_states, attention_mask=None, **kwargs):
    """AlbertTransformer for a batch of one: the mask becomes ``[1, 1, S]`` additive once, and the hidden
    states stay ``[1, S, 1, hidden]`` through all layers (no reshapes inside a layer)."""
    from transformers.modeling_outputs import BaseModelOutput

    if attention_mask is not None:  # ExportWrapper's additive [1, 1, 1, S] float mask
        attention_mask = attention_mask[0]
    hidden = self.embedding_hidden_mapping_in(hidden_states)
    width = hidden.shape[-1]
    hidden = hidden.view(1, -1, 1, width)
    config = self.config
    for i in range(config.num_hidden_layers):
        group = int(i / (config.num_hidden_layers / config.num_hidden_groups))
        hidden = self.albert_layer_groups[group](hidden, attention_mask)
    return BaseModelOutput(last_hidden_state=hidden.view(1, -1, width))


def xnnpack_friendly(wrapper: torch.nn.Module, quant: Quant = Quant.FP32) -> tuple[torch.nn.Module, dict]:
    """A batch-1 copy of ``wrapper`` with the parts XNNPACK cannot take rewritten into ones it can.

    Same functions (for int8, gelu_new becomes the exact GELU: see ``GELU_NEW_VS_ERF_MAX_DIFF``), same
    (shared) parameters; returns (copy, counts of rewritten modules). Only for the .pte path, whose
    batch size is static 1.
    """
    import copy
    import types

    from transformers.activations import NewGELUActivation
    from transformers.models.albert.modeling_albert import AlbertAttention, AlbertTransformer

    wrapper = copy.deepcopy(wrapper)
    counts = {"gelu": 0, "layer_norm": 0, "attention": 0, "encoder": 0}
    for module in list(wrapper.modules()):
        for name, child in list(module.named_children()):
            if type(child) is NewGELUActivation:
                setattr(module, name, torch.nn.GELU() if quant is Quant.INT8 else SigmoidGelu())
                counts["gelu"] += 1
        if type(module) is torch.nn.LayerNorm and len(module.normalized_shape) == 1:
            module.__class__ = XnnpackLayerNorm
            counts["layer_norm"] += 1
        elif type(module) is AlbertAttention:
            module.forward = types.MethodType(_xnnpack_attention_forward, module)
            with torch.no_grad():  # fold the score scaling into the query projection
                module.query.weight.mul_(module.scaling)
                if module.query.bias is not None:
                    module.query.bias.mul_(module.scaling)
            counts["attention"] += 1
        elif type(module) is AlbertTransformer:
            module.forward = types.MethodType(_xnnpack_encoder_forward, module)
            counts["encoder"] += 1
    return wrapper, counts


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

    Every delegated layer refers to each of its constants (weights, biases, per-channel scales) by that
    key, so an unrolled ALBERT stores ~20 keys per layer even though the weights themselves are stored
    once: with 64-hex-character keys that was ~900 of the ~9,700 bytes each extra layer adds to the
    .pte. The keys only need to be unique within one file; ExecuTorch's named-data store refuses one
    key for two different blobs, so a collision would fail the export, never corrupt it.
    """
    from executorch.backends.xnnpack.operators import node_visitor

    original = node_visitor.hashlib
    node_visitor.hashlib = _ShortSha256
    try:
        yield
    finally:
        node_visitor.hashlib = original


def export(wrapper: torch.nn.Module, example: tuple[torch.Tensor, ...], dynamic_shapes: dict,
           quant: Quant, dest: Path, progress) -> dict:
    """Export ``wrapper`` to ``dest`` (.pte), lowered to XNNPACK; returns stats for the report."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.utils.configs import (
        get_xnnpack_edge_compile_config,
        get_xnnpack_executorch_backend_config,
    )
    from executorch.exir import to_edge_transform_and_lower

    wrapper, rewritten = xnnpack_friendly(wrapper, quant)
    with progress.step("executorch: torch.export"):
        ep = torch.export.export(wrapper, example, dynamic_shapes=dynamic_shapes, strict=False)
    if quant is Quant.INT8:
        from quantize.pt2e import quantize_graph

        with progress.step("executorch: int8 PT2E quantization"):
            gm = quantize_graph(ep.module(), [example])
            ep = torch.export.export(gm, example, dynamic_shapes=dynamic_shapes, strict=False)
    with progress.step("executorch: lowering to XNNPACK (the slow part)"), short_constant_keys():
        edge = to_edge_transform_and_lower(
            ep, partitioner=[XnnpackPartitioner()], compile_config=get_xnnpack_edge_compile_config()
        )
        program = edge.to_executorch(get_xnnpack_executorch_backend_config())
    with progress.step("executorch: writing .pte"):
        with open(dest, "wb") as f:
            program.write_to_file(f)
    graph = program.exported_program().graph_module.graph
    delegates = sum(1 for n in graph.nodes if n.op == "call_function" and "call_delegate" in str(n.target))
    outside = sorted({str(n.target) for n in graph.nodes if n.op == "call_function"
                      and str(n.target).startswith("aten.")})
    return {"xnnpack_partitions": delegates, "ops_outside_delegate": outside, "rewritten_for_xnnpack": rewritten}


class Runner:
    """A .pte loaded by the ExecuTorch runtime with full internal-consistency verification."""

    def __init__(self, path: Path) -> None:
        from executorch.runtime import Runtime, Verification

        runtime = Runtime.get()
        self.program = runtime.load_program(str(path), verification=Verification.InternalConsistency)
        self.method = self.program.load_method("forward")

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        from ..reference import INPUT_NAMES

        inputs = [torch.from_numpy(np.ascontiguousarray(feeds[n], dtype=np.int64)) for n in INPUT_NAMES]
        return [o.detach().numpy().copy() for o in self.method.execute(inputs)]
