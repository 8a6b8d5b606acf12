"""Quantization schemes, one module per backend side.

- ``quantize.pt2e``: PyTorch 2 export quantization for ExecuTorch/XNNPACK.
- ``quantize.onnx_dynamic``: the ONNX graph prepared (shared weights de-duplicated) and quantized to int8.
- ``quantize.onnx_per_token``: int8 MatMuls for ONNX Runtime with one activation scale per token.
- ``quantize.onnx_nbits``: int4 block-wise weights for ONNX Runtime (``MatMulNBits``, ``GatherBlockQuantized``).
- ``quantize.xnnpack_int4``: int4 group-wise weights for ExecuTorch/XNNPACK (torchao 8da4w, 4-bit table).
- ``quantize.embedding``: the int8 per-row word-embedding table both int8 sides use.

The int8 sides implement the same scheme, ``INT8_DYNAMIC_PER_CHANNEL``: activations quantized to int8
at run time (per token, asymmetric), weights of every Linear/MatMul symmetric int8 per output channel.
``schemes.int4_blockwise(group_size)`` is the int4 scheme both sides implement.
"""

from .schemes import INT8_DYNAMIC_PER_CHANNEL, Scheme, int4_blockwise

__all__ = ["INT8_DYNAMIC_PER_CHANNEL", "Scheme", "int4_blockwise"]
