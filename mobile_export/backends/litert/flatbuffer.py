"""A .tflite read and written as LiteRT's schema objects (``ai_edge_litert.schema_py_generated``): its weight buffers
kept inside the flatbuffer (the quantizer writes large ones after it, which MediaPipe's metadata writer drops), equal
buffers stored once, and the named metadata entries an app's interpreter hands out."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ...core.errors import ArtifactLoadError

IDENTIFIER = b"TFL3"  # the flatbuffer file identifier of every .tflite (bytes 4..8)
OUR_PREFIX = "mobile_export"  # tensor names we give (``keep.KEPT_SCOPE``, ``unfold``), kept
ALIGN = 16  # LiteRT maps weights in place where a buffer starts on this boundary (as its converter writes them)


def _identified(data: bytes | bytearray, shown: str) -> None:
    """ArtifactLoadError unless ``data`` carries a .tflite's flatbuffer identifier."""
    if len(data) < 8 or bytes(data[4:8]) != IDENTIFIER:
        raise ArtifactLoadError(
            f"{shown} is not a LiteRT model (no TFL3 flatbuffer identifier); pass a .tflite written by "
            "mobile-export export"
        )


def _unreadable(shown: str, exc: Exception) -> ArtifactLoadError:
    return ArtifactLoadError(f"{shown} is not a readable LiteRT model ({type(exc).__name__}); export it again")


def read(data: bytes | bytearray, shown: str) -> Any:
    """The model in ``data`` as a mutable ``ModelT``, its buffers stored after the flatbuffer read back in;
    ArtifactLoadError when the bytes are not a LiteRT model."""
    from ai_edge_litert.tools import flatbuffer_utils

    _identified(data, shown)
    try:
        model = flatbuffer_utils.read_model_from_bytearray(bytearray(data))
    except Exception as exc:  # a truncated or crafted flatbuffer fails anywhere in the generated reader
        raise _unreadable(shown, exc) from None
    for buffer in model.buffers or []:
        if buffer.data is not None and not isinstance(buffer.data, np.ndarray):
            buffer.data = np.frombuffer(bytes(buffer.data), np.uint8)  # packed as one vector, not byte by byte
    return model


class _AlignedBuffer:
    """A buffer packed as the converter packs them: its bytes one vector starting on an ``ALIGN``-byte boundary
    (the generated ``BufferT.Pack`` aligns to the element size, 1)."""

    def __init__(self, data: np.ndarray | None) -> None:
        self.data = data

    def Pack(self, builder: Any) -> int:  # noqa: N802 (the generated object API's name)
        from ai_edge_litert import schema_py_generated as schema

        offset = None
        if self.data is not None and len(self.data):
            raw = np.ascontiguousarray(self.data, np.uint8).tobytes()
            builder.StartVector(1, len(raw), ALIGN)
            builder.head -= len(raw)
            builder.Bytes[builder.head : builder.head + len(raw)] = raw
            offset = builder.EndVector(len(raw))
        schema.BufferStart(builder)
        if offset is not None:
            schema.BufferAddData(builder, offset)
        return schema.BufferEnd(builder)


def write(model: Any) -> bytes:
    """The flatbuffer of ``model`` with every buffer inside it, each starting on an ``ALIGN``-byte boundary."""
    import flatbuffers

    originals = model.buffers or []
    model.buffers = [_AlignedBuffer(b.data) for b in originals]
    try:
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=IDENTIFIER)
        return bytes(builder.Output())
    finally:
        model.buffers = originals


def dedupe(model: Any) -> int:
    """Point every tensor at the first of equal buffers (a weight the converter wrote twice); returns the bytes
    no longer stored."""
    first: dict[str, int] = {}
    moved: dict[int, int] = {}
    saved = 0
    for k, buffer in enumerate(model.buffers or []):
        if buffer.data is None or len(buffer.data) < 1024:  # small vectors: not weights worth a lookup
            continue
        digest = hashlib.sha256(np.asarray(buffer.data, np.uint8).tobytes()).hexdigest()
        if digest in first:
            moved[k] = first[digest]
            saved += len(buffer.data)
            buffer.data = None
        else:
            first[digest] = k
    for subgraph in model.subgraphs or []:
        for tensor in subgraph.tensors or []:
            tensor.buffer = moved.get(tensor.buffer, tensor.buffer)
    return saved


def nonzero_scales(model: Any) -> int:
    """Give every quantization scale below float32's smallest normal number (a weight row of zeros or of
    denormals: litert-quantizer writes a scale of 0 or a denormal, which XNNPACK refuses for 4-bit weights) that
    smallest normal number, in place: what the row's codes mean stays within 1e-37 of 0. Returns how many scales
    were changed."""
    changed = 0
    for subgraph in model.subgraphs or []:
        for tensor in subgraph.tensors or []:
            q = tensor.quantization
            blocks = getattr(q, "details", None) if q is not None else None
            if blocks is not None and hasattr(blocks, "scales"):  # 4-bit blocks: the scales are a tensor of their own
                changed += _raise_tiny(model, subgraph.tensors[blocks.scales])
            if q is None or q.scale is None or not len(q.scale):
                continue
            scale = np.asarray(q.scale, np.float32)
            tiny = np.finfo(np.float32).tiny
            zero = np.abs(scale) < tiny
            if zero.any():
                changed += int(zero.sum())
                q.scale = np.where(zero, tiny, scale).tolist()
    return changed


def _raise_tiny(model: Any, scales: Any) -> int:
    """A block-scales tensor's (fp16 or fp32) values below its type's smallest normal number raised to it."""
    buffer = model.buffers[scales.buffer]
    if buffer.data is None or scales.type not in (0, 1):  # FLOAT32, FLOAT16
        return 0
    dtype = np.float32 if scales.type == 0 else np.float16
    values = np.frombuffer(np.asarray(buffer.data, np.uint8).tobytes(), dtype).copy()
    tiny = np.finfo(dtype).tiny
    low = np.abs(values) < tiny
    if low.any():
        values[low] = tiny
        buffer.data = np.frombuffer(values.tobytes(), np.uint8)
    return int(low.sum())


def short_names(model: Any) -> int:
    """Name every tensor but the graphs' inputs and outputs by its index, in place; returns the bytes saved. The
    converter names each after the fused module paths it came from (hundreds of bytes each: ~14% of the demo's
    file); nothing reads them once quantized, and MediaPipe finds the inputs by their names, which stay."""
    saved = 0
    for subgraph in model.subgraphs or []:
        keep = {*(subgraph.inputs or []), *(subgraph.outputs or [])}
        for k, tensor in enumerate(subgraph.tensors or []):
            name = tensor.name.decode() if isinstance(tensor.name, bytes) else str(tensor.name or "")
            if k in keep or not name or name.startswith(OUR_PREFIX):  # ours: a repair's kept matmuls
                continue
            short = f"t{k}"
            saved += len(name) - len(short)
            tensor.name = short
    return saved


def entries(model: Any) -> dict[str, bytes]:
    """The model's named metadata entries (name -> bytes)."""
    found = {}
    for entry in model.metadata or []:
        name = entry.name.decode() if isinstance(entry.name, bytes) else str(entry.name)
        data = model.buffers[entry.buffer].data
        found[name] = b"" if data is None else np.asarray(data, np.uint8).tobytes()
    return found


def stored_entries(data: bytes | bytearray, shown: str) -> dict[str, bytes]:
    """The named metadata entries of the .tflite in ``data``, read in place by the generated accessors (no copy of
    its weights, unlike ``read``); ArtifactLoadError when the bytes are not a LiteRT model."""
    from ai_edge_litert import schema_py_generated as schema

    _identified(data, shown)
    try:
        model = schema.Model.GetRootAs(data, 0)
        found = {}
        for k in range(model.MetadataLength()):
            entry = model.Metadata(k)
            buffer = model.Buffers(entry.Buffer())
            found[(entry.Name() or b"").decode()] = buffer.DataAsNumpy().tobytes() if buffer.DataLength() else b""
        return found
    except Exception as exc:  # a truncated or crafted flatbuffer fails anywhere in the generated reader
        raise _unreadable(shown, exc) from None


def add_entry(model: Any, name: str, data: bytes) -> None:
    """Add the metadata entry ``name`` holding ``data`` (a new buffer); ValueError when it is there already."""
    from ai_edge_litert import schema_py_generated as schema

    if name in entries(model):
        raise ValueError(f"the model already has metadata {name}")
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(data, np.uint8)
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name, entry.buffer = name, len(model.buffers) - 1
    model.metadata = [*(model.metadata or []), entry]
