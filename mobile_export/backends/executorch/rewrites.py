"""Encoder modules rewritten into ops XNNPACK takes (same functions, same shared parameters): ALBERT's, and the
self-attention of BERT, ELECTRA, DistilBERT, RoBERTa and XLM-R."""

from __future__ import annotations

import torch

from ...core.choices import Quant


class SigmoidGelu(torch.nn.Module):
    """gelu_new (tanh approximation) as ``x * sigmoid(x * (2a + 2ab x^2))``: the same function
    (0.5 (1 + tanh z) = sigmoid(2z); max difference 2e-15 in float64), in six ops XNNPACK takes; the
    textbook form's ``pow(x, 3)`` stays outside the delegate as a slow portable kernel and the form
    needs nine ops per layer."""

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
    the query weights carry the 1/sqrt(head size) scaling (``xnnpack_friendly``). Each projection reads
    its own view of the input: with one shared input the int8 export quantizes it once for all three,
    and the XNNPACK partitioner then cuts the layer in two after the projections, which leaves their
    outputs in the method's activation arena (+4.5 MiB for albert-base at 512 tokens).
    """
    context = _heads(self.query, self.key, self.value, hidden_states, attention_mask, self.num_attention_heads)
    return self.LayerNorm(hidden_states + self.dense(context)), None


def _heads(query, key, value, hidden: torch.Tensor, mask: torch.Tensor | None, heads: int) -> torch.Tensor:
    """Multi-head attention of a batch of one as 3D batched matmuls: ``hidden`` ``[1, S, 1, W]`` in, the context
    ``[1, S, 1, W]`` out (``mask``: ``[1, 1, S]`` additive; the query carries the score scaling). Every reshape has
    static sizes and one ``-1``; each projection reads its own view of the input (``_xnnpack_attention_forward``)."""
    width = hidden.shape[-1]  # the projections keep the width (a padded int4 Linear has no .weight of its own)
    size = width // heads
    q = query(hidden.view(-1, width)).view(-1, heads, size).permute(1, 0, 2)  # [H, S, D]
    k = key(hidden.view(1, -1, width)).view(-1, heads, size).permute(1, 2, 0)  # [H, D, S]
    v = value(hidden.view(-1, 1, width)).view(-1, heads, size).permute(1, 0, 2)  # [H, S, D]
    scores = torch.bmm(q, k)
    if mask is not None:
        scores = scores + mask
    # core ATen's softmax itself: torch.softmax exports as softmax.int, which ExecuTorch decomposes into this op
    # with one more re-trace of each layer method (backends.executorch.decompositions skips a re-trace with no work)
    probs = torch.ops.aten._softmax(scores, -1, False)
    return torch.bmm(probs, v).permute(1, 0, 2).contiguous().view(1, -1, 1, width)


def _xnnpack_self_attention_forward(self, hidden_states, attention_mask=None, **kwargs):
    """BERT's, ELECTRA's, RoBERTa's and XLM-R's self-attention for a batch of one (``_heads``); the output
    projection and LayerNorm that follow are the layer's own modules, which take ``[1, S, 1, W]`` as they are."""
    return _heads(self.query, self.key, self.value, hidden_states, attention_mask, self.num_attention_heads), None


def _xnnpack_distilbert_attention_forward(self, hidden_states, attention_mask=None, **kwargs):
    """DistilBERT's self-attention (its output projection inside) for a batch of one (``_heads``)."""
    return self.out_lin(_heads(self.q_lin, self.k_lin, self.v_lin, hidden_states, attention_mask, self.n_heads)), None


def _xnnpack_encoder_forward(self, hidden_states, attention_mask=None, **kwargs):
    """AlbertTransformer for a batch of one: the mask becomes ``[1, 1, S]`` additive once, and the hidden
    states stay ``[1, S, 1, hidden]`` through all layers (no reshapes inside a layer)."""
    from transformers.modeling_outputs import BaseModelOutput

    if attention_mask is not None:  # ExportWrapper's additive [1, 1, 1, S] float mask
        attention_mask = attention_mask[0]
    hidden = self.embedding_hidden_mapping_in(hidden_states)
    width = hidden.shape[-1]
    hidden = hidden.view(1, -1, 1, width)
    from ...model.stages import layer_schedule

    for group in layer_schedule(self.config):
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

    # each family's self-attention (class name), its rewritten forward and its query projection's name
    attentions = {
        "BertSelfAttention": (_xnnpack_self_attention_forward, "query"),
        "ElectraSelfAttention": (_xnnpack_self_attention_forward, "query"),
        "RobertaSelfAttention": (_xnnpack_self_attention_forward, "query"),
        "XLMRobertaSelfAttention": (_xnnpack_self_attention_forward, "query"),
        "CamembertSelfAttention": (_xnnpack_self_attention_forward, "query"),
        "DistilBertSelfAttention": (_xnnpack_distilbert_attention_forward, "q_lin"),
    }

    wrapper = copy.deepcopy(wrapper)
    counts = {"gelu": 0, "layer_norm": 0, "attention": 0, "encoder": 0}
    for module in list(wrapper.modules()):
        for name, child in list(module.named_children()):
            if type(child) is NewGELUActivation:
                setattr(module, name, SigmoidGelu() if quant is Quant.FP32 else torch.nn.GELU())
                counts["gelu"] += 1
        if type(module) is torch.nn.LayerNorm and len(module.normalized_shape) == 1:
            module.__class__ = XnnpackLayerNorm
            counts["layer_norm"] += 1
        elif type(module) is AlbertAttention:
            setattr(module, "forward", types.MethodType(_xnnpack_attention_forward, module))
            with torch.no_grad():  # fold the score scaling into the query projection
                module.query.weight.mul_(module.scaling)
                if module.query.bias is not None:
                    module.query.bias.mul_(module.scaling)
            counts["attention"] += 1
        elif type(module) is AlbertTransformer:
            setattr(module, "forward", types.MethodType(_xnnpack_encoder_forward, module))
            counts["encoder"] += 1
        elif type(module).__name__ in attentions:
            forward, query = attentions[type(module).__name__]
            setattr(module, "forward", types.MethodType(forward, module))
            with torch.no_grad():  # fold the score scaling into the query projection
                projection = getattr(module, query)
                projection.weight.mul_(module.scaling)
                if projection.bias is not None:
                    projection.bias.mul_(module.scaling)
            counts["attention"] += 1
    return wrapper, counts
