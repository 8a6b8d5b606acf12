"""Whether a user's .onnx is a sound export, checked before ONNX Runtime runs it."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import ArtifactLoadError
from ...core.signature import INPUT_NAMES, INTEGER_OUTPUTS, is_signature, not_an_export
from .layout import tensor_bytes

KNOWN_DOMAINS = ("", "ai.onnx", "com.microsoft")  # ONNX and ONNX Runtime's own contrib ops


def check(path: Path, shown: str) -> None:
    """What the .onnx must be before ONNX Runtime sees it: a parseable ModelProto with a graph, only
    standard or ONNX Runtime operator domains, every tensor's bytes matching its declared shape,
    external data only in files inside the artifact's folder and within their size, and the inputs and
    outputs of an export."""
    import onnx

    from quantize.onnx_graph import graphs

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError, onnx's own errors on nonsense
        raise ArtifactLoadError(
            f"{shown} is not an ONNX model (its bytes do not parse: {type(exc).__name__}); "
            "pass a .onnx written by mobile-export export"
        ) from None
    if model.ir_version <= 0 or not model.graph.node:
        raise ArtifactLoadError(
            f"{shown} is not an ONNX model (no IR version or no graph); pass a .onnx written by mobile-export export"
        )
    folder = path.parent.resolve()
    for graph, _ in graphs(model.graph):
        for node in graph.node:
            if node.domain not in KNOWN_DOMAINS:
                raise ArtifactLoadError(
                    f"{shown} uses operator {node.op_type} of the custom domain '{node.domain}', "
                    "which needs a library outside ONNX Runtime; pass a .onnx written by "
                    "mobile-export export"
                )
        for t in graph.initializer:
            _check_tensor(t, shown, folder)
    inits = {i.name for i in model.graph.initializer}
    check_interface(
        [_value_info(v) for v in model.graph.input if v.name not in inits],
        [_value_info(v) for v in model.graph.output],
        shown,
    )


def _check_tensor(t, shown: str, folder: Path) -> None:
    import math

    from .. import MAX_ARTIFACT_BYTES

    declared = tensor_bytes(t.data_type, math.prod(t.dims)) if all(d >= 0 for d in t.dims) else -1
    if declared < 0 or declared > MAX_ARTIFACT_BYTES:
        raise ArtifactLoadError(
            f"{shown}: tensor '{t.name}' declares shape {list(t.dims)} "
            f"({declared:,} bytes), beyond any ALBERT export; the file is not a sound export"
        )
    from onnx import TensorProto

    if t.data_location != TensorProto.EXTERNAL:
        if t.HasField("raw_data") and len(t.raw_data) != declared:
            raise ArtifactLoadError(
                f"{shown}: tensor '{t.name}' holds {len(t.raw_data):,} bytes for shape "
                f"{list(t.dims)} ({declared:,}); the file is damaged"
            )
        return
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location", "")
    target = (folder / location).resolve()
    if not location or Path(location).is_absolute() or not target.is_relative_to(folder):
        raise ArtifactLoadError(
            f"{shown}: tensor '{t.name}' points at external data '{location}' outside the "
            "artifact's folder; refused (keep model.onnx.data beside model.onnx)"
        )
    if not target.is_file():
        raise ArtifactLoadError(f"{shown}: its weights file {location} is missing; copy it beside {shown}")
    offset, length = int(info.get("offset", 0)), int(info.get("length", declared))
    if length != declared or offset < 0 or offset + length > target.stat().st_size:
        raise ArtifactLoadError(
            f"{shown}: tensor '{t.name}' reads bytes {offset:,}..{offset + length:,} of "
            f"{location} ({target.stat().st_size:,} bytes, {declared:,} declared): "
            "the weights file is truncated or from another export"
        )


def check_interface(names_types: list[tuple[str, str, int]], outputs: list[tuple[str, str, int]], shown: str) -> None:
    """Inputs (name, element type, rank) must be an export's int64 [batch, seq] tensors (its family's: a prefix
    of ``INPUT_NAMES``) and the outputs float tensors of rank 2 or more (the top-k head's ``INTEGER_OUTPUTS``:
    int64)."""
    names = [n for n in INPUT_NAMES if n in {m for m, _, _ in names_types}]
    want = [(n, "int64", 2) for n in names]
    if not is_signature(names) or sorted(names_types) != sorted(want):
        found = ", ".join(f"{n} ({t}, rank {r})" for n, t, r in names_types) or "no inputs"
        raise not_an_export(shown, f"its inputs are {found}")
    if not outputs or any(t != ("int64" if n in INTEGER_OUTPUTS else "float") or r < 2 for n, t, r in outputs):
        found = ", ".join(f"{n} ({t}, rank {r})" for n, t, r in outputs) or "no outputs"
        raise not_an_export(shown, f"its outputs are {found}")


def _value_info(v) -> tuple[str, str, int]:
    import onnx

    tt = v.type.tensor_type
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).name if tt.elem_type else "unknown"
    return v.name, {"float32": "float"}.get(dtype, dtype), len(tt.shape.dim) if tt.HasField("shape") else -1
