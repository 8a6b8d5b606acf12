"""int8 per-row quantization of embedding tables, shared by both backends.

The XNNPACK PT2E quantizer and ONNX Runtime's dynamic quantizer leave ``nn.Embedding`` in fp32,
and ALBERT's word-embedding table is most of an int8 artifact (albert-base: 30000 x 128 floats,
15 MB of a 23.7 MB .pte). Here the table becomes int8 codes plus one fp32 scale per row
(symmetric, code = round(w / scale), scale = max|row| / 127), looked up with two gathers and a
multiply, which both exporters translate with standard ops (aten.embedding / Gather, Cast, Mul).
"""

from __future__ import annotations

import torch

ZERO_ROW_SCALE = 2.0**-12  # eps of the XNNPACK quantizer's per-channel weight observer


class Int8Embedding(torch.nn.Module):
    """Drop-in replacement for ``nn.Embedding`` (lookup only) with int8 per-row weights."""

    weight_int8: torch.Tensor
    scale: torch.Tensor

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        w = weight.detach().to(torch.float32)
        scale = w.abs().amax(dim=1, keepdim=True) / 127.0
        # An all-zero row (the padding id's) gets the smallest scale XNNPACK's quantizer uses, so a tied
        # decoder quantized by PT2E gets these very scales and codes (and the .pte stores them once).
        scale = torch.clamp(scale, min=ZERO_ROW_SCALE)
        self.register_buffer("weight_int8", torch.clamp(torch.round(w / scale), -127, 127).to(torch.int8))
        self.register_buffer("scale", scale.contiguous())
        self.num_embeddings, self.embedding_dim = w.shape

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        codes = torch.nn.functional.embedding(ids, self.weight_int8).to(torch.float32)
        return codes * torch.nn.functional.embedding(ids, self.scale)

    def dequantized(self) -> torch.Tensor:
        return self.weight_int8.to(torch.float32) * self.scale


def quantize_embeddings(module: torch.nn.Module, names: tuple[str, ...] = ("word_embeddings",)) -> list[str]:
    """Replace the named ``nn.Embedding`` submodules of ``module`` by ``Int8Embedding``, in place.

    A ``nn.Linear`` tied to a replaced table (its weight is the table's parameter) computes with the
    dequantized table from then on: quantizing that weight per output row again gives back exactly
    the table's codes and scales (the row maximum's code is 127), so the int8 decoder and the lookup
    hold the same bytes, which each exporter then stores once.

    Returns:
        The dotted paths of the replaced modules.
    """
    replaced = []
    tables: dict[int, Int8Embedding] = {}
    for path, child in list(module.named_modules()):
        leaf = path.rsplit(".", 1)[-1]
        if leaf in names and isinstance(child, torch.nn.Embedding):
            parent = module.get_submodule(path.rsplit(".", 1)[0]) if "." in path else module
            table = Int8Embedding(child.weight)
            tables[id(child.weight)] = table
            setattr(parent, leaf, table)
            replaced.append(path)
    for child in module.modules():  # a decoder tied to a replaced table (fill-mask's MLM head)
        if isinstance(child, torch.nn.Linear) and id(child.weight) in tables:
            child.weight = torch.nn.Parameter(tables[id(child.weight)].dequantized(), requires_grad=False)
    return replaced
