"""int4 weights for the XNNPACK delegate (.pte): int8 dynamic activations with 4-bit group-wise weights.

Every ``nn.Linear`` gets torchao's ``Int8DynamicActivationIntxWeightConfig(int4, PerGroup(g))`` (the
"8da4w" scheme ExecuTorch uses for LLMs), applied to the module before ``torch.export``; the XNNPACK
partitioner lowers the resulting pattern to its blockwise 4-bit fully-connected operator. A shared
weight is one ``nn.Linear`` (ALBERT's layer group is one module), so it is quantized and stored once.

XNNPACK takes groups that are whole multiples of 32 inputs. A Linear whose input width is not a
multiple of the group size (albert_chinese_tiny's 312) is widened with zero input columns to the next
multiple and its input zero-padded at run time (``PaddedLinear``): the zeros change no output and
quantize to code 0, at the cost of a few stored bytes and one pad per call.

The word-embedding table becomes 4-bit codes (two per byte) with one scale per group of a row, looked
up by ExecuTorch's ``quantized_decomposed::embedding_4bit`` kernel (``Int4Embedding``). That kernel
is in ExecuTorch's quantized kernel library: the Python runtime registers it when
``executorch.kernels.quantized`` is imported; the Android library (``executorch-android``) links it
(its build sets ``EXECUTORCH_BUILD_KERNELS_QUANTIZED``).
"""

from __future__ import annotations

import torch

from .schemes import XNNPACK_GROUP_MULTIPLE, table_group_size

INT4_MIN, INT4_MAX = -8, 7
ZERO_GROUP_SCALE = 2.0**-12


def register_quantized_kernels() -> None:
    """Define ``quantized_decomposed::embedding_4bit`` for export and register its ExecuTorch kernel in
    the Python runtime (both come with ExecuTorch's quantized kernel library)."""
    import executorch.exir.passes._quant_patterns_and_replacements  # noqa: F401  (op definitions)
    import executorch.kernels.quantized  # noqa: F401  (the runtime's kernels, and the export-side ops)


def int4_groups(weight: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric 4-bit codes (int8 tensor of -8..7) and fp32 scales, one per ``group_size`` values of a row.

    The scale is the smallest that clips nothing, ``max(-min / 8, max / 7)``: torchao's
    ``SYMMETRIC_NO_CLIPPING_ERR``, which ``quantize_int4`` gives the Linears too. Clipping costs a
    trained model more than the finer steps gain: the demo model (400 reviews, eager) 30.6 dB SQNR with
    this scale, 28.7 / 27.7 dB with the least-squared-error scale searched down to 0.9 / 0.7 of it, and
    torchao's default ``max|w| / 7.5`` clips each group's largest positive value.
    """
    w = weight.detach().to(torch.float32)
    rows, width = w.shape
    grouped = w.reshape(rows, width // group_size, group_size)
    scales = torch.maximum(-grouped.amin(dim=2) / -INT4_MIN, grouped.amax(dim=2) / INT4_MAX)
    scales = torch.clamp(scales, min=ZERO_GROUP_SCALE)
    codes = torch.clamp(torch.round(grouped / scales[..., None]), INT4_MIN, INT4_MAX).to(torch.int8)
    return codes.reshape(rows, width), scales.contiguous()


class Int4Embedding(torch.nn.Module):
    """Drop-in replacement for ``nn.Embedding`` (lookup only) with 4-bit group-wise weights, looked up by
    ``quantized_decomposed::embedding_4bit`` (codes + 8 packed two a byte, the even column high)."""

    def __init__(self, weight: torch.Tensor, group_size: int) -> None:
        super().__init__()
        register_quantized_kernels()
        self.num_embeddings, self.embedding_dim = weight.shape
        if self.embedding_dim % 2:
            raise ValueError(f"a 4-bit table needs an even width, not {self.embedding_dim}")
        self.group_size = table_group_size(self.embedding_dim, group_size)
        codes, scales = int4_groups(weight, self.group_size)
        unsigned = (codes.to(torch.int16) - INT4_MIN).to(torch.uint8)
        self.register_buffer("weight_int4", (unsigned[:, 0::2] * 16 + unsigned[:, 1::2]).contiguous())
        self.register_buffer("scales", scales)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.ops.quantized_decomposed.embedding_4bit.dtype(
            self.weight_int4, self.scales, None, INT4_MIN, INT4_MAX, ids, dtype=torch.float32
        )


class PaddedLinear(torch.nn.Module):
    """``linear`` with its input widened by zero columns to ``width`` (a multiple of the group size)."""

    def __init__(self, linear: torch.nn.Linear, width: int) -> None:
        super().__init__()
        self.pad = width - linear.in_features
        self.linear = torch.nn.Linear(width, linear.out_features, bias=linear.bias is not None)
        with torch.no_grad():
            self.linear.weight.zero_()
            self.linear.weight[:, : linear.in_features] = linear.weight
            if linear.bias is not None:
                self.linear.bias.copy_(linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.nn.functional.pad(x, (0, self.pad)))


def quantize_int4(module: torch.nn.Module, group_size: int, tables: tuple[str, ...] = ("word_embeddings",)) -> dict:
    """Give every ``nn.Linear`` of ``module`` int8-dynamic-activation / int4-weight quantization and the
    named ``nn.Embedding`` tables 4-bit group-wise weights, in place (run before ``torch.export``).

    Returns:
        stats: ``group_size``, ``padded_input_widths`` (``{"312->320": linears}``), ``linears``, ``tables``
        (paths), ``table_group_size``.
    """
    if group_size % XNNPACK_GROUP_MULTIPLE:
        raise ValueError(
            f"XNNPACK takes 4-bit groups of a multiple of {XNNPACK_GROUP_MULTIPLE} inputs, not {group_size}"
        )
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, PerGroup, quantize_
    from torchao.quantization.quant_primitives import MappingType

    register_quantized_kernels()
    padded: dict[str, int] = {}
    replaced, table_groups = [], set()
    seen: set[int] = set()
    for path, child in list(module.named_modules()):
        for name, sub in list(child.named_children()):
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            if type(sub) is torch.nn.Linear and sub.in_features % group_size:
                width = -(-sub.in_features // group_size) * group_size
                setattr(child, name, PaddedLinear(sub, width))
                key = f"{sub.in_features}->{width}"
                padded[key] = padded.get(key, 0) + 1
            elif type(sub) is torch.nn.Embedding and name in tables:
                table = Int4Embedding(sub.weight, group_size)
                setattr(child, name, table)
                replaced.append(f"{path}.{name}" if path else name)
                table_groups.add(table.group_size)
    linears = sum(1 for m in module.modules() if type(m) is torch.nn.Linear)
    quantized: set[int] = set()

    def first_visit(m: torch.nn.Module, fqn: str) -> bool:
        # quantize_ visits a Linear once per path to it; a second pass would quantize its int4 weight again
        if type(m) is not torch.nn.Linear or id(m) in quantized:
            return False
        quantized.add(id(m))
        return True

    # the table's scale rule (``int4_groups``): no clipping
    quantize_(
        module,
        Int8DynamicActivationIntxWeightConfig(
            weight_dtype=getattr(torch, "int4"),
            weight_granularity=PerGroup(group_size),
            weight_mapping_type=MappingType.SYMMETRIC_NO_CLIPPING_ERR,
        ),
        filter_fn=first_visit,
    )
    return {
        "group_size": group_size,
        "linears": linears,
        "padded_input_widths": padded,
        "tables": replaced,
        "table_group_size": min(table_groups) if table_groups else None,
    }
