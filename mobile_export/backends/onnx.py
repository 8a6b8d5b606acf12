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


def blobs(path: Path) -> tuple[list[bytes], int]:
    """Initializers and tensor attributes (subgraphs included) of an .onnx, as bytes."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    found = []
    stack = [model.graph]
    while stack:
        graph = stack.pop()
        found += [numpy_helper.to_array(t).tobytes() for t in graph.initializer]
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    found.append(numpy_helper.to_array(attr.t).tobytes())
                stack.extend(attr.graphs)
                if attr.type == onnx.AttributeProto.GRAPH:
                    stack.append(attr.g)
    return [b for b in found if len(b) > 16], 0


INT8_TYPES = (3, 2)  # TensorProto.INT8, UINT8 (the ORT format uses the same codes)


def stores_int8(path: Path) -> bool:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return any(t.data_type in INT8_TYPES for t in model.graph.initializer)


def usage(stats: dict) -> dict:
    """How an app loads and calls this export's .onnx / .ort (recorded in manifest.json)."""
    return {"load": "from a file path (Android: OrtEnvironment.createSession(path, options)), not a Java byte[]",
            "calling_convention": {"name": "single-graph/1",
                                   "inputs": list(INPUT_NAMES), "loop": "outputs = run(inputs)"}}


def memory_sharing(path: Path) -> tuple[bool, str]:
    return True, ("shared in RAM: ONNX Runtime prepacks each stored weight once per session, so one stored copy "
                  "of the shared layer is one packed copy")


class Runner:
    """An .onnx loaded in an ONNX Runtime InferenceSession on the CPU."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        if threads:
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.session.run(None, {n: np.ascontiguousarray(feeds[n], dtype=np.int64) for n in self.input_names})
