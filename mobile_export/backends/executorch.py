"""ExecuTorch .pte with the XNNPACK delegate: export (PT2E int8 or fp32) and run in the ExecuTorch runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..config import Quant


def RUNTIME_VERSION() -> str:
    from importlib.metadata import version

    return version("executorch")


class CubicGelu(torch.nn.Module):
    """gelu_new (tanh approximation) with ``x * x * x`` instead of ``pow(x, 3)``: the same function,
    but XNNPACK takes multiplications, while ``pow`` stays outside the delegate as a slow portable
    kernel and splits every layer into more partitions (measured: 2-3x the latency of the demo model)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * (x * x * x))))


def xnnpack_friendly(wrapper: torch.nn.Module) -> tuple[torch.nn.Module, int]:
    """A copy of ``wrapper`` with ops XNNPACK cannot take rewritten; returns (copy, replacements)."""
    import copy

    from transformers.activations import NewGELUActivation

    wrapper = copy.deepcopy(wrapper)
    replaced = 0
    for module in list(wrapper.modules()):
        for name, child in list(module.named_children()):
            if type(child) is NewGELUActivation:
                setattr(module, name, CubicGelu())
                replaced += 1
    return wrapper, replaced


def export(wrapper: torch.nn.Module, example: tuple[torch.Tensor, ...], dynamic_shapes: dict,
           quant: Quant, dest: Path, progress) -> dict:
    """Export ``wrapper`` to ``dest`` (.pte), lowered to XNNPACK; returns stats for the report."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.utils.configs import (
        get_xnnpack_edge_compile_config,
        get_xnnpack_executorch_backend_config,
    )
    from executorch.exir import to_edge_transform_and_lower

    wrapper, rewritten = xnnpack_friendly(wrapper)
    with progress.step("executorch: torch.export"):
        ep = torch.export.export(wrapper, example, dynamic_shapes=dynamic_shapes, strict=False)
    if quant is Quant.INT8:
        from quantize.pt2e import quantize_graph

        with progress.step("executorch: int8 PT2E quantization"):
            gm = quantize_graph(ep.module(), [example])
            ep = torch.export.export(gm, example, dynamic_shapes=dynamic_shapes, strict=False)
    with progress.step("executorch: lowering to XNNPACK (the slow part)"):
        edge = to_edge_transform_and_lower(
            ep, partitioner=[XnnpackPartitioner()], compile_config=get_xnnpack_edge_compile_config()
        )
        program = edge.to_executorch(get_xnnpack_executorch_backend_config())
    with progress.step("executorch: writing .pte"):
        with open(dest, "wb") as f:
            program.write_to_file(f)
    graph = program.exported_program().graph_module.graph
    delegates = sum(1 for n in graph.nodes if n.op == "call_function" and "call_delegate" in str(n.target))
    outside = sorted({str(n.target) for n in graph.nodes if n.op == "call_function"
                      and str(n.target).startswith("aten.")})
    return {"xnnpack_partitions": delegates, "ops_outside_delegate": outside, "gelu_rewritten": rewritten}


class Runner:
    """A .pte loaded by the ExecuTorch runtime with full internal-consistency verification."""

    def __init__(self, path: Path) -> None:
        from executorch.runtime import Runtime, Verification

        runtime = Runtime.get()
        self.program = runtime.load_program(str(path), verification=Verification.InternalConsistency)
        self.method = self.program.load_method("forward")

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        from ..reference import INPUT_NAMES

        inputs = [torch.from_numpy(np.ascontiguousarray(feeds[n], dtype=np.int64)) for n in INPUT_NAMES]
        return [o.detach().numpy().copy() for o in self.method.execute(inputs)]
