"""Whether a user's .tflite is one this tool wrote, before LiteRT's interpreter reads it: the flatbuffer identifier,
a model Python's reader decodes, indices that stay inside it, the interface and fixed length the export records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.errors import ArtifactLoadError
from . import flatbuffer
from .metadata import INPUTS, META_KEY, facts, tensor_name

_INT32 = 2  # LiteRT's TensorType.INT32


def check(path: Path, shown: str) -> None:
    """Raise ArtifactLoadError unless ``path`` is a sound .tflite export: readable, indices in range, the inputs
    ``ids``, ``mask``, ``segment_ids`` (int32, [1, n]) and the length its metadata records."""
    model = flatbuffer.read(Path(path).read_bytes(), shown)
    if len(model.subgraphs or []) != 1:
        raise ArtifactLoadError(
            f"{shown} has {len(model.subgraphs or [])} subgraphs, an export has one; pass a .tflite written by "
            "mobile-export export"
        )
    _check_indices(model, shown)
    recorded = facts(flatbuffer.entries(model))
    length = recorded.get("sequence_length")
    if not isinstance(length, int) or length < 2:
        raise ArtifactLoadError(
            f"{shown} records no fixed sequence length in its {META_KEY} metadata (it is not a .tflite of "
            "mobile-export); export it again with --backend litert"
        )
    graph = model.subgraphs[0]
    found = {_name(graph.tensors[i]): graph.tensors[i] for i in graph.inputs}
    wanted = {tensor_name(n) for n in INPUTS}
    if set(found) != wanted:
        raise ArtifactLoadError(
            f"{shown} takes {', '.join(sorted(found)) or 'no inputs'}, not an export's {', '.join(INPUTS)}; pass a "
            ".tflite written by mobile-export export"
        )
    for name, tensor in found.items():
        if tensor.type != _INT32 or list(tensor.shape) != [1, length]:
            raise ArtifactLoadError(
                f"{shown}: input {name} is not int32 [1, {length}] as its metadata records; export it again"
            )


def _name(tensor: Any) -> str:
    return tensor.name.decode() if isinstance(tensor.name, bytes) else str(tensor.name)


def _check_indices(model: Any, shown: str) -> None:
    """Every tensor's buffer, every operator's code and tensors inside the model (a tampered index would make the
    interpreter read outside it)."""
    buffers, codes = len(model.buffers or []), len(model.operatorCodes or [])
    graph = model.subgraphs[0]
    tensors = len(graph.tensors or [])
    bad = None
    for tensor in graph.tensors or []:
        if not 0 <= tensor.buffer < buffers:
            bad = f"tensor {_name(tensor)} names buffer {tensor.buffer} of {buffers}"
    for op in graph.operators or []:
        if not 0 <= op.opcodeIndex < codes:
            bad = f"an operator names code {op.opcodeIndex} of {codes}"
        for i in [*(op.inputs or []), *(op.outputs or [])]:
            if not -1 <= i < tensors:
                bad = f"an operator names tensor {i} of {tensors}"
    for i in [*(graph.inputs or []), *(graph.outputs or [])]:
        if not 0 <= i < tensors:
            bad = f"the graph names tensor {i} of {tensors}"
    for entry in model.metadata or []:
        if not 0 <= entry.buffer < buffers:
            bad = f"a metadata entry names buffer {entry.buffer} of {buffers}"
    if bad:
        raise ArtifactLoadError(f"{shown} is a damaged LiteRT model ({bad}); export it again")
