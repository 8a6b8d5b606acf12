"""A user's NPU file that the HTP will not take, refused in one line that names why: nodes QNN's provider would leave
to the CPU (which the HTP sessions forbid), a context binary QNN cannot read (damaged, or not QNN's), a precompiled
file whose name and record name different SoCs (an app picks the file by its name)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...core.errors import ArtifactLoadError, first_line
from .socs import SOCS

_UNSUPPORTED = re.compile(r"Unsupported nodes in QNN EP:(.*)")
_NODE_TYPE = re.compile(r"type:\s*([A-Za-z0-9_]+)")
_NAMED_SOC = re.compile(r"^model\.([A-Za-z0-9]+)\.qnn\.onnx$")


def why_not(shown: str, exc: BaseException, log: list[str]) -> ArtifactLoadError:
    """The one-line refusal of ``shown``, whose HTP session failed with ``exc`` after ONNX Runtime logged ``log``."""
    said = str(exc)
    unsupported = sorted({t for line in log for m in _UNSUPPORTED.finditer(line) for t in _NODE_TYPE.findall(m[1])})
    if unsupported or "fallback to CPU EP has been explicitly disabled" in said:
        ops = f" ({', '.join(unsupported)})" if unsupported else ""
        return ArtifactLoadError(
            f"{shown} has nodes the HTP does not take{ops}: QNN's provider would leave them to the CPU; "
            "export it again with --backend qnn"
        )
    if "EpContext" in said or "ContextBinary" in said or "FROM_BINARY" in said:
        code = re.search(r"QNN_[A-Z_]+", said)
        return ArtifactLoadError(
            f"{shown}'s QNN context binary does not load on the HTP ({code[0] if code else first_line(exc, 120)}): "
            "damaged, or not written by this QNN SDK; export it again with --soc"
        )
    return ArtifactLoadError(f"{shown} does not load on the HTP: {first_line(exc, 200)}")


def check_named_soc(path: Path, recorded: dict[str, Any], shown: str) -> None:
    """ArtifactLoadError when a precompiled file's name (``model.<SoC>.qnn.onnx``) names another SoC than the one
    it records being compiled for, or records none (a QDQ model renamed)."""
    compiled = recorded.get("compiled_for")
    named = _NAMED_SOC.match(Path(path).name)
    name_soc = named[1].upper() if named and named[1].upper() in SOCS else None
    if compiled is None and name_soc is None:
        return
    if compiled is None:
        raise ArtifactLoadError(
            f"{shown} is named for {name_soc} but records no SoC it was compiled for (a QDQ model renamed?); "
            f"export it again with --soc {name_soc}"
        )
    if name_soc is not None and str(compiled).upper() != name_soc:
        raise ArtifactLoadError(
            f"{shown} is compiled for {compiled}, not the {name_soc} its name says (an app picks the file by its "
            f"SoC's name); export it again with --soc {name_soc}"
        )
