"""What only the .onnx's (and the .ort's) export reads: how ONNX Runtime computes with 4-bit weights."""

from __future__ import annotations

from dataclasses import dataclass

from quantize.schemes import INT4_KERNELS

from ...core.errors import BadInputError
from ..flags import option


@dataclass(frozen=True)
class OnnxOptions:
    """The .onnx's own export options (each field a flag of ``export``; the .ort is converted from one).

    Args:
        int4_kernel: with int4 (``--int4-kernel``): ``nbits`` runs ``MatMulNBits`` (4-bit weights in RAM
            too); ``int8`` widens the 4-bit weights to int8 when the model loads (int8's speed and RAM, plus
            int8 rounding on top of int4's).
    """

    int4_kernel: str = option(
        INT4_KERNELS[0],
        "with int4 in the .onnx, how ONNX Runtime computes: nbits (MatMulNBits, 4-bit weights in RAM) or int8 "
        "(4-bit weights widened to int8 when the model loads: int8's speed and RAM, a little less accurate)",
        choices=INT4_KERNELS,
    )

    def __post_init__(self) -> None:
        if self.int4_kernel not in INT4_KERNELS:
            raise BadInputError(f"--int4-kernel {self.int4_kernel} is not one of {', '.join(INT4_KERNELS)}")
