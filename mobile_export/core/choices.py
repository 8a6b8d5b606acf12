"""The choices an export is made of: precisions, repairs, int4 group sizes (enums and their values); the formats
are the registry's (``backends.Backend``)."""

from __future__ import annotations

from enum import Enum


class Repair(str, Enum):
    """What ``export`` does when an int8 artifact fails its parity gate (``--repair``)."""

    AUTO = "auto"  # every repair below, in order of cost, until the gate passes
    OFF = "off"  # refuse, as the gate decides
    SMOOTH = "smooth"  # rescalings that leave the fp32 function unchanged: folds, then each Linear's input scale
    MIXED = "mixed"  # the fewest Linears kept in fp32 that let the rest pass (emulated, then the real gate)
    RANGES = "ranges"  # the NPU file: wider ranges for the activations its diagnosis found clipped

    def __str__(self) -> str:
        return self.value


class Quant(str, Enum):
    """Weight/activation precision of an artifact."""

    INT8 = "int8"  # dynamic int8 activations, symmetric per-channel int8 weights
    FP32 = "fp32"
    INT4 = "int4"  # dynamic int8 activations, symmetric group-wise 4-bit weights (.pte and .onnx)

    def __str__(self) -> str:
        return self.value


# fill-mask: candidates per [MASK] (the --head topk default, Predictor.fill_mask, `run --top-k`).
DEFAULT_TOP_K = 5
# --pooling (heads.PoolingHead), sentence-transformers' names: the first token, the mean / max / mean over the square
# root of the count over real tokens, the mean weighted by position (1, 2, ...), the last real token
POOLINGS = ("cls", "mean", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")

# int4 weights are quantized in groups of this many input values (one scale per group); a width that
# is not a multiple is padded with zeros to whole groups (ONNX Runtime's MatMulNBits does that; the .pte
# export widens the Linear, quantize.xnnpack_int4.PaddedLinear). A format may take only multiples of some
# of them (its registry entry's ``int4_group_multiple``).
INT4_GROUP_SIZES = (16, 32, 64, 128, 256)
DEFAULT_INT4_GROUP_SIZE = 32
WIDE_INT4_GROUP_SIZE = 64
WIDE_HIDDEN_SIZE = 512


def int4_group_size_for(hidden_size: int, chosen: int | None = None) -> int:
    """The int4 group size of a model: ``chosen`` (``--group-size``) if given, else 32 for narrow models
    (small files anyway; the finer scales keep more accuracy) and 64 from hidden size 512 up, where a scale
    per 32 values costs 0.125 B a weight: albert-base int4 .onnx 7.57 MB with 32, 6.84 MB with 64."""
    if chosen is not None:
        return chosen
    return WIDE_INT4_GROUP_SIZE if hidden_size >= WIDE_HIDDEN_SIZE else DEFAULT_INT4_GROUP_SIZE
