"""ONNX (opset 18) for ONNX Runtime: export with the torch exporter, int8 via ORT dynamic quantization."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from ..config import Quant
from ..reference import INPUT_NAMES

OPSET = 18


def RUNTIME_VERSION() -> str:
    import onnxruntime

    return onnxruntime.__version__


def export(wrapper: torch.nn.Module, example: tuple[torch.Tensor, ...], dynamic_shapes: dict,
           quant: Quant, dest: Path, progress) -> dict:
    """Export ``wrapper`` to ``dest`` (.onnx, self-contained); returns stats for the report."""
    import onnx

    from quantize.onnx_dynamic import prepare_file, quantize_file

    fp32_path = dest.with_name(dest.name + ".fp32.tmp")
    try:
        with progress.step("onnx: torch.onnx.export (dynamo)"):
            prog = torch.onnx.export(
                wrapper, example, dynamo=True, dynamic_shapes=dynamic_shapes, opset_version=OPSET,
                input_names=list(INPUT_NAMES), output_names=list(wrapper.output_names),
                external_data=False, optimize=True, verbose=False,
            )
            prog.save(str(fp32_path), external_data=False)
        if quant is Quant.INT8:
            with progress.step("onnx: int8 dynamic quantization (ONNX Runtime)"):
                q = quantize_file(fp32_path, dest)
        else:
            q = prepare_file(fp32_path, dest)
        stats = {"weight_matmuls": q.weight_matmuls, "quantized_matmuls": q.quantized_matmuls,
                 "activation_matmuls": q.activation_matmuls, "deduplicated": q.deduplicated_initializers}
    finally:
        if fp32_path.exists():
            os.unlink(fp32_path)
    onnx.checker.check_model(str(dest), full_check=True)
    stats["opset"] = OPSET
    return stats


class Runner:
    """An .onnx loaded in an ONNX Runtime InferenceSession on the CPU."""

    def __init__(self, path: Path) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.session.run(None, {n: np.ascontiguousarray(feeds[n], dtype=np.int64) for n in self.input_names})
