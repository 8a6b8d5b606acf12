"""What a .tflite holds, read from its flatbuffer: the precision of its weights, which weight matmuls read integer
weights, the stored weight buffers, and whether each is stored once (ALBERT's shared layer read by every layer)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ...core.choices import Quant
from ..base import MatmulCoverage
from . import flatbuffer

_INT8, _INT4 = "INT8", "INT4"
_MATMULS = ("FULLY_CONNECTED", "BATCH_MATMUL")
_TABLES = {"GATHER": 0, "EMBEDDING_LOOKUP": 1}  # the table's input slot
_WEIGHT_MIN_BYTES = 1  # the slot says what is a weight (a matmul's second input, a lookup's table), whatever its size


def _model(path: Path) -> Any:
    """The file's model, parsed once for the several questions ``size`` asks of one file (read only here)."""
    stat = Path(path).stat()
    return _parsed(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=1)
def _parsed(path: str, mtime_ns: int, size: int) -> Any:
    return flatbuffer.read(Path(path).read_bytes(), Path(path).name)


def _names() -> tuple[dict[int, str], dict[int, str]]:
    from ai_edge_litert import schema_py_generated as schema

    def table(cls: type) -> dict[int, str]:
        return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}

    return table(schema.BuiltinOperator), table(schema.TensorType)


def _weights(model: Any) -> Iterator[tuple[str, Any, Any, Any]]:
    """(operator name, operator, subgraph, weight tensor) of every constant a matmul or table lookup reads."""
    ops, _ = _names()
    for subgraph in model.subgraphs or []:
        for op in subgraph.operators or []:
            code = model.operatorCodes[op.opcodeIndex]
            name = ops.get(max(code.builtinCode, code.deprecatedBuiltinCode), "")
            slot = 1 if name in _MATMULS else _TABLES.get(name)
            if slot is None or slot >= len(op.inputs) or op.inputs[slot] < 0:
                continue
            tensor = subgraph.tensors[op.inputs[slot]]
            data = model.buffers[tensor.buffer].data
            if data is not None and len(data) >= _WEIGHT_MIN_BYTES:
                yield name, op, subgraph, tensor


def _type(tensor: Any) -> str:
    return _names()[1].get(tensor.type, "?")


def stored_quant(path: Path) -> Quant:
    """int4 when a weight is stored at 4 bits, int8 when one is at 8, fp32 otherwise."""
    kinds = {_type(t) for *_, t in _weights(_model(path))}
    return Quant.INT4 if _INT4 in kinds else Quant.INT8 if _INT8 in kinds else Quant.FP32


def int4_group_size(path: Path) -> None:
    """None: the .tflite's 4-bit codes are never padded to whole groups (blocks only where a width divides, one
    scale per row elsewhere; the scales live in the tensors' parameters), which the size breakdown reads as one
    group per row. The block the export used is in its facts (``stats.litert.weights``)."""
    return None


def coverage(path: Path, quant: Quant) -> MatmulCoverage:
    """Weight matmuls reading integer weights, those left fp32 on purpose (a repair's, ``keep.KEPT_SCOPE``), and
    the other float ones (a problem in a quantized export)."""
    from .keep import KEPT_SCOPE

    quantized, fp32, kept = 0, [], []
    for name, op, subgraph, tensor in _weights(_model(path)):
        if name not in _MATMULS:
            continue
        if _type(tensor) in (_INT8, _INT4):
            quantized += 1
        elif _text(subgraph.tensors[op.outputs[0]].name).startswith(KEPT_SCOPE + "/"):
            kept.append(_text(tensor.name))
        else:
            fp32.append(_text(tensor.name))
    problems: tuple[str, ...] = ()
    if quant is not Quant.FP32 and fp32:
        problems = (f"{len(fp32)} weight matmuls without integer weights ({', '.join(fp32[:4])})",)
    return MatmulCoverage(quant, quantized, len(fp32), tuple(fp32[:20]), problems, len(kept), tuple(sorted(set(kept))))


def _text(name: Any) -> str:
    return name.decode() if isinstance(name, bytes) else str(name)


def blobs(path: Path) -> tuple[list[bytes], int]:
    """The stored weight buffers (each once, whatever reads it); no delegate graphs (XNNPACK's are built at load)."""
    model = _model(path)
    seen = sorted({t.buffer for *_, t in _weights(model)})
    return [np.asarray(model.buffers[b].data, np.uint8).tobytes() for b in seen], 0


def memory_sharing(path: Path) -> tuple[bool, str]:
    """Whether each weight is stored once in the file (ALBERT's shared layer read by every layer from one buffer),
    from its buffers; a weight the converter stored again with other values (a LayerNorm's scale folded into the
    next matmul) is a second weight, which the verdict counts."""
    model = _model(path)
    readers: dict[int, int] = {}
    for *_, tensor in _weights(model):
        readers[tensor.buffer] = readers.get(tensor.buffer, 0) + 1
    digests: dict[str, int] = {}
    copies = 0
    for buffer in readers:
        digest = hashlib.sha256(np.asarray(model.buffers[buffer].data, np.uint8).tobytes()).hexdigest()
        copies += digest in digests
        digests.setdefault(digest, buffer)
    if copies:
        return False, f"{copies} weight buffer(s) stored twice with equal bytes"
    shared = sum(1 for n in readers.values() if n > 1)
    return True, (
        f"each of the {len(readers)} weight buffers stored once ({shared} read by several operators: "
        "the interpreter maps them from the file)"
    )
