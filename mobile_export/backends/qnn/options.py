"""What only the NPU file's export reads: its activation precision and the texts it calibrates on."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.choices import QNN_ACTIVATION_BITS
from ...core.errors import BadInputError
from ...core.socs import parse_socs


@dataclass(frozen=True)
class QnnOptions:
    """The .qnn.onnx's own export options (built from the export options of the same names).

    Args:
        qnn_activations: bits of the static activations (``--qnn-activations``): 16 (w8a16, Qualcomm's
            default for transformers) or 8 (w8a8: half the activation traffic; attention's mask and softmax
            lose more).
        calibration: the text file the activation ranges are calibrated on (``--calibration``); None: the
            demo corpus' training split. The texts reach the lowering as ``Plan.calibration``.
        soc: SoCs to precompile the checked file for (``--soc SM8650,SM8750``: ``precompile``), comma-separated;
            None: only the portable QDQ model.
    """

    qnn_activations: int = 16
    calibration: str | None = None
    soc: str | None = None

    def __post_init__(self) -> None:
        parse_socs(self.soc.split(",") if self.soc else ())
        if self.qnn_activations not in QNN_ACTIVATION_BITS:
            choices = " or ".join(map(str, QNN_ACTIVATION_BITS))
            raise BadInputError(f"--qnn-activations {self.qnn_activations} is not offered; pass {choices}")
