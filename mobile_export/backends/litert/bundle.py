"""Strings a .tflite carries as named metadata entries of its flatbuffer (LiteRT's ``Model.metadata``; an app reads
them with the flatbuffer schema, the interpreter ignores them)."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import ArtifactLoadError
from ...core.fsutil import write_bytes
from . import flatbuffer
from .metadata import META_KEY

MAX_FILE_BYTES = 2 * 1024**3  # a flatbuffer's limit; every weight is inside it


def bundle(path: Path, values: dict[str, str]) -> None:
    """Rewrite the .tflite at ``path`` with one metadata entry per entry of ``values`` (key -> string)."""
    model = flatbuffer.read(path.read_bytes(), path.name)
    for key, text in values.items():
        flatbuffer.add_entry(model, key, text.encode("utf-8"))
    write_bytes(path, flatbuffer.write(model))


def bundled(path: Path) -> dict[str, str]:
    """The metadata entries of the .tflite at ``path`` that are ours, as strings (MediaPipe's are binary)."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ArtifactLoadError(f"{path.name} is {size:,} B, over the {MAX_FILE_BYTES:,}-byte limit of a .tflite")
    found = {}
    for key, raw in flatbuffer.stored_entries(path.read_bytes(), path.name).items():
        if key == META_KEY or key.startswith("mobile_export"):
            try:
                found[key] = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ArtifactLoadError(f"{path.name}: metadata {key} is not text; export it again") from None
    return found
