"""What a QDQ model for the HTP holds, read from the file: its precision, which weight MatMuls read 8-bit weights,
and whether every weight (ALBERT's shared layer included) is stored once."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ...core.choices import Quant
from ..base import MatmulCoverage

_WEIGHT_OPS = ("MatMul", "Gemm")


def _model(path: Path) -> Any:
    import onnx

    return onnx.load(str(path), load_external_data=False)


def stored_quant(path: Path) -> Quant:
    """int8: the NPU file's weights are 8-bit (its activations 16 or 8, ``metadata.facts``)."""
    return Quant.INT8


def int4_group_size(path: Path) -> None:
    """None: the NPU file has no 4-bit weights."""
    return None


def coverage(path: Path, quant: Quant) -> MatmulCoverage:
    """Weight MatMul/Gemm nodes reading a dequantized 8-bit initializer, and those reading a float one (a problem)."""
    from onnx import TensorProto

    graph = _model(path).graph
    inits = {i.name: i for i in graph.initializer}
    dequantized = {
        n.output[0]: inits[n.input[0]].data_type
        for n in graph.node
        if n.op_type == "DequantizeLinear" and n.input[0] in inits
    }
    quantized, fp32 = 0, []
    for node in graph.node:
        if node.op_type not in _WEIGHT_OPS or len(node.input) < 2:
            continue
        weight = node.input[1]
        if dequantized.get(weight) in (TensorProto.UINT8, TensorProto.INT8):
            quantized += 1
        elif weight in inits or weight in dequantized:
            fp32.append(node.name or node.op_type)
    problems = (f"{len(fp32)} weight MatMul/Gemm without 8-bit weights ({', '.join(fp32[:4])})",) if fp32 else ()
    return MatmulCoverage(quant, quantized, len(fp32), tuple(fp32[:20]), problems)


def _stored(path: Path) -> list[tuple[str, bytes]]:
    from onnx import numpy_helper

    return [(t.name, numpy_helper.to_array(t).tobytes()) for t in _model(path).graph.initializer]


def blobs(path: Path) -> tuple[list[bytes], int]:
    """The stored weight matrices and tables (what a MatMul, Gemm or Gather reads through a DequantizeLinear, or
    directly); biases, scales and zero points are the file's other bytes. No delegate graphs."""
    from onnx import numpy_helper

    graph = _model(path).graph
    inits = {i.name: i for i in graph.initializer}
    source = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits}
    weights = set()
    for node in graph.node:
        slot = 0 if node.op_type == "Gather" else 1 if node.op_type in _WEIGHT_OPS else None
        if slot is not None and len(node.input) > slot:
            name = source.get(node.input[slot], node.input[slot])
            if name in inits:
                weights.add(name)
    return [numpy_helper.to_array(inits[n]).tobytes() for n in sorted(weights)], 0


def memory_sharing(path: Path) -> tuple[bool, str]:
    """Whether each weight is stored once (ALBERT's shared layer read by every unrolled layer from one
    initializer, so QNN's context binary holds it once too), from the file's initializers."""
    seen: dict[str, str] = {}
    copies = []
    for name, data in _stored(path):
        if len(data) <= 4096:  # scales and zero points of equal value are not weights
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest in seen:
            copies.append(f"{name} = {seen[digest]}")
        seen.setdefault(digest, name)
    if copies:
        return False, (
            f"{len(copies)} weight(s) stored twice in the file, so twice in the HTP context QNN compiles from it "
            f"({'; '.join(copies[:3])})"
        )
    return True, (
        f"each of the {len(seen)} weight tensors over 4 KiB stored once in the file, so once in the HTP context QNN "
        "compiles from it (read from the file: the device's memory is not measured here)"
    )
