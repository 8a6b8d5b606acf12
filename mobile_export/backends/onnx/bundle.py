"""Strings an .onnx carries in its model metadata (``metadata_props``), which ONNX Runtime hands to an app:
Python ``InferenceSession.get_modelmeta().custom_metadata_map``, Java
``OrtSession.getMetadata().getCustomMetadata()``. Only the graph file is rewritten: the weights stay in the
data file beside it, untouched."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import ArtifactLoadError
from ...core.fsutil import write_bytes

MAX_GRAPH_BYTES = 512 * 1024**2  # the graph file (weights live in the data file): far above any export's


def bundle(path: Path, values: dict[str, str]) -> None:
    """Rewrite the .onnx at ``path`` with one metadata entry per entry of ``values`` (key -> string)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    taken = {p.key for p in model.metadata_props}
    for key, text in values.items():
        if key in taken:
            raise ValueError(f"{path.name} already has metadata {key}")
        entry = model.metadata_props.add()
        entry.key, entry.value = key, text
    write_bytes(path, model.SerializeToString())


def bundled(path: Path) -> dict[str, str]:
    """The model metadata of the .onnx at ``path`` (its graph file only), its size bounded before it is parsed."""
    import onnx

    size = path.stat().st_size
    if size > MAX_GRAPH_BYTES:
        raise ArtifactLoadError(f"{path.name} is {size:,} B, over the {MAX_GRAPH_BYTES:,}-byte limit of a graph file")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(path.read_bytes())
    except Exception as exc:  # protobuf's DecodeError, or a RecursionError on a crafted nesting
        raise ArtifactLoadError(f"{path.name} is not a readable ONNX model ({type(exc).__name__})") from None
    return {p.key: p.value for p in model.metadata_props}
