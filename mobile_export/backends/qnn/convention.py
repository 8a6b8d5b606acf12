"""How an app loads and calls the NPU file, recorded in the manifest."""

from __future__ import annotations

from typing import Any

from ...core.signature import INPUT_NAMES
from .socs import SIMULATED, SOCS, Soc
from ..base import ExportStats


def usage(stats: ExportStats) -> dict[str, Any]:
    """How an app loads and calls this export's .qnn.onnx (recorded in manifest.json)."""
    qnn = stats.get("qnn", {})
    length = qnn.get("sequence_length")
    return {
        "load": "ONNX Runtime with the QNN execution provider and the HTP backend (Android: SessionOptions.addQnn "
        "with backend_path libQnnHtp.so); where a phone has no HTP, the CPU model.onnx instead",
        "calling_convention": {
            "name": "fixed-length/1",
            "inputs": stats.get("inputs", list(INPUT_NAMES)),
            "shape": [1, length],
            "loop": f"right-pad every input to {length} tokens (id 0, attention_mask 0); read the first n "
            f"positions of per-token outputs ({', '.join(qnn.get('per_token_outputs', [])) or 'none'})",
            **(
                {
                    "lengths": qnn["lengths"],
                    "graphs": "the file's graph takes the longest; each shorter one is stored in its metadata "
                    "entry mobile_export.qnn.graphs (length -> base64 of a zlib-compressed GraphProto without the "
                    "weights it shares): its model is that graph with the file's initializers it reads; run a text "
                    "in the shortest length it fits, padded to that length",
                }
                if len(qnn.get("lengths") or []) > 1
                else {}
            ),
        },
        "provider_options": _provider_options(SIMULATED),
        "session_config": {"session.disable_cpu_ep_fallback": "1"},
        "checked_on": f"QNN HTP simulator as {SIMULATED.name} (soc_model {SIMULATED.soc_model}, v{SIMULATED.htp_arch})",
        # --soc: the same model compiled for each SoC, loaded with that SoC's provider options, no compile on device
        "precompiled": [
            {"soc": e["soc"], "file": e["file"], "provider_options": _provider_options(SOCS[e["soc"]])}
            for e in stats.get("precompiled", [])
        ],
    }


def _provider_options(soc: Soc) -> dict[str, str]:
    """The QNN provider options an app passes for ``soc``'s HTP."""
    return {"backend_path": "libQnnHtp.so", "soc_model": soc.soc_model, "htp_arch": soc.htp_arch}
