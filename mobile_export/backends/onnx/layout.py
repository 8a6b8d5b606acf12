"""Where an .onnx keeps its bytes: weights page-aligned in model.onnx.data, the Loop's weights hoisted."""

from __future__ import annotations

import os
from pathlib import Path

DATA_SUFFIX = ".data"  # model.onnx -> model.onnx.data
PAGE = 4096  # external tensors start on page boundaries, so ONNX Runtime can map them


def hoist_loop_weights(model) -> None:
    """Move the Loop body's weights into the main graph (the body reads them from the outer scope).

    ONNX Runtime prepacks a weight for its kernel and then releases the stored copy, but only for
    initializers of the main graph: left in the body, the shared layer's int8 weights stayed
    resident beside their packed copy (albert-base: +7.0 MiB mapped, +1.9 MiB private)."""
    taken = {i.name for i in model.graph.initializer} | {n for node in model.graph.node for n in node.output}
    for node in model.graph.node:
        if node.op_type != "Loop":
            continue
        body = next(a.g for a in node.attribute if a.name == "body")
        moving = [t for t in body.initializer if t.name not in taken]
        if len(moving) != len(body.initializer):
            continue  # a name clash: leave this body as it is (correct, only less lean)
        model.graph.initializer.extend(moving)
        del body.initializer[:]


def externalize(path: Path, default_opset: int) -> tuple[int, int]:
    """Lay the model out for loading (``hoist_loop_weights``, ``share_transposed_tables``: returns the
    bytes the latter saved, and the model's opset), then move every tensor of ``path`` (subgraphs
    included) of 1 KiB or more into ``path`` + ``.data``, page-aligned: ONNX Runtime then maps the
    weights instead of holding the parsed protobuf and a copy of each (albert-base int8: ~10 MiB less RAM)."""
    import onnx
    from onnx.external_data_helper import set_external_data

    from quantize.onnx_dynamic import share_transposed_tables
    from quantize.onnx_graph import graphs

    model = onnx.load(str(path))
    hoist_loop_weights(model)
    shared = share_transposed_tables(model)
    data_name = path.name + DATA_SUFFIX
    tmp = path.with_name(data_name + ".tmp")
    offset = 0
    with open(tmp, "wb") as f:
        for graph, _ in graphs(model.graph):
            for t in graph.initializer:
                if t.HasField("raw_data") and len(t.raw_data) >= 1024:
                    pad = (-offset) % PAGE
                    f.write(b"\0" * pad)
                    offset += pad
                    f.write(t.raw_data)
                    set_external_data(t, data_name, offset=offset, length=len(t.raw_data))
                    offset += len(t.raw_data)
                    t.ClearField("raw_data")
                    t.data_location = onnx.TensorProto.EXTERNAL
    os.replace(tmp, path.with_name(data_name))
    onnx.save(model, str(path))
    return shared, next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default_opset)


def files(path: Path) -> list[Path]:
    """The artifact's files: the .onnx and, when it has one, its external data beside it."""
    data = path.with_name(path.name + DATA_SUFFIX)
    return [path, data] if data.is_file() else [path]


def blobs(path: Path) -> tuple[list[bytes], int]:
    """Initializers and tensor attributes (subgraphs included) of an .onnx, as the bytes they store
    (4-bit tensors packed two values per byte, as in the file)."""
    import onnx

    from quantize.onnx_graph import graphs

    model = onnx.load(str(path))
    found = []
    for graph, _ in graphs(model.graph):
        # shape operands (a few int64s) are graph plumbing, not weights
        found += [
            stored_bytes(t)
            for t in graph.initializer
            if not (t.data_type == onnx.TensorProto.INT64 and len(t.dims) == 1 and t.dims[0] <= 8)
        ]
        found += [
            stored_bytes(a.t) for node in graph.node for a in node.attribute if a.type == onnx.AttributeProto.TENSOR
        ]
    return [b for b in found if len(b) > 16], 0


def stored_bytes(t) -> bytes:
    import math

    from onnx import numpy_helper

    if t.HasField("raw_data"):
        data = t.raw_data
        return data[: tensor_bytes(t.data_type, math.prod(t.dims))]
    return numpy_helper.to_array(t).tobytes()


def tensor_bytes(data_type: int, elements: int) -> int:
    """Bytes that ``elements`` values of an ONNX tensor type occupy: 4-bit types pack two per byte;
    otherwise onnx's own table (8 bytes for a type it does not know)."""
    import onnx

    if data_type in {getattr(onnx.TensorProto, n, -1) for n in ("INT4", "UINT4", "FLOAT4E2M1")}:
        return (elements + 1) // 2
    try:
        return elements * onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize
    except (KeyError, ValueError, TypeError):
        return elements * 8
