"""Whether a user's .qnn.onnx is an NPU file this tool wrote, before any runtime reads it."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import ArtifactLoadError
from ..onnx.validation import check as check_onnx


def check(path: Path, shown: str) -> None:
    """An .onnx export's checks (structure, tensors, interface), a precompiled file's SoC and its context binary
    loading without a crash, then the fixed length the export records."""
    import onnx

    from .metadata import facts
    from .probe import check_loads
    from .refusal import check_named_soc

    check_onnx(path, shown)
    model = onnx.load(str(path), load_external_data=False)
    recorded = facts(model)
    check_named_soc(path, recorded, shown)
    length = recorded.get("sequence_length")
    if not isinstance(length, int) or length < 2:
        raise ArtifactLoadError(
            f"{shown} records no fixed sequence length (it is not an NPU file of mobile-export); "
            "export it again with --backend qnn"
        )
    if any(n.op_type == "EPContext" for n in model.graph.node):
        check_loads(path, shown)
