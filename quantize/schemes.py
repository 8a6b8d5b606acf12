"""Quantization schemes as data: the name reports carry, and the choices both backends read."""

from __future__ import annotations

from dataclasses import dataclass

INT4_KERNELS = ("nbits", "int8")  # how ONNX Runtime computes with the 4-bit weights (--int4-kernel)
XNNPACK_GROUP_MULTIPLE = 32  # XNNPACK's blockwise 4-bit operators take groups of a multiple of 32 inputs


@dataclass(frozen=True)
class Scheme:
    name: str
    description: str
    weight_symmetric: bool
    per_channel: bool
    weight_bits: int = 8
    group_size: int | None = None  # input values per weight scale; None: one scale per output channel


INT8_DYNAMIC_PER_CHANNEL = Scheme(
    name="int8-dynamic-per-channel",
    description="int8 activations quantized at run time, one asymmetric scale per token; symmetric int8 weights, "
    "one scale per output channel",
    weight_symmetric=True,
    per_channel=True,
)


def scheme_name(quant: str, group_size: int | None) -> str:
    """The name reports give the scheme of a ``--quant`` value (int4: with its group size)."""
    if quant == "int8":
        return INT8_DYNAMIC_PER_CHANNEL.name
    if quant == "int4":
        if group_size is None:
            raise ValueError("an int4 scheme needs its group size")
        return int4_blockwise(group_size).name
    return quant


def int4_blockwise(group_size: int) -> Scheme:
    """int8 dynamic activations with symmetric 4-bit weights, one scale per ``group_size`` inputs."""
    return Scheme(
        name=f"int4-blockwise-g{group_size}",
        description=f"int8 activations quantized at run time; symmetric 4-bit weights, one scale per "
        f"{group_size} input values of each output channel (word-embedding table: per "
        f"{group_size} values of each row)",
        weight_symmetric=True,
        per_channel=True,
        weight_bits=4,
        group_size=group_size,
    )


def table_group_size(width: int, group_size: int) -> int:
    """Values per scale in the 4-bit table: ``group_size``, or the largest even divisor of ``width``
    below it for a narrower table (the kernel needs groups that tile each row)."""
    if width % group_size == 0:
        return group_size
    return max(d for d in range(2, min(group_size, width) + 1, 2) if width % d == 0)
