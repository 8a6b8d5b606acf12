"""int8 schemes, one module per backend side.

- ``quantize.pt2e``: PyTorch 2 export quantization for ExecuTorch/XNNPACK.
- ``quantize.onnx_dynamic``: ONNX Runtime dynamic quantization, after de-duplicating shared weights.

Both implement the same scheme, ``INT8_DYNAMIC_PER_CHANNEL``: activations quantized to int8 at run
time (per tensor, asymmetric), weights of every Linear/MatMul symmetric int8 per output channel.
"""

from .schemes import INT8_DYNAMIC_PER_CHANNEL, Scheme

__all__ = ["INT8_DYNAMIC_PER_CHANNEL", "Scheme"]
